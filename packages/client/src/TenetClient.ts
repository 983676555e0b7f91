/**
 * The typed Tenet client, derived from the shared contract: every endpoint, field and error
 * is typed and cannot drift from the server. It carries the caller's token in the header the
 * API wants, fills the `token` / `tenant_id` body fields the spec requires on tenant creates
 * from the tenant session, names every POST and DELETE with a fresh `Idempotency-Key`, and
 * retries every call that is safe to send again after a connection failure, a 503 or a 429
 * (`RetryPolicy`: capped exponential backoff with jitter, `Retry-After` honoured, a budget).
 */
import { FetchHttpClient, Headers, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import type { HttpClientError, HttpClientResponse } from "@effect/platform"
import { Api, Errors, InputProblems, Security } from "@tenet/core"
import type { ParseResult } from "effect"
import { Context, Duration, Effect, Layer, Option, Schema, SchemaAST } from "effect"
import * as RetryPolicy from "./RetryPolicy.js"

export interface Options {
  /** Where the server is, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string
  /** Sent as `X-Admin-Token` on every request. */
  readonly adminToken?: string
  /** Sent as `X-Auth-Token` (and `X-API-Token`, which tenant logout names) on every request. */
  readonly tenantToken?: string
  /**
   * The tenant the token belongs to. The `token` and `tenant_id` fields that tenant creates
   * carry in their bodies are filled in from `tenantToken` and this when left out.
   */
  readonly tenantId?: string
  /**
   * How calls are retried after a connection failure, a 503 or a 429 (`RetryPolicy`: how many
   * times, the backoff's base and cap, the budget of waiting per call); `false` turns retries
   * off. Every call is retried but PATCH, a pod restart and a token rotation: a POST or DELETE
   * is retried with the `Idempotency-Key` it was first sent with, so the server does it at most
   * once.
   */
  readonly retry?: Partial<RetryPolicy.RetryPolicy> | false
}

const headersOf = (options: Options): Record<string, string> => ({
  ...(options.adminToken === undefined ? {} : { "x-admin-token": options.adminToken }),
  ...(options.tenantToken === undefined
    ? {}
    : { "x-auth-token": options.tenantToken, "x-api-token": options.tenantToken })
})

const IDEMPOTENCY_KEY = "idempotency-key"

/** Each POST and DELETE gets a key of its own, once: its retries carry the same one. */
const withIdempotencyKey = (request: HttpClientRequest.HttpClientRequest) =>
  (request.method === "POST" || request.method === "DELETE") && request.headers[IDEMPOTENCY_KEY] === undefined
    ? HttpClientRequest.setHeader(request, IDEMPOTENCY_KEY, crypto.randomUUID())
    : request

/**
 * Whether a call may be sent again after a lost answer. A PATCH is not (a later patch may have
 * landed in between); a restart would restart again, and a rotation that went through has
 * already revoked the token the retry would carry.
 */
const safeToRetry = (request: HttpClientRequest.HttpClientRequest) => {
  if (request.method === "PATCH") return false
  if (request.method !== "POST") return true
  const path = new URL(request.url).pathname
  return !path.endsWith("/restart") && !path.endsWith("/rotate-token")
}

/** A response worth another attempt: the server, or what is in front of it, asks for one. */
const answersRetry = (response: HttpClientResponse.HttpClientResponse) =>
  response.status === 503 || response.status === 429

/** A failure worth another attempt: the request never got an answer (refused, reset, cut). */
const transportFailure = (error: HttpClientError.HttpClientError) =>
  error._tag === "RequestError" && error.reason === "Transport"

/** Sends again, per `policy`, a call that can safely run twice when it met a 503, a 429 or a connection failure. */
const retrySafely = (policy: RetryPolicy.Resolved) =>
  HttpClient.transform<HttpClientError.HttpClientError, never, HttpClientError.HttpClientError, never>(
    (effect, request) => {
      if (policy.times === 0 || !safeToRetry(request)) return effect
      const attempt = (
        retry: number,
        waited: number
      ): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> =>
        Effect.matchEffect(effect, {
          onFailure: (error) =>
            transportFailure(error) ? again(retry, waited, undefined, Effect.fail(error)) : Effect.fail(error),
          onSuccess: (response) =>
            answersRetry(response)
              ? again(
                retry,
                waited,
                RetryPolicy.parseRetryAfter(response.headers["retry-after"], Date.now()),
                Effect.succeed(response)
              )
              : Effect.succeed(response)
        })
      const again = <A, E>(
        retry: number,
        waited: number,
        retryAfter: number | undefined,
        giveUp: Effect.Effect<A, E>
      ) => {
        const wait = RetryPolicy.delay(policy, retry, waited, retryAfter, Math.random())
        return wait === undefined
          ? giveUp
          : Effect.zipRight(Effect.sleep(Duration.millis(wait)), attempt(retry + 1, waited + wait))
      }
      return attempt(0, 0)
    }
  )

/** Which of the session's fields (`token`, `tenant_id`) each endpoint's body carries. */
const sessionFields: ReadonlyMap<string, ReadonlyArray<"token" | "tenant_id">> = new Map(
  Object.entries(Api.Payloads).map(([key, schema]) => {
    // A body's schema checks the whole body first (`JsonBody.guarded`); its fields are its surrogate's.
    const struct = Option.getOrElse(SchemaAST.getSurrogateAnnotation(schema.ast), () => schema.ast)
    const names = SchemaAST.getPropertySignatures(SchemaAST.encodedAST(struct)).map((p) => p.name)
    return [key, (["token", "tenant_id"] as const).filter((f) => names.includes(f))] as const
  })
)

/** A payload with the session's fields optional. */
type SessionFields<P> = P extends object ?
  Omit<P, "token" | "tenant_id"> & Partial<Pick<P, keyof P & ("token" | "tenant_id")>>
  : P

/** A call's result without the raw response (the contract's `withResponse` variant is not offered). */
type Plain<A> = Exclude<A, readonly [unknown, HttpClientResponse.HttpClientResponse]>

/** `urlParams` (and `headers`) may be left out when every one of them may. */
type OptionalUrlParams<Request> = OptionalHeaders<
  Request extends { readonly urlParams: infer U }
    ? {} extends U ? Omit<Request, "urlParams"> & { readonly urlParams?: U } : Request
    : Request
>

type OptionalHeaders<Request> = Request extends { readonly headers: infer H }
  ? {} extends H ? Omit<Request, "headers"> & { readonly headers?: H } : Request
  : Request

type Relax<Request, Key> = Request extends { readonly payload: unknown } ?
    & Omit<OptionalUrlParams<Request>, "payload" | "withResponse">
    & {
      readonly payload: Key extends Api.PayloadKey ? SessionFields<Schema.Schema.Encoded<Api.Payloads[Key]>> : never
    }
  : Request extends object ? Omit<OptionalUrlParams<Request>, "withResponse">
  : Request

/**
 * A change that takes `dry_run` (rule changes, topology posts), typed by it: with
 * `urlParams: { dry_run: true }` it answers the change's impact `I`, otherwise what it made.
 */
export interface DryRunnable<Request, A, I, E, R> {
  (request: Request & { readonly urlParams: { readonly dry_run: true } }): Effect.Effect<I, E, R>
  (request: Request & { readonly urlParams?: { readonly dry_run?: false | undefined } }): Effect.Effect<A, E, R>
}

/** The member of an answer that is a dry run's impact. */
type ImpactOf<A> = Extract<A, { readonly dry_run: true }>

type Endpoint<F, Key> = F extends (...args: infer Args) => Effect.Effect<infer A, infer E, infer R>
  ? [ImpactOf<Plain<A>>] extends [never]
    ? (...args: { [K in keyof Args]: Relax<Args[K], Key> }) => Effect.Effect<Plain<A>, E | Errors.InvalidInput, R>
  : DryRunnable<
    Relax<Args[0], Key>,
    Exclude<Plain<A>, ImpactOf<Plain<A>>>,
    ImpactOf<Plain<A>>,
    E | Errors.InvalidInput,
    R
  >
  : F

/** The headers holding tokens are never in a span's attributes; the platform's own redactions kept. */
const redactTokens = HttpClient.transform<
  HttpClientError.HttpClientError,
  never,
  HttpClientError.HttpClientError,
  never
>((effect) =>
  Effect.locallyWith(effect, Headers.currentRedactedNames, (names) => [...names, ...Security.TOKEN_HEADERS])
)

/**
 * The client exactly as the contract derives it. Inside a traced effect each request has its
 * `http.client` span and carries its W3C `traceparent`, so the server's spans join the caller's
 * trace (the platform's HttpClient does both).
 */
const contractClient = (options: Options) =>
  HttpApiClient.make(Api.TenetApi, {
    baseUrl: options.baseUrl,
    transformClient: (client) =>
      client.pipe(
        HttpClient.mapRequest((request) =>
          withIdempotencyKey(HttpClientRequest.setHeaders(request, headersOf(options)))
        ),
        retrySafely(options.retry === false ? RetryPolicy.resolve({ times: 0 }) : RetryPolicy.resolve(options.retry)),
        redactTokens
      )
  })

type Raw = Effect.Effect.Success<ReturnType<typeof contractClient>>

/** The client: one object per endpoint group, one function per endpoint. */
export type Client = {
  readonly [G in keyof Raw]: { readonly [E in keyof Raw[G]]: Endpoint<Raw[G][E], `${G & string}.${E & string}`> }
}

/** A client for the whole API; needs an `HttpClient` (see `layer` for one on fetch). */
export const make = (options: Options): Effect.Effect<Client, never, HttpClient.HttpClient> =>
  Effect.map(
    contractClient(options),
    (raw) => withPayloads(raw as RawClient, options)
  )

/** The contract's client as plain records of calls, for wrapping. */
type RawClient = Record<string, Record<string, (request?: unknown) => Effect.Effect<unknown, unknown>>>

/** How each endpoint refuses bad input (`RuleValidation` or `InvalidInput`), as the server does. */
const inputError: ReadonlyMap<string, "RuleValidation" | "InvalidInput"> = new Map(
  Api.inputErrors.map((e) => [e.endpoint, e.error])
)

/** A body refused before it is sent, with the words and the error the server would answer. */
const invalid = (key: string) => (e: ParseResult.ParseError) =>
  Errors.refusal(inputError.get(key) ?? "InvalidInput", InputProblems.fromParseError(e))

/** Url parameters and headers left out, where every one may be: none given. */
const withUrlParams = (request: unknown) =>
  typeof request === "object" && request !== null
    ? { urlParams: {}, headers: {}, ...request }
    : request

/** Each endpoint with a body: the session filled in, then the body decoded as the server would. */
const withPayloads = (raw: RawClient, options: Options): Client => {
  const session: Record<string, string> = {
    ...(options.tenantToken === undefined ? {} : { token: options.tenantToken }),
    ...(options.tenantId === undefined ? {} : { tenant_id: options.tenantId })
  }
  const client = Object.fromEntries(
    Object.entries(raw).map(([group, endpoints]) => [
      group,
      Object.fromEntries(
        Object.entries(endpoints).map(([name, call]) => {
          const key = `${group}.${name}`
          // Callers write bodies as the wire has them (plain strings, defaults left out); each
          // is decoded with the schema the server uses, so bad input fails before it is sent.
          const schema = (Api.Payloads as Record<string, Schema.Schema<unknown, unknown>>)[key]
          if (schema === undefined) return [name, (request?: unknown) => call(withUrlParams(request))]
          const fill = Object.fromEntries(
            (sessionFields.get(key) ?? []).flatMap((f) => session[f] === undefined ? [] : [[f, session[f]]])
          )
          return [name, (request: { readonly payload: unknown }) => {
            const body = typeof request.payload === "object" && request.payload !== null
              ? { ...fill, ...request.payload }
              : request.payload
            return Schema.decodeUnknown(schema)(body).pipe(
              Effect.mapError(invalid(key)),
              Effect.flatMap((payload) => call(withUrlParams({ ...request, payload })))
            )
          }]
        })
      )
    ])
  )
  // Built endpoint by endpoint from the contract's own client: its type is the mapped type
  // `Client`, which no Object.fromEntries can produce.
  // eslint-disable-next-line no-restricted-syntax -- see above
  return client as unknown as Client
}

/** Logs in as the admin and answers a client acting as the admin. */
export const loginAdmin = (
  options: Omit<Options, "adminToken" | "tenantToken" | "tenantId"> & {
    readonly username: string
    readonly password: string
  }
) =>
  Effect.gen(function*() {
    const anonymous = yield* make(options)
    const session = yield* anonymous.adminIdentity.login({
      payload: { username: options.username, password: options.password }
    })
    return yield* make({ ...options, adminToken: session.api_token })
  })

/** Logs in as a tenant and answers a client acting as it, with its session filled into bodies. */
export const loginTenant = (
  options: Omit<Options, "adminToken" | "tenantToken" | "tenantId"> & {
    readonly name: string
    readonly password: string
  }
) =>
  Effect.gen(function*() {
    const anonymous = yield* make(options)
    const session = yield* anonymous.tenantIdentity.login({
      payload: { name: options.name, password: options.password }
    })
    return yield* make({ ...options, tenantToken: session.api_token, tenantId: session.id })
  })

export class TenetClient extends Context.Tag("@tenet/client/TenetClient")<TenetClient, Client>() {}

/** The client as a service, on the platform's fetch. */
export const layer = (options: Options): Layer.Layer<TenetClient> =>
  Layer.effect(TenetClient, make(options)).pipe(Layer.provide(FetchHttpClient.layer))
