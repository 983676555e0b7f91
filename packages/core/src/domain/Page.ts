/**
 * Pages of a list: `limit` (1-1000) items at a time, in a stable order, the next page named by an
 * opaque `page_token` (sent in a `Link: <...>; rel="next"` header, GitHub's convention). The
 * order is each item's key: `[created_at (ms), id]` (oldest first, ties by id), or a rule's `seq`
 * (creation order). A token names the position after the last item of its page, not an index,
 * so items created or deleted between pages never make another item appear twice or be skipped:
 * every item that exists throughout the walk is on exactly one page.
 *
 * A token is bound to the list it came from (its endpoint and filters) and to its caller, and
 * sealed with the server's keyed digest: a token from another list, another caller or edited by
 * hand is refused (400) rather than read.
 */
import { Either, Encoding, Schema } from "effect"
import { intBetween, stringBetween } from "./Common.js"

export const MAX_LIMIT = 1000

/** The query fields every list takes. Neither: the whole list, as it always was. */
export const PageParams = {
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.compose(intBetween(1, MAX_LIMIT)))).annotations({
    description: `At most this many items (1-${MAX_LIMIT}); the next page is in the Link header (rel="next")`
  }),
  page_token: Schema.optional(stringBetween(1, 1024)).annotations({
    description: "The page after the one whose Link header named this token; opaque"
  })
}

// No identifier: a query schema with one is a reference in the OpenAPI document, and its
// parameters would not be listed.
export const PageQuery = Schema.Struct(PageParams)
export type PageQuery = typeof PageQuery.Type

/** An item's place in its list: compared element by element. */
export type Key = ReadonlyArray<string | number>

/** Oldest first, ties by id. */
export const byCreation = (
  item: { readonly created_at: { readonly epochMillis: number }; readonly id: string }
): Key => [
  item.created_at.epochMillis,
  item.id
]

export const compare = (a: Key, b: Key): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!
    const y = b[i]!
    if (x !== y) return x < y ? -1 : 1
  }
  return a.length - b.length
}

/** One page: its items, and the key after which the next starts (none on the last). */
export interface Slice<A> {
  readonly items: ReadonlyArray<A>
  readonly next: Key | undefined
}

/** The `limit` items after `after` in key order (the first ones without it). */
export const slice = <A>(items: ReadonlyArray<A>, keyOf: (item: A) => Key, after: Key | undefined, limit: number) => {
  const keyed = items.map((item) => ({ item, key: keyOf(item) }))
  keyed.sort((a, b) => compare(a.key, b.key))
  const rest = after === undefined ? keyed : keyed.filter(({ key }) => compare(key, after) > 0)
  return fromLookahead(rest.slice(0, limit + 1), limit, (x) => x.key, (x) => x.item)
}

/**
 * A page from up to `limit + 1` items read in key order (a store's `LIMIT n + 1`): the extra one
 * only says there is a next page.
 */
export const fromLookahead = <R, A>(
  rows: ReadonlyArray<R>,
  limit: number,
  keyOf: (row: R) => Key,
  itemOf: (row: R) => A
): Slice<A> => {
  const page = rows.slice(0, limit)
  return {
    items: page.map(itemOf),
    next: rows.length > limit && page.length > 0 ? keyOf(page[page.length - 1]!) : undefined
  }
}

/** What a token says: which list, whose, and where its page starts. */
export interface Cursor {
  /** The endpoint and its filters, e.g. `securityRules.list?vpc_id=...`. */
  readonly list: string
  /** `admin`, or the tenant's id. */
  readonly caller: string
  readonly after: Key
}

const toBase64Url = (text: string) => Encoding.encodeBase64Url(text)

/** A cursor as a token: its JSON in base64url, then its seal (`seal`: the server's keyed digest). */
export const tokenOf = (cursor: Cursor, seal: (text: string) => string): string => {
  const body = JSON.stringify([cursor.list, cursor.caller, cursor.after])
  return `${toBase64Url(body)}.${toBase64Url(seal(body))}`
}

const KeySchema = Schema.Array(Schema.Union(Schema.String, Schema.Number))
const Body = Schema.parseJson(Schema.Tuple(Schema.String, Schema.String, KeySchema))

/** Where the page `token` names starts, if it is a sealed token of this list and caller; why not otherwise. */
export const readToken = (
  token: string,
  expected: { readonly list: string; readonly caller: string },
  seal: (text: string) => string
): Either.Either<Key, string> => {
  const [body64, seal64, ...extra] = token.split(".")
  const refused = Either.left("page_token is not a token this list answered; start again without it")
  if (body64 === undefined || seal64 === undefined || extra.length > 0) return refused
  const decoded = Encoding.decodeBase64UrlString(body64)
  if (Either.isLeft(decoded) || toBase64Url(seal(decoded.right)) !== seal64) return refused
  const body = decoded.right
  return Either.flatMap(
    Either.mapLeft(Schema.decodeUnknownEither(Body)(body), () => "page_token is malformed"),
    ([list, caller, after]) =>
      list === expected.list && caller === expected.caller
        ? Either.right(after)
        : Either.left("page_token belongs to another list or caller; start again without it")
  )
}
