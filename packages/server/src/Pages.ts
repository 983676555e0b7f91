/**
 * Lists a page at a time (`core/domain/Page.ts`): a request with `limit` or `page_token` is
 * answered that page of the list, in key order, with the next page's link in a `Link` header
 * (`<...>; rel="next"`, GitHub's convention; none on the last page); without either, the whole
 * list as it always was. The link is the request's own path and query with the next token, so it
 * keeps every filter. Tokens are sealed with the vault's keyed digest and bound to the list
 * (endpoint and filters) and the caller.
 */
import { HttpServerRequest } from "@effect/platform"
import { Errors, Page, Principal, Vault } from "@tenet/core"
import { Effect, Either, FiberRef, identity, Option } from "effect"
import * as RequestContext from "./RequestContext.js"
import * as ResponseJson from "./ResponseJson.js"

/** Who is asking: the tenant's id, or `admin`. */
const callerKey = Effect.map(
  Effect.serviceOption(Principal.CurrentTenant),
  Option.match({ onNone: () => "admin", onSome: (tenant) => tenant.tenant_id as string })
)

/** A token this list did not answer: 400 on every list (it is the page's input, not a resource's). */
const badToken = (detail: string) =>
  new Errors.InvalidInput({ detail: `page_token: ${detail}`, errors: [{ field: "page_token", message: detail }] })

/** What a page request asks: where to start (none: the first page) and how many. */
export interface Request {
  readonly list: string
  readonly limit: number
  readonly after: Page.Key | undefined
}

/** The list the router matched (`group.endpoint`), which a page's token is bound to. */
const listed = Effect.flatMap(FiberRef.get(RequestContext.Current), (state) =>
  state?.endpoint === undefined
    ? Effect.dieMessage("a page was asked outside a request the contract matched")
    : Effect.succeed(state.endpoint.endpoint))

/**
 * The page `query` asks of the list the request is to (with `filters`, which its tokens are
 * bound to); none when it asks for the whole list.
 */
export const requestOf = (
  query: Page.PageQuery,
  filters: Readonly<Record<string, string>> = {},
  always?: { readonly limit: number }
): Effect.Effect<Option.Option<Request>, Errors.InvalidInput, Vault.Vault> =>
  Effect.gen(function*() {
    if (query.limit === undefined && query.page_token === undefined && always === undefined) return Option.none()
    const endpoint = yield* listed
    const vault = yield* Vault.Vault
    const list = [endpoint, ...Object.entries(filters).map(([k, v]) => `${k}=${v}`)].join("?")
    const limit = query.limit ?? always?.limit ?? Page.MAX_LIMIT
    if (query.page_token === undefined) return Option.some({ list, limit, after: undefined })
    const after = Page.readToken(query.page_token, { list, caller: yield* callerKey }, vault.digest)
    if (Either.isLeft(after)) return yield* Effect.fail(badToken(after.left))
    return Option.some({ list, limit, after: after.right })
  })

/** The `Link` header of a page: the request's URL with the next page's token. */
const linkTo = (request: Request, next: Page.Key | undefined) =>
  Effect.gen(function*() {
    if (next === undefined) return {}
    const url = new URL((yield* HttpServerRequest.HttpServerRequest).url, "http://tenet.invalid")
    const vault = yield* Vault.Vault
    url.searchParams.set("limit", String(request.limit))
    url.searchParams.set(
      "page_token",
      Page.tokenOf({ list: request.list, caller: yield* callerKey, after: next }, vault.digest)
    )
    return { link: `<${url.pathname}${url.search}>; rel="next"` }
  })

/** The page's `Link` header (none on the last page) added to the answer `ResponseJson` made. */
const withLink = (headers: Record<string, string>) =>
  Object.keys(headers).length > 0 ? ResponseJson.withHeaders(headers) : identity

/**
 * A list endpoint's answer, a page of it when asked: `list` gives the whole list (held in memory
 * already: a tenant's state), `answer` writes the items as the endpoint's JSON.
 */
export const paged = <A, E, R, B, E2, R2>(
  query: Page.PageQuery,
  keyOf: (item: A) => Page.Key,
  list: Effect.Effect<ReadonlyArray<A>, E, R>,
  answer: (items: ReadonlyArray<A>) => Effect.Effect<B, E2, R2>,
  filters: Readonly<Record<string, string>> = {}
) =>
  Effect.flatMap(requestOf(query, filters), (request) =>
    Option.match(request, {
      onNone: () => Effect.flatMap(list, answer),
      onSome: (request) =>
        Effect.gen(function*() {
          const page = Page.slice(yield* list, keyOf, request.after, request.limit)
          const headers = yield* linkTo(request, page.next)
          return withLink(headers)(yield* answer(page.items))
        })
    }))

/**
 * An answer that always goes a page at a time (its whole costs too much to answer at once):
 * `read` computes the page the request asks (`always.limit` items when it names no `limit`)
 * and says where the next starts; `answer` writes it, with the next page's `Link`.
 */
export const computed = <A, E, R, B, E2, R2>(
  query: Page.PageQuery,
  filters: Readonly<Record<string, string>>,
  always: { readonly limit: number },
  read: (request: Request) => Effect.Effect<{ readonly page: A; readonly next: Page.Key | undefined }, E, R>,
  answer: (page: A) => Effect.Effect<B, E2, R2>
) =>
  Effect.gen(function*() {
    const request = Option.getOrThrow(yield* requestOf(query, filters, always))
    const { next, page } = yield* read(request)
    const headers = yield* linkTo(request, next)
    return withLink(headers)(yield* answer(page))
  })

/** A page a store read itself (`LIMIT n + 1` from the key): its answer with the `Link` header. */
export const fromStore = <A, E, R, B, E2, R2>(
  request: Request,
  read: Effect.Effect<Page.Slice<A>, E, R>,
  answer: (items: ReadonlyArray<A>) => Effect.Effect<B, E2, R2>
) =>
  Effect.gen(function*() {
    const page = yield* read
    const headers = yield* linkTo(request, page.next)
    return withLink(headers)(yield* answer(page.items))
  })
