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
import { Api, ChangeEvent, Errors, InputProblems, type Pod, Security } from "@tenet/core"
import type { ParseResult } from "effect"
import type { Cause } from "effect"
import { Chunk, Context, Duration, Effect, Either, Layer, Option, Schema, SchemaAST, Stream } from "effect"
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

/** A request every field of which may be left out may itself be left out (a list's page fields). */
type Arguments<Args extends ReadonlyArray<unknown>, Key> = Args extends readonly [infer Request]
  ? {} extends Relax<Request, Key> ? [request?: Relax<Request, Key>] : [request: Relax<Request, Key>]
  : { [K in keyof Args]: Relax<Args[K], Key> }

type Endpoint<F, Key> = F extends (...args: infer Args) => Effect.Effect<infer A, infer E, infer R>
  ? [ImpactOf<Plain<A>>] extends [never]
    ? (...args: Arguments<Args, Key>) => Effect.Effect<Plain<A>, E | Errors.InvalidInput, R>
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

/** The endpoints: one object per endpoint group, one function per endpoint. */
export type Endpoints = {
  readonly [G in keyof Raw]: { readonly [E in keyof Raw[G]]: Endpoint<Raw[G][E], `${G & string}.${E & string}`> }
}

/** Whether an endpoint's request takes a page (`limit`, `page_token`: the contract's `PageQuery`). */
type TakesPages<F> = F extends (...args: infer Args) => unknown
  ? NonNullable<Args[0]> extends { readonly urlParams?: infer Query } ?
    "page_token" extends keyof NonNullable<Query> ? true
    : false
  : false
  : false

/**
 * The lists that go a page at a time, as `group.endpoint`: every endpoint whose query the
 * contract declares with `page_token`, read from the contract's types.
 */
export type ListKey = {
  readonly [G in keyof Endpoints & string]: {
    readonly [E in keyof Endpoints[G] & string]: TakesPages<Endpoints[G][E]> extends true ? `${G}.${E}` : never
  }[keyof Endpoints[G] & string]
}[keyof Endpoints & string]

/** The same lists, read from the contract itself. */
export const LISTS: ReadonlyArray<ListKey> = Api.endpoints.filter((e) => e.query.includes("page_token")).map((e) =>
  e.endpoint as ListKey
)

type Call<K extends ListKey> = K extends `${infer G}.${infer E}`
  ? G extends keyof Endpoints ? E extends keyof Endpoints[G] ? Endpoints[G][E] : never : never
  : never

/** What a list's call takes, its page fields aside. */
export type ListRequest<K extends ListKey> = Call<K> extends (...args: infer Args) => unknown ? Args[0] : never

type Answer<K extends ListKey> = Call<K> extends
  (...args: ReadonlyArray<never>) => Effect.Effect<infer A, infer _E, infer _R> ? A
  : never

/** An item of a list: the array's, a rule list's `rules`, or a reachability matrix's `pairs`. */
export type ListItem<K extends ListKey> = Answer<K> extends ReadonlyArray<infer I> ? I
  : Answer<K> extends { readonly rules: ReadonlyArray<infer I> } ? I
  : Answer<K> extends { readonly pairs: ReadonlyArray<infer I> } ? I
  : never

/** The items of a list's answer, as `ListItem` finds them. */
const itemsOf = (body: unknown): ReadonlyArray<unknown> =>
  Array.isArray(body)
    ? body
    : (body as { readonly rules?: ReadonlyArray<unknown>; readonly pairs?: ReadonlyArray<unknown> }).rules ??
      (body as { readonly pairs: ReadonlyArray<unknown> }).pairs

export type ListError<K extends ListKey> = Call<K> extends
  (...args: ReadonlyArray<never>) => Effect.Effect<infer _A, infer E, infer _R> ? E
  : never

/** One page of a list, and the token of the next (none on the last). */
export interface ListPage<A> {
  readonly items: ReadonlyArray<A>
  readonly next_page_token: string | undefined
}

/** Lists a page at a time, following the server's `Link: <...>; rel="next"`. */
export interface Pages {
  /** One page: `limit` items (the server's 1000 when left out) from `page_token` (the first page without it). */
  readonly page: <K extends ListKey>(
    list: K,
    request?: ListRequest<K>,
    page?: { readonly limit?: number; readonly page_token?: string | undefined }
  ) => Effect.Effect<ListPage<ListItem<K>>, ListError<K>>
  /** Every item, page after page as the stream is read (`limit` per page, 100 by default). */
  readonly stream: <K extends ListKey>(
    list: K,
    request?: ListRequest<K>,
    options?: { readonly limit?: number }
  ) => Stream.Stream<ListItem<K>, ListError<K>>
}

/** What a watch sends: a change, or a bookmark (how far a quiet stream has got). */
export type WatchItem = ChangeEvent.WatchEvent | ChangeEvent.Bookmark

/** The failures of a watch: what the server answers instead of a stream. */
export type WatchError = Errors.Gone | Errors.Unauthorized | Errors.InvalidInput | Errors.ServiceUnavailable

/** The change stream (`GET /watch`) and what waits on it. */
export interface Watching {
  /**
   * The changes the caller may see, as they are committed (a tenant's own; the admin's every
   * tenant's), after `since` (a revision; from now without it), bookmarks among them. A dropped
   * connection or a server going away is resumed from the last revision, so each change comes
   * once; `Errors.Gone` when the revision is no longer kept (list again, then watch anew).
   */
  readonly watch: (options?: { readonly since?: string }) => Stream.Stream<WatchItem, WatchError>
  /**
   * Waits until the VPC a rule belongs to is applied with its rules (its `applied`), reading it
   * once the watch has started and again on each change to the VPC. Fails with
   * `Cause.TimeoutException` after `timeout` (default 60 s).
   */
  readonly waitUntilApplied: (
    rule: { readonly vpc_id: string },
    options?: { readonly timeout?: Duration.DurationInput }
  ) => Effect.Effect<void, WatchError | ListError<"securityRules.list"> | Cause.TimeoutException>
  /**
   * Waits until a pod's status is `running`: its status is the cluster's, not the store's, so it
   * is read again on each change to the pod and every second. Fails with `Errors.NotFound` when
   * the pod is deleted meanwhile, `Cause.TimeoutException` after `timeout` (default 120 s).
   */
  readonly waitUntilRunning: (
    pod: { readonly id: string },
    options?: { readonly timeout?: Duration.DurationInput }
  ) => Effect.Effect<Pod.Pod, WatchError | Errors.NotFound | ListError<"pods.list"> | Cause.TimeoutException>
}

/** The client: one object per endpoint group, one function per endpoint, `pages` for lists, and the change stream. */
export type Client = Endpoints & { readonly pages: Pages } & Watching

/** Server-Sent Events text, as frames: each blank-line-ended block's `data:` lines joined. */
const sseFrames = <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<string, E, R> =>
  text.pipe(
    Stream.splitLines,
    Stream.mapAccum([] as ReadonlyArray<string>, (data, line) => {
      if (line === "") return [[], data.length === 0 ? Option.none<string>() : Option.some(data.join("\n"))] as const
      return [line.startsWith("data:") ? [...data, line.slice(5).trimStart()] : data, Option.none<string>()] as const
    }),
    Stream.filterMap((frame) => frame)
  )

const decodeItem = Schema.decodeUnknown(Schema.parseJson(ChangeEvent.StreamEvent))

/** A refusal of `GET /watch` (its status and JSON body) as the contract's error. */
const watchRefusal = (status: number, body: unknown): WatchError => {
  const given = typeof body === "object" && body !== null ? (body as { readonly detail?: unknown }).detail : undefined
  const detail = typeof given === "string" ? given : ""
  return status === 410
    ? new Errors.Gone({ detail })
    : status === 401
    ? new Errors.Unauthorized({ detail })
    : status === 400
    ? Option.getOrElse(
      Schema.decodeUnknownOption(Errors.InvalidInput.Wire)(body),
      () => new Errors.InvalidInput({ detail, errors: [] })
    )
    : new Errors.ServiceUnavailable({ detail: `the change stream answered ${status}: ${detail}` })
}

const watchingOf = (http: HttpClient.HttpClient, options: Options, endpoints: Endpoints): Watching => {
  const policy = options.retry === false ? RetryPolicy.resolve({ times: 0 }) : RetryPolicy.resolve(options.retry)
  /** One connection from `since`: its items, until the server ends it. */
  const connect = (since: string | undefined) =>
    Stream.unwrapScoped(Effect.gen(function*() {
      const url = new URL("/watch", options.baseUrl)
      if (since !== undefined) url.searchParams.set("since", since)
      const response = yield* http.execute(
        HttpClientRequest.get(url.toString()).pipe(
          HttpClientRequest.setHeaders({ ...headersOf(options), accept: "text/event-stream" })
        )
      ).pipe(Effect.mapError((e) => new Errors.ServiceUnavailable({ detail: e.message })))
      if (response.status !== 200) {
        const body = yield* Effect.orElseSucceed(response.json, () => ({}))
        return yield* Effect.fail(watchRefusal(response.status, body))
      }
      return sseFrames(Stream.decodeText(response.stream)).pipe(
        Stream.mapError((e): WatchError => new Errors.ServiceUnavailable({ detail: e.message })),
        Stream.mapEffect((frame) =>
          Effect.flatMap(
            Effect.orDie(decodeItem(frame)),
            (item): Effect.Effect<WatchItem, WatchError> =>
              // The server ended the stream for a reason: its refusal, as the request's would be.
              item.type === "ERROR" ? Effect.fail(watchRefusal(item.status, item)) : Effect.succeed(item)
          )
        )
      )
    }))
  const watch: Watching["watch"] = (given = {}) => {
    let last = given.since
    let failures = 0
    const once = Stream.suspend(() => connect(last)).pipe(
      Stream.tap((item) =>
        Effect.sync(() => {
          last = item.revision
          failures = 0
        })
      )
    )
    // Ended by the server (shutdown) or cut: resumed from the last revision, after a backoff
    // that grows while connections keep failing.
    const pause = Effect.suspend(() =>
      Effect.sleep(Duration.millis(Math.min(policy.cap, policy.base * 2 ** Math.min(failures++, 16))))
    )
    return once.pipe(
      Stream.concat(Stream.drain(Stream.fromEffect(pause))),
      Stream.forever,
      Stream.catchAll((error): Stream.Stream<WatchItem, WatchError> =>
        error._tag === "ServiceUnavailable" && policy.times > 0
          ? Stream.drain(Stream.fromEffect(pause)).pipe(
            Stream.concat(Stream.suspend(() => watch({ ...(last === undefined ? {} : { since: last }) })))
          )
          : Stream.fail(error)
      )
    )
  }

  /** Re-reads `check` once the watch has started, on each item `matters`, and on `every`; the first answer. */
  const waitFor = <A, E>(
    check: Effect.Effect<Option.Option<A>, E>,
    matters: (item: WatchItem) => boolean,
    timeout: Duration.DurationInput,
    every?: Duration.DurationInput
  ) => {
    const items = watch().pipe(Stream.filter((item) => item.type === "BOOKMARK" || matters(item)))
    const triggers = every === undefined
      ? items
      : Stream.merge(items, Stream.tick(every), { haltStrategy: "left" })
    return triggers.pipe(
      Stream.mapEffect(() => check),
      Stream.filterMap((found) => found),
      Stream.runHead,
      Effect.flatMap(Option.match({
        onNone: () => Effect.fail(new Errors.ServiceUnavailable({ detail: "the change stream ended" })),
        onSome: Effect.succeed
      })),
      Effect.timeout(timeout)
    )
  }

  return {
    watch,
    waitUntilApplied: (rule, given = {}) =>
      waitFor(
        Effect.map(
          endpoints.securityRules.list({ urlParams: { vpc_id: rule.vpc_id as never } }),
          (list) => list.applied ? Option.some(undefined) : Option.none()
        ),
        (item) => item.type !== "BOOKMARK" && item.kind === "vpc" && item.id === rule.vpc_id,
        given.timeout ?? Duration.seconds(60)
      ),
    waitUntilRunning: (pod, given = {}) =>
      waitFor(
        Effect.flatMap(endpoints.pods.list(), (pods) => {
          const found = pods.find((p) => p.id === pod.id)
          if (found === undefined) return Effect.fail(new Errors.NotFound({ detail: `pod ${pod.id} not found` }))
          return Effect.succeed(found.status.phase === "running" ? Option.some(found) : Option.none())
        }),
        (item) => item.type !== "BOOKMARK" && item.kind === "pod" && item.id === pod.id,
        given.timeout ?? Duration.seconds(120),
        Duration.seconds(1)
      )
  }
}

/** The `page_token` a `Link` header's `rel="next"` target carries. */
export const nextPageToken = (link: string | undefined): string | undefined => {
  const target = link === undefined ? undefined : /<([^>]*)>\s*;\s*rel="?next"?/.exec(link)?.[1]
  return target === undefined ? undefined : new URL(target, "http://tenet.invalid").searchParams.get("page_token") ??
    undefined
}

/** `pages` over the contract's own calls (with their responses, for the `Link` header). */
const pagesOf = (raw: RawClient): Pages => {
  const page = (
    list: string,
    request: unknown,
    options: { readonly limit?: number; readonly page_token?: string | undefined } = {}
  ) => {
    const [group, endpoint] = list.split(".") as [string, string]
    const given = withUrlParams(request) as { readonly urlParams: Record<string, unknown> }
    const urlParams = {
      ...given.urlParams,
      ...(options.limit === undefined ? {} : { limit: options.limit }),
      ...(options.page_token === undefined ? {} : { page_token: options.page_token })
    }
    return Effect.map(
      checked(list, raw[group]![endpoint]!)({ ...given, urlParams, withResponse: true }) as Effect.Effect<
        readonly [unknown, HttpClientResponse.HttpClientResponse]
      >,
      ([body, response]) => ({
        items: itemsOf(body),
        next_page_token: nextPageToken(response.headers["link"])
      })
    )
  }
  const stream = (list: string, request: unknown, options: { readonly limit?: number } = {}) =>
    Stream.paginateChunkEffect(undefined as string | undefined, (token) =>
      Effect.map(
        page(list, request, { limit: options.limit ?? 100, page_token: token }),
        ({ items, next_page_token }) =>
          [
            Chunk.fromIterable(items),
            next_page_token === undefined ? Option.none() : Option.some(next_page_token)
          ] as const
      ))
  // Each list's call is the contract's own, so its item and error types are the endpoint's:
  // typed per list by `Pages`, which no function over list names can be checked against.
  // eslint-disable-next-line no-restricted-syntax -- see above
  return { page, stream } as unknown as Pages
}

/** A client for the whole API; needs an `HttpClient` (see `layer` for one on fetch). */
export const make = (options: Options): Effect.Effect<Client, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    const contract = yield* contractClient(options)
    const raw = contract as RawClient
    const endpoints = withPayloads(raw, options)
    return { ...endpoints, pages: pagesOf(raw), ...watchingOf(http, options, endpoints) }
  })

/** The contract's client as plain records of calls, for wrapping. */
type RawClient = Record<string, Record<string, (request?: unknown) => Effect.Effect<unknown, unknown>>>

/** Each endpoint of the contract, by `group.endpoint`. */
const contractEndpoints: ReadonlyMap<string, Api.Endpoint> = new Map(Api.endpoints.map((e) => [e.endpoint, e]))

/** A body refused before it is sent, with the words and the error the server would answer. */
const invalid = (key: string) => (e: ParseResult.ParseError) =>
  Errors.refusal(contractEndpoints.get(key)?.error ?? "InvalidInput", InputProblems.fromParseError(e))

/** What the values given for a parameters schema (a query's, headers') have wrong, as the server words it. */
const valueProblems = (schema: Api.Parameters | undefined, given: Readonly<Record<string, unknown>>) => {
  const values = schema === undefined
    ? Either.right(undefined)
    : Schema.encodeUnknownEither(schema, { errors: "all" })(given)
  return Either.isLeft(values) ? InputProblems.fromParameters(values.left) : []
}

/** The entries of a request's part that were given (a value left undefined is left out). */
const givenIn = (part: unknown): ReadonlyArray<readonly [string, unknown]> =>
  typeof part === "object" && part !== null ? Object.entries(part).filter(([, value]) => value !== undefined) : []

/**
 * Query parameters and headers refused before they are sent, as the server refuses them
 * (400): a query parameter the endpoint does not take (a JavaScript caller's `dryrun` would
 * otherwise be dropped on the way, and the change made for real), or a value its schema
 * refuses (an `If-Match` that is no entity-tag).
 */
const parameterRefusal = (
  key: string,
  request: { readonly urlParams?: unknown; readonly headers?: unknown }
): Errors.InvalidInput | undefined => {
  const endpoint = contractEndpoints.get(key)
  if (endpoint === undefined) return undefined
  const query = givenIn(request.urlParams)
  const headers = givenIn(request.headers).filter(([name]) => endpoint.headers.includes(name))
  const problems = [
    ...InputProblems.unknownParameters(query.map(([name]) => [name, 1]), endpoint.query),
    ...valueProblems(endpoint.querySchema, Object.fromEntries(query.filter(([name]) => endpoint.query.includes(name)))),
    ...InputProblems.ofHeaders(valueProblems(endpoint.headersSchema, Object.fromEntries(headers)))
  ]
  return problems.length === 0 ? undefined : new Errors.InvalidInput({
    detail: InputProblems.summary(problems),
    errors: problems
  })
}

/** Url parameters and headers left out, where every one may be: none given (the request too). */
const withUrlParams = (request: unknown) =>
  request === undefined
    ? { urlParams: {}, headers: {} }
    : typeof request === "object" && request !== null
    ? { urlParams: {}, headers: {}, ...request }
    : request

/** The request's query and headers checked as the server would check them, then sent. */
const checked = (key: string, call: (request?: unknown) => Effect.Effect<unknown, unknown>) => (request?: unknown) => {
  const complete = withUrlParams(request)
  const refused = parameterRefusal(key, complete as { readonly urlParams?: unknown; readonly headers?: unknown })
  return refused === undefined ? call(complete) : Effect.fail(refused)
}

/**
 * Each endpoint with its query checked before it is sent, and each with a body with the
 * session filled in, then the body decoded as the server would.
 */
const withPayloads = (raw: RawClient, options: Options): Endpoints => {
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
          const send = checked(key, call)
          // Callers write bodies as the wire has them (plain strings, defaults left out); each
          // is decoded with the schema the server uses, so bad input fails before it is sent.
          const schema = (Api.Payloads as Record<string, Schema.Schema<unknown, unknown>>)[key]
          if (schema === undefined) return [name, send]
          const fill = Object.fromEntries(
            (sessionFields.get(key) ?? []).flatMap((f) => session[f] === undefined ? [] : [[f, session[f]]])
          )
          return [name, (request: { readonly payload: unknown }) => {
            const body = typeof request.payload === "object" && request.payload !== null
              ? { ...fill, ...request.payload }
              : request.payload
            return Schema.decodeUnknown(schema)(body).pipe(
              Effect.mapError(invalid(key)),
              Effect.flatMap((payload) => send({ ...request, payload }))
            )
          }]
        })
      )
    ])
  )
  // Built endpoint by endpoint from the contract's own client: its type is the mapped type
  // `Endpoints`, which no Object.fromEntries can produce.
  // eslint-disable-next-line no-restricted-syntax -- see above
  return client as unknown as Endpoints
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
