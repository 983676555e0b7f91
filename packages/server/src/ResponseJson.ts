/**
 * Answers handlers give the platform ready-made: the endpoint's success as JSON text, which
 * `HttpApiBuilder` passes through as it does any `HttpServerResponse` a handler returns.
 *
 * Records' views are immutable class instances that the read model hands out again while the
 * record is unchanged, so each one's JSON is written once (by the platform's own
 * `Schema.encode`) and kept as bytes; a list is the join of its items' JSON, itself kept while
 * its items are the same. Encoding every view again on
 * every request (what the platform does with a returned value) re-checks every refinement of
 * every field (a UUID pattern per id): measured when this was first built (memory store, 8
 * connections), GET /security-rules of 200 rules served 190-270 req/s that way and 2,000-2,800
 * with views written once.
 */
import { HttpApi, HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Api, Common } from "@tenet/core"
import { Effect, FiberRef, Schema, SchemaAST as AST } from "effect"
import * as RequestContext from "./RequestContext.js"

/** A value's JSON, as the bytes of its UTF-8 text, when the value is of the schema this was made for. */
type Writer = (value: unknown) => Uint8Array

const utf8 = new TextEncoder()
const OPEN = utf8.encode("[")
const COMMA = utf8.encode(",")
const CLOSE = utf8.encode("]")

/** A class instance (a view): its JSON kept with it, since it never changes. */
const isClass = (ast: AST.AST) => AST.isTransformation(ast) && AST.isDeclaration(ast.to)

/** `[`, the items' JSON separated by commas, `]`: copied once into one buffer. */
const joined = (items: ReadonlyArray<Uint8Array>): Uint8Array => {
  const parts = items.flatMap((item, i) => i === 0 ? [item] : [COMMA, item])
  return Buffer.concat([OPEN, ...parts, CLOSE])
}

/**
 * A list's JSON, kept while it holds the very same items: the read model hands out a new
 * array of the same views while nothing changed, and the list is then written once, not per
 * request (keyed by its first item; an empty list is written anew).
 */
const listWriter = (item: Writer): Writer => {
  const lists = new WeakMap<object, { readonly items: ReadonlyArray<unknown>; readonly json: Uint8Array }>()
  return (value) => {
    if (!Array.isArray(value)) return utf8.encode(JSON.stringify(value))
    const first: unknown = value[0]
    const key = typeof first === "object" && first !== null ? first : undefined
    const last = key === undefined ? undefined : lists.get(key)
    if (last !== undefined && last.items.length === value.length && last.items.every((v, i) => v === value[i])) {
      return last.json
    }
    const json = joined(value.map(item))
    if (key !== undefined) lists.set(key, { items: [...value], json })
    return json
  }
}

const writerOf = (ast: AST.AST): Writer => {
  if (AST.isTupleType(ast) && ast.elements.length === 0 && ast.rest.length === 1) {
    return listWriter(writerOf(ast.rest[0]!.type))
  }
  const encode = Schema.encodeSync(Schema.make(ast))
  const write: Writer = (value) => utf8.encode(JSON.stringify(encode(value)))
  if (!isClass(ast)) return write
  const once = Common.oncePerRecord((value: object) => write(value))
  return (value) => typeof value === "object" && value !== null ? once(value) : write(value)
}

/** One kind of success of an endpoint: its status, and how to tell and write its values. */
interface Success {
  readonly status: number
  readonly is: (value: unknown) => boolean
  readonly write: Writer
  readonly contentType: string
}

/** The JSON successes of every endpoint, by `group.endpoint`. */
const successes = new Map<string, ReadonlyArray<Success>>()
HttpApi.reflect(Api.TenetApi, {
  onGroup: () => {},
  onEndpoint: ({ endpoint, group, successes: byStatus }) => {
    const found: Array<Success> = []
    for (const [status, { ast }] of byStatus) {
      if (ast._tag === "None") continue
      const encoding = HttpApiSchema.getEncoding(ast.value)
      if (encoding.kind !== "Json") continue
      for (const member of AST.isUnion(ast.value) ? ast.value.types : [ast.value]) {
        found.push({
          status,
          is: Schema.is(Schema.make(member)),
          write: writerOf(member),
          contentType: encoding.contentType
        })
      }
    }
    successes.set(`${group.identifier}.${endpoint.name}`, found)
  }
})

/** A handler's success turned into the answer the platform would give for it. */
type Respond = (value: unknown) => unknown

const respondOf = (known: ReadonlyArray<Success>): Respond => {
  const single = known.length === 1 ? known[0]! : undefined
  return (value) => {
    const success = single ?? known.find((s) => s.is(value))
    return success === undefined
      ? value
      : HttpServerResponse.uint8Array(success.write(value), {
        status: success.status,
        contentType: success.contentType
      })
  }
}

const responders = new Map([...successes].map(([endpoint, known]) => [endpoint, respondOf(known)]))

/**
 * How `endpoint` (`group.endpoint`) answers a success: a value none of its successes describes
 * is left to the platform, as is a success without a body.
 */
export const forEndpoint = (endpoint: string): Respond => {
  const respond = responders.get(endpoint)
  if (respond === undefined) throw new Error(`the contract has no endpoint ${endpoint}`)
  return respond
}

/**
 * A handler's success, answered as the endpoint the router matched (`RequestContext`) answers
 * it; outside a matched request, left to the platform.
 */
export const answer = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A | HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.flatMap(self, (value) =>
    Effect.map(FiberRef.get(RequestContext.Current), (state) => {
      const respond = state?.endpoint === undefined ? undefined : responders.get(state.endpoint.endpoint)
      return (respond === undefined ? value : respond(value)) as A | HttpServerResponse.HttpServerResponse
    }))

/** The answer (a response `answer` made) with `headers` added, in one copy. */
export const withHeaders =
  (headers: Record<string, string>) => <A>(answer: A | HttpServerResponse.HttpServerResponse) =>
    HttpServerResponse.isServerResponse(answer) ? HttpServerResponse.setHeaders(answer, headers) : answer
