/**
 * Every response is JSON with a `detail`, whatever goes wrong: this API-wide middleware
 * checks bodies before any handler runs (size, content type, JSON syntax) and turns the
 * failures the framework raises (decoding, unknown routes, unreadable bodies) and any
 * defect into the contract's errors.
 */
import type { HttpApp } from "@effect/platform"
import {
  HttpApiBuilder,
  HttpApiError,
  HttpIncomingMessage,
  HttpMethod,
  HttpServerError,
  HttpServerRequest
} from "@effect/platform"
import { Api, Errors } from "@tenet/core"
import { Cause, Effect, Option } from "effect"

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json(?:\s*;.*)?$/i

const checkBody = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) =>
  Effect.gen(function*() {
    if (!HttpMethod.hasBody(request.method)) return
    // Built only when needed: an error captures a stack trace, which every POST paid for.
    const tooLarge = () => new Errors.PayloadTooLarge({ detail: `the request body exceeds ${maxBytes} bytes` })
    const declared = request.headers["content-length"]
    if (declared === undefined && request.headers["transfer-encoding"] !== undefined) {
      return yield* new Errors.LengthRequired({ detail: "send the request body with a Content-Length header" })
    }
    if (declared !== undefined && Number(declared) > maxBytes) return yield* tooLarge()
    const text = yield* request.text.pipe(
      HttpIncomingMessage.withMaxBodySize(Option.some(maxBytes)),
      Effect.mapError((e) =>
        String(e.cause).includes("maxBytes")
          ? tooLarge()
          : new Errors.InvalidInput({ detail: "the request body could not be read" })
      )
    )
    if (text.trim() === "") return
    const contentType = request.headers["content-type"]
    if (contentType !== undefined && !JSON_TYPE.test(contentType.trim())) {
      return yield* new Errors.UnsupportedMediaType({
        detail: `content type '${contentType}' is not supported; send application/json`
      })
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (e) {
      return yield* new Errors.InvalidInput({
        detail: `the request body is not valid JSON: ${e instanceof Error ? e.message : String(e)}`
      })
    }
    // PostgreSQL cannot store U+0000 in text; refusing it everywhere keeps every store alike.
    const nul = fieldWithNul(parsed)
    if (nul !== null) {
      const message = "must not contain the NUL character (U+0000)"
      return yield* request.url.startsWith("/security-rules")
        ? new Errors.RuleValidation({ field: nul, message })
        : new Errors.InvalidInput({ detail: `${nul}: ${message}` })
    }
  })

interface FieldPath {
  readonly key: string
  readonly parent: FieldPath | null
}

const dotted = (path: FieldPath | null): string => {
  const keys: Array<string> = []
  for (let p = path; p !== null; p = p.parent) keys.unshift(p.key)
  return keys.length === 0 ? "body" : keys.join(".")
}

/**
 * The first field (as a dotted path) whose name or string value holds U+0000, if any. A loop
 * over shared path links, not recursion: a body may nest as deep as its size allows.
 */
const fieldWithNul = (body: unknown): string | null => {
  const pending: Array<readonly [unknown, FieldPath | null]> = [[body, null]]
  while (pending.length > 0) {
    const [value, path] = pending.pop()!
    if (typeof value === "string" && value.includes("\u0000")) return dotted(path)
    if (typeof value === "object" && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        if (key.includes("\u0000")) return dotted(path)
        pending.push([item, { key, parent: path }])
      }
    }
  }
  return null
}

type Issue = HttpApiError.HttpApiDecodeError["issues"][number]

const fieldOf = (issue: Issue) => issue.path.length === 0 ? "body" : issue.path.map(String).join(".")

/**
 * Schema failures answer 400 with every problem listed, except in the security-rule
 * endpoints, where the spec asks for 422 naming the offending field.
 */
const decodeFailure = (request: HttpServerRequest.HttpServerRequest, error: HttpApiError.HttpApiDecodeError) => {
  const first = error.issues[0]
  if (request.url.startsWith("/security-rules")) {
    return new Errors.RuleValidation({
      field: first === undefined ? "body" : fieldOf(first),
      message: first?.message ?? error.message
    })
  }
  return new Errors.InvalidInput({
    detail: error.issues.length === 0
      ? error.message
      : error.issues.map((i) => `${fieldOf(i)}: ${i.message}`).join("; ")
  })
}

const guard = (maxBodyBytes: number) => (app: HttpApp.Default): HttpApp.Default<Errors.TenetError> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* checkBody(request, maxBodyBytes)
    return yield* app
  }).pipe(
    Effect.catchAllCause((cause) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        if (Cause.isInterruptedOnly(cause)) return yield* Effect.failCause(cause)
        const error = Cause.squash(cause)
        if (error instanceof HttpApiError.HttpApiDecodeError) return yield* decodeFailure(request, error)
        if (HttpServerError.isServerError(error)) {
          if (error._tag === "RouteNotFound") {
            return yield* new Errors.NotFound({ detail: `no route for ${request.method} ${request.url.split("?")[0]}` })
          }
          if (error._tag === "RequestError") {
            return yield* new Errors.InvalidInput({ detail: "the request could not be read" })
          }
        }
        // Expected failures are the contract's tagged errors; the API encodes them.
        if (!Cause.isDie(cause)) return yield* Effect.failCause(cause)
        yield* Effect.logError("unexpected failure while handling a request", cause)
        return yield* new Errors.InternalError({ detail: "an unexpected error occurred; it has been logged" })
      })
    )
  ) as HttpApp.Default<Errors.TenetError>

export const layer = (options: { readonly maxBodyBytes: number }) =>
  HttpApiBuilder.middleware(
    Api.TenetApi,
    // The API encodes the errors of every endpoint (422 included) at runtime; the middleware's
    // type admits only the API-wide ones, hence the widening.
    (app) => guard(options.maxBodyBytes)(app) as HttpApp.Default<never>
  )
