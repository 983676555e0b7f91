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
import { Api, Common, Cooperative } from "@tenet/core"
import { Effect, FiberRef, identity, Schema, SchemaAST as AST } from "effect"
import * as RequestContext from "./RequestContext.js"

/**
 * A value's JSON as chunks of its UTF-8 text, in order, when the value is of the schema this
 * was made for: a view's JSON is kept as its own chunk, so a list (or a topology) of many is
 * the views' chunks side by side, copied into one buffer once, when the answer is written.
 */
type Json = ReadonlyArray<Uint8Array>
type Writer = (value: unknown) => Json

const utf8 = new TextEncoder()
const OPEN = utf8.encode("[")
const COMMA = utf8.encode(",")
const CLOSE = utf8.encode("]")
const OPEN_OBJECT = utf8.encode("{")
const CLOSE_OBJECT = utf8.encode("}")

/** Chunks being made: small texts run together into one chunk, views' chunks kept as they are. */
class Chunks {
  private readonly out: Array<Uint8Array> = []
  private run: Array<Uint8Array> = []
  text(bytes: Uint8Array): void {
    this.run.push(bytes)
  }
  json(json: Json): void {
    if (json.length === 1 && json[0]!.length < 256) return this.text(json[0]!)
    this.flush()
    for (const chunk of json) this.out.push(chunk)
  }
  done(): Json {
    this.flush()
    return this.out
  }
  private flush(): void {
    if (this.run.length > 0) this.out.push(this.run.length === 1 ? this.run[0]! : Buffer.concat(this.run))
    this.run = []
  }
}

/** An answer's JSON as one buffer: a kept list's buffer is kept with it. */
const joinedJson = new WeakMap<Json, Uint8Array>()
const bytesOf = (json: Json): Uint8Array => {
  if (json.length === 1) return json[0]!
  let bytes = joinedJson.get(json)
  if (bytes === undefined) joinedJson.set(json, bytes = Buffer.concat(json))
  return bytes
}

/** A class instance (a view): its JSON kept with it, since it never changes. */
const isClass = (ast: AST.AST) => AST.isTransformation(ast) && AST.isDeclaration(ast.to)

/**
 * How values of one schema are written: `write` gives a value's JSON; `warm` lists, for a value
 * holding many views, the writing of each view not yet written (its JSON is then kept), so a
 * large answer is written a slice at a time (`Cooperative`) before `write` joins it at once.
 */
interface Writing {
  readonly write: Writer
  readonly warm: (value: unknown, out: Array<() => unknown>) => void
}

const NOTHING_TO_WARM: Writing["warm"] = () => {}

/**
 * A list's JSON, kept while it holds the very same items: the read model hands out a new
 * array of the same views while nothing changed, and the list is then written once, not per
 * request (keyed by its first item; an empty list is written anew).
 */
const listWriting = (item: Writing, ofViews: boolean): Writing => {
  const lists = new WeakMap<object, { readonly items: ReadonlyArray<unknown>; readonly json: Json }>()
  const write: Writer = (value) => {
    if (!Array.isArray(value)) return [utf8.encode(JSON.stringify(value))]
    const first: unknown = value[0]
    const key = typeof first === "object" && first !== null ? first : undefined
    const last = key === undefined ? undefined : lists.get(key)
    if (last !== undefined && last.items.length === value.length && last.items.every((v, i) => v === value[i])) {
      return last.json
    }
    const chunks = new Chunks()
    chunks.text(OPEN)
    value.forEach((v, i) => {
      if (i > 0) chunks.text(COMMA)
      chunks.json(item.write(v))
    })
    chunks.text(CLOSE)
    const json = chunks.done()
    if (key !== undefined) lists.set(key, { items: [...value], json })
    return json
  }
  const warm: Writing["warm"] = (value, out) => {
    if (!ofViews || !Array.isArray(value)) return
    for (const v of value) {
      item.warm(v, out)
      out.push(() => item.write(v))
    }
  }
  return { write, warm }
}

const isList = (ast: AST.AST): ast is AST.TupleType =>
  AST.isTupleType(ast) && ast.elements.length === 0 && ast.rest.length === 1

/** A field holds views: a class, or a list of them. */
const holdsViews = (ast: AST.AST) => isClass(ast) || (isList(ast) && isClass(ast.rest[0]!.type))

/**
 * A class whose fields hold views (a topology's VPCs, their subnets, their pods), written field
 * by field: each view within keeps its own JSON, so a topology of 2,000 pods is the pods' JSON
 * written once, side by side, not 2,000 pods encoded again for every request. None for a class
 * whose fields are not plain (renamed or defaulted ones): it is encoded whole.
 */
const fieldsWriting = (ast: AST.AST): Writing | undefined => {
  if (!AST.isTransformation(ast) || !AST.isTypeLiteral(ast.from)) return undefined
  const literal = ast.from
  if (literal.indexSignatures.length > 0 || !literal.propertySignatures.some((ps) => holdsViews(ps.type))) {
    return undefined
  }
  const fields = literal.propertySignatures.map((ps) => ({
    name: ps.name as string,
    key: utf8.encode(`${JSON.stringify(ps.name)}:`),
    optional: ps.isOptional,
    writing: writingOf(ps.type)
  }))
  const valueOf = (value: unknown, name: string) => (value as Record<string, unknown>)[name]
  return {
    write: (value) => {
      const chunks = new Chunks()
      chunks.text(OPEN_OBJECT)
      let first = true
      for (const field of fields) {
        const v = valueOf(value, field.name)
        if (v === undefined && field.optional) continue
        if (!first) chunks.text(COMMA)
        first = false
        chunks.text(field.key)
        chunks.json(field.writing.write(v))
      }
      chunks.text(CLOSE_OBJECT)
      return chunks.done()
    },
    warm: (value, out) => {
      for (const field of fields) field.writing.warm(valueOf(value, field.name), out)
    }
  }
}

const writingOf = (ast: AST.AST): Writing => {
  if (isList(ast)) return listWriting(writingOf(ast.rest[0]!.type), isClass(ast.rest[0]!.type))
  const encode = Schema.encodeSync(Schema.make(ast))
  const whole: Writer = (value) => [utf8.encode(JSON.stringify(encode(value)))]
  if (!isClass(ast)) return { write: whole, warm: NOTHING_TO_WARM }
  const fields = fieldsWriting(ast)
  const write = fields?.write ?? whole
  const written = new WeakSet<object>()
  const once = Common.oncePerRecord((value: object) => {
    written.add(value)
    return write(value)
  })
  return {
    write: (value) => typeof value === "object" && value !== null ? once(value) : write(value),
    // A view written already has nothing left to write.
    warm: (value, out) => {
      if (fields !== undefined && !(typeof value === "object" && value !== null && written.has(value))) {
        fields.warm(value, out)
      }
    }
  }
}

/** One kind of success of an endpoint: its status, and how to tell and write its values. */
interface Success {
  readonly status: number
  readonly is: (value: unknown) => boolean
  readonly write: (value: unknown) => Uint8Array
  readonly warm: (value: unknown) => ReadonlyArray<() => unknown>
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
        const writing = writingOf(member)
        found.push({
          status,
          is: Schema.is(Schema.make(member)),
          write: (value) => bytesOf(writing.write(value)),
          warm: (value) => {
            const out: Array<() => unknown> = []
            writing.warm(value, out)
            return out
          },
          contentType: encoding.contentType
        })
      }
    }
    successes.set(`${group.identifier}.${endpoint.name}`, found)
  }
})

/** Views left to write in an answer beyond which they are written a slice at a time. */
const AT_ONCE = 64

/** How an endpoint answers a success: the platform's response with its JSON, or the value left to the platform. */
type Respond = (value: unknown) => Effect.Effect<unknown>

const respondOf = (known: ReadonlyArray<Success>): Respond => {
  const single = known.length === 1 ? known[0]! : undefined
  return (value) => {
    const success = single ?? known.find((s) => s.is(value))
    if (success === undefined) return Effect.succeed(value)
    const respond = () =>
      HttpServerResponse.uint8Array(success.write(value), { status: success.status, contentType: success.contentType })
    const left = success.warm(value)
    return left.length <= AT_ONCE
      ? Effect.sync(respond)
      : Effect.map(Cooperative.forEach(left, (writeOne) => (writeOne(), true)), respond)
  }
}

const responders = new Map([...successes].map(([endpoint, known]) => [endpoint, respondOf(known)]))

/**
 * How `endpoint` (`group.endpoint`) answers a success: its views not yet written are written
 * first, a slice at a time when there are many (a topology of thousands of pods holds no other
 * request for long); a value none of its successes describes is left to the platform, as is a
 * success without a body.
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
    Effect.flatMap(FiberRef.get(RequestContext.Current), (state) => {
      const respond = state?.endpoint === undefined ? undefined : responders.get(state.endpoint.endpoint)
      return (respond === undefined ? Effect.succeed(value) : respond(value)) as Effect.Effect<
        A | HttpServerResponse.HttpServerResponse
      >
    }))

/** The answer (a response `answer` made) with `headers` added, in one copy. */
export const withHeaders =
  (headers: Record<string, string>) => <A>(answer: A | HttpServerResponse.HttpServerResponse) =>
    HttpServerResponse.isServerResponse(answer) ? HttpServerResponse.setHeaders(answer, headers) : answer

/**
 * A handler's success answered as `answer` answers it, with the version of the object it
 * answers as its `ETag` header (RFC 9110, 8.8.3), the one `If-Match` takes on the object's next
 * change: a create and a change answer it as a read of the object does. `etagOf` finds it in
 * the value; none, no header (a dry run made nothing).
 */
export const answerWithEtagOf =
  <A>(etagOf: (value: A) => string | undefined) =>
  <E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A | HttpServerResponse.HttpServerResponse, E, R> =>
    Effect.flatMap(self, (value) => {
      const etag = etagOf(value)
      return Effect.map(answer(Effect.succeed(value)), etag === undefined ? identity : withHeaders({ etag }))
    })

/** One object's view as the answer, with its version (its `etag`) as the `ETag` header. */
export const answerWithEtag = <A extends { readonly etag: string }, E, R>(self: Effect.Effect<A, E, R>) =>
  answerWithEtagOf((view: A) => view.etag)(self)
