/**
 * Every refusal is JSON with a `detail`: this API-wide middleware (inside the platform's error
 * encoding, around its router) refuses what the headers alone show to be unacceptable (no
 * Host, a body without a length, too large, or not JSON) before anything reads a body, and
 * turns what the platform fails with (a request that does not decode, no route, an unreadable
 * body) and any defect into the contract's errors, each recognised by its type.
 *
 * Bodies are read once, by the platform, under its own size limit (`MaxBodySize`, `bodyLimit`);
 * the limit cannot be reached, since the declared length is checked first and every body must
 * declare one.
 */
import {
  FileSystem,
  HttpApiBuilder,
  HttpApiError,
  HttpIncomingMessage,
  HttpMethod,
  HttpServerError,
  HttpServerRequest
} from "@effect/platform"
import type { HttpApp } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Api, Errors, InputProblems } from "@tenet/core"
import { Cause, Effect, Either, FiberRef, Layer, Option, Schema } from "effect"
import * as Endpoints from "./Endpoints.js"
import * as IdempotencyKey from "./IdempotencyKey.js"
import * as RequestContext from "./RequestContext.js"

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json(?:\s*;.*)?$/i

/** What the request's headers alone refuse it for. */
const headerRefusal = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) => {
  // HTTP/1.1 requires a Host header (RFC 9112, 3.2).
  if (request.headers.host === undefined && NodeHttpServerRequest.toIncomingMessage(request).httpVersion === "1.1") {
    return Errors.InvalidInput.field("Host", "the header is required in HTTP/1.1")
  }
  if (!HttpMethod.hasBody(request.method)) return undefined
  const declared = request.headers["content-length"]
  if (declared === undefined) {
    return request.headers["transfer-encoding"] === undefined
      ? undefined
      : new Errors.LengthRequired({ detail: "send the request body with a Content-Length header" })
  }
  if (Number(declared) > maxBytes) {
    return new Errors.PayloadTooLarge({ detail: `the request body exceeds ${maxBytes} bytes` })
  }
  const contentType = request.headers["content-type"]
  if (Number(declared) > 0 && contentType !== undefined && !JSON_TYPE.test(contentType.trim())) {
    return new Errors.UnsupportedMediaType({
      detail: `content type '${contentType}' is not supported; send application/json`
    })
  }
  return undefined
}

/** A bad body as the endpoint refuses it (`InvalidInput` outside the contract's endpoints). */
const refusal = (endpoint: Api.Endpoint | undefined, problems: ReadonlyArray<InputProblems.Problem>) =>
  Errors.refusal(endpoint?.error ?? "InvalidInput", problems)

/** A query string as name and values, every value of a repeated name kept. */
const queryOf = (url: string): ReadonlyArray<readonly [string, ReadonlyArray<string>]> => {
  const byName = new Map<string, Array<string>>()
  for (const [name, value] of new URLSearchParams(url.split("?")[1] ?? "")) {
    const values = byName.get(name)
    if (values === undefined) byName.set(name, [value])
    else values.push(value)
  }
  return [...byName]
}

/** Each parameter's problem (path, query or header: texts on the wire) in the API's words (`InputProblems`). */
const parameterProblems = (
  schema: Api.Parameters | undefined,
  params: Readonly<Record<string, string | undefined>>
): ReadonlyArray<InputProblems.Problem> => {
  if (schema === undefined) return []
  const decoded = Schema.decodeUnknownEither(schema, { errors: "all" })(params)
  return Either.isLeft(decoded) ? InputProblems.fromParameters(decoded.left) : []
}

/** What is wrong with the headers the endpoint reads, each named as HTTP writes it. */
const headerProblems = (endpoint: Api.Endpoint | undefined, headers: Readonly<Record<string, string | undefined>>) =>
  InputProblems.ofHeaders(parameterProblems(endpoint?.headersSchema, headers))

/** What is wrong with the query string: parameters the endpoint does not take, or sent twice, and values it refuses. */
const queryProblems = (endpoint: Api.Endpoint | undefined, url: string): ReadonlyArray<InputProblems.Problem> => {
  if (endpoint === undefined) return []
  const query = queryOf(url)
  const names = InputProblems.unknownParameters(query.map(([name, values]) => [name, values.length]), endpoint.query)
  const single = Object.fromEntries(
    query.flatMap(([name, values]) => endpoint.query.includes(name) && values.length === 1 ? [[name, values[0]!]] : [])
  )
  return [...names, ...parameterProblems(endpoint.querySchema, single)]
}

/**
 * A request that does not decode, every problem of its path, query, headers and body named at
 * once (`InputProblems`). A parameter's problem (path, query or header) is 400 on every
 * endpoint: invalid parameters, the spec's 400, whatever the endpoint's body refusals are. A
 * body's is 400, or 422 naming the first field where the endpoint declares `RuleValidation`.
 * The platform stops at the first part that fails and keeps only formatted text, so each part
 * is decoded again here with the endpoint's own schemas to describe it from its parse issue:
 * only ever on this failure path, the body from the text the platform read.
 */
const decodeRefusal = (
  request: HttpServerRequest.HttpServerRequest,
  state: RequestContext.RequestState | undefined,
  error: HttpApiError.HttpApiDecodeError
) =>
  Effect.map(Effect.option(request.json), (body) => {
    const endpoint = state?.endpoint
    const payload = endpoint?.takesBody === true ? Api.Payloads[endpoint.endpoint as Api.PayloadKey] : undefined
    const refused = payload === undefined || Option.isNone(body)
      ? Either.right(undefined)
      : Schema.decodeUnknownEither(payload as Schema.Schema<unknown, unknown>)(body.value)
    const parameters = [
      ...parameterProblems(endpoint?.pathSchema, state?.params ?? {}),
      ...queryProblems(endpoint, request.url),
      ...headerProblems(endpoint, request.headers)
    ]
    const bodyProblems = [
      ...(Either.isLeft(refused) ? InputProblems.fromParseError(refused.left) : []),
      ...(endpoint === undefined || Option.isNone(body) ? [] : Endpoints.unreadBodyProblems(endpoint, body.value))
    ]
    if (parameters.length > 0) return Errors.refusal("InvalidInput", [...parameters, ...bodyProblems])
    const problems = bodyProblems.length > 0 ? bodyProblems : InputProblems.fromFormatted(error.issues)
    return refusal(endpoint, problems.length === 0 ? [{ field: "body", message: error.message }] : problems)
  })

/** The contract's error for a failure or defect, or the cause as it was (interruptions, contract errors). */
const toContractError = (request: HttpServerRequest.HttpServerRequest, cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    if (Cause.isInterruptedOnly(cause)) return yield* Effect.failCause(cause)
    const state = yield* FiberRef.get(RequestContext.Current)
    const error = Cause.squash(cause)
    if (error instanceof HttpApiError.HttpApiDecodeError) {
      return yield* Effect.flip(decodeRefusal(request, state, error))
    }
    if (HttpServerError.isServerError(error)) {
      switch (error._tag) {
        case "RouteNotFound":
          return new Errors.NotFound({ detail: `no route for ${request.method} ${request.url.split("?")[0]}` })
        case "RequestError":
          return error.cause instanceof SyntaxError
            ? Errors.InvalidInput.field("body", `is not valid JSON: ${error.cause.message}`)
            : Errors.InvalidInput.field("body", "could not be read")
      }
    }
    // Expected failures are the contract's tagged errors; the API encodes them.
    if (!Cause.isDie(cause)) return yield* Effect.failCause(cause)
    yield* Effect.logError("unexpected failure while handling a request", cause)
    return new Errors.InternalError({ detail: "an unexpected error occurred; it has been logged" })
  }).pipe(Effect.flatMap(Effect.fail))

const refusing = (maxBytes: number) => (app: HttpApp.Default) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const refused = headerRefusal(request, maxBytes)
    return refused !== undefined
      ? Effect.fail(refused)
      : Effect.catchAllCause(IdempotencyKey.within(request, app), (cause) => toContractError(request, cause))
  }).pipe(
    Effect.tapError((error) => Effect.map(FiberRef.get(RequestContext.Current), (state) => state?.failed(error)))
  )

/** The refusals, and the platform's body size limit for every request of the server it serves. */
export const layer = (options: { readonly maxBodyBytes: number }) =>
  HttpApiBuilder.middleware(
    Api.TenetApi,
    // The API encodes the errors of every endpoint (422 included) and passes on what is not
    // its own; the middleware's type admits only the API-wide errors, hence the widening.
    (app) => refusing(options.maxBodyBytes)(app) as HttpApp.Default<never>
  )

/** The platform's own body size limit, for the server's every request (`HttpApiBuilder.serve`'s layer). */
export const bodyLimit = (options: { readonly maxBodyBytes: number }) =>
  Layer.succeed(HttpIncomingMessage.MaxBodySize, Option.some(FileSystem.Size(options.maxBodyBytes)))
