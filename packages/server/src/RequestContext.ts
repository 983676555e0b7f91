/**
 * The outermost middleware (`HttpApiBuilder.serve`'s): a request id on every log line written
 * while the request is handled and in the `X-Request-Id` header; the request's `RequestState`,
 * which the layers within fill in on the way in and this reads on the way out (one direction);
 * a log line, the HTTP metrics and the audit entry of a request that wrote none per answer;
 * and the requests in flight, which shutdown drains.
 */
import type { HttpApp } from "@effect/platform"
import { Headers, HttpApp as App, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import type { Audit } from "@tenet/core"
import { Api, Audit as AuditTrail, Deprecation, Errors, Security, Store } from "@tenet/core"
import {
  Cause,
  Context,
  Deferred,
  Duration,
  Effect,
  Exit,
  FiberId,
  FiberRef,
  HashMap,
  Layer,
  LogLevel,
  Metric,
  MetricBoundaries,
  MetricLabel,
  Option,
  Schedule,
  Tracer
} from "effect"
import { globalValue } from "effect/GlobalValue"
import { STATUS_CODES } from "node:http"
import type { Socket } from "node:net"
import * as PageSecurity from "./PageSecurity.js"

const HEADER = "x-request-id"

/** What the layers of the request path learn of a request. */
export class RequestState {
  /** The contract's endpoint, once the platform's router has matched one (`Endpoints`). */
  endpoint: Api.Endpoint | undefined = undefined
  /** Its path parameters, as the router matched them (to word a refusal of them). */
  params: Readonly<Record<string, string | undefined>> = {}
  /** Its audit entry, when the endpoint changes something. */
  audit: Audit.Pending | undefined = undefined
  readonly started = performance.now()

  constructor(readonly id: string) {}

  /** Seconds the caller should wait before trying again (a 429's `Retry-After`). */
  retryAfter: number | undefined = undefined

  /** The error a refusal carries, as the audit entry's outcome (and a 429's wait). */
  failed(error: unknown): void {
    if (typeof error !== "object" || error === null || !("_tag" in error)) return
    if (this.audit !== undefined && typeof error._tag === "string") this.audit.failure = error._tag
    if (error instanceof Errors.TooManyRequests) this.retryAfter = error.retry_after
  }
}

/** The request this fiber handles; none outside requests. */
export const Current = globalValue(
  Symbol.for("@tenet/server/RequestContext/Current"),
  () => FiberRef.unsafeMake<RequestState | undefined>(undefined)
)

/** The caller's `X-Request-Id` when short and harmless in a log line, a fresh UUID otherwise. */
const requestId = (request: HttpServerRequest.HttpServerRequest): string => {
  const given = request.headers[HEADER]
  return given !== undefined && /^[\w.:-]{1,128}$/.test(given) ? given : crypto.randomUUID()
}

/** Requests being handled right now (each as how to interrupt it), and where shutdown is. */
export class Counter {
  readonly requests = new Set<() => void>()
  /** Shutdown has begun: requests arriving now are refused. */
  draining = false
  /** Completes when shutdown begins: what never finishes by itself (a change stream) ends then. */
  readonly drainBegun = Deferred.unsafeMake<void>(FiberId.none)
  /** The grace period is over: requests interrupted now are answered 503. */
  cut = false

  get inFlight(): number {
    return this.requests.size
  }

  abandonAll(): void {
    this.cut = true
    for (const abandon of this.requests) abandon()
  }

  /** Marks the server as draining and completes once no request is in flight. */
  readonly drain: Effect.Effect<void> = Effect.suspend(() => {
    this.draining = true
    Deferred.unsafeDone(this.drainBegun, Exit.void)
    return Effect.repeat(Effect.sync(() => this.requests.size), {
      until: (inFlight) => inFlight === 0,
      schedule: Schedule.spaced(Duration.millis(10))
    })
  })
}

export class InFlight extends Context.Tag("@tenet/server/InFlight")<InFlight, Counter>() {
  static readonly layer = Layer.sync(InFlight, () => new Counter())
}

/** The server's own Node listener (`Server.listen`), which shutdown stops and closes. */
export class Listener extends Context.Tag("@tenet/server/Listener")<Listener, {
  readonly stopAccepting: () => void
  readonly closeConnections: Effect.Effect<void>
}>() {}

const unavailable = (detail: string) =>
  HttpServerResponse.unsafeJson({ detail }, { status: 503, headers: { "retry-after": "1", connection: "close" } })
const shuttingDown = unavailable("the server is shutting down; retry on a new connection")
const cutAtShutdown = unavailable(
  "the server shut down before this request finished; it may or may not have taken effect, retry it"
)

/** Per connection, how to abandon each of its requests not yet answered. */
const unanswered = new WeakMap<Socket, Set<() => void>>()

/**
 * The platform waits for Node to confirm a response; after a connection reset Node never does
 * (nor for pipelined requests queued behind it), so when a connection closes, every request on
 * it still unanswered is interrupted: one listener per connection, however many it queues.
 * Answers how to stop watching for it.
 */
const abandonWhenClosed = (request: HttpServerRequest.HttpServerRequest, abandonRequest: () => void) => {
  const socket = NodeHttpServerRequest.toIncomingMessage(request).socket
  const response = NodeHttpServerRequest.toServerResponse(request)
  const abandon = () => response.writableFinished || abandonRequest()
  let requests = unanswered.get(socket)
  if (requests === undefined) {
    const created = requests = new Set()
    unanswered.set(socket, created)
    socket.once("close", () => created.forEach((abandonOne) => abandonOne()))
  }
  const own = requests
  own.add(abandon)
  if (socket.destroyed) abandon()
  return () => own.delete(abandon)
}

/** What a refusal said, for its log line. */
const detailOf = (response: HttpServerResponse.HttpServerResponse): unknown => {
  if (response.body._tag !== "Uint8Array") return undefined
  try {
    return (JSON.parse(new TextDecoder().decode(response.body.body)) as { readonly detail?: unknown }).detail
  } catch {
    return undefined
  }
}

/** `GET /vpcs 401 Unauthorized (2.1 ms)`, with its parts as fields and a refusal's detail. */
const responseLine = (request: HttpServerRequest.HttpServerRequest, state: RequestState, exit: Answer) => {
  const duration_ms = Math.round((performance.now() - state.started) * 10) / 10
  const fields = { method: request.method, route: state.endpoint?.path ?? null, url: request.url, duration_ms }
  if (exit._tag === "Failure") {
    return Effect.logInfo(
      Cause.isInterruptedOnly(exit.cause)
        ? `${request.method} ${request.url} abandoned: the client left, or shutdown could wait no longer`
        : `${request.method} ${request.url} failed`,
      fields
    )
  }
  const status = exit.value.status
  const detail = status >= 400 && status < 500 ? detailOf(exit.value) : undefined
  return Effect.logInfo(
    `${request.method} ${request.url} ${status} ${STATUS_CODES[status] ?? ""} (${duration_ms} ms)`,
    { ...fields, status, ...(detail === undefined ? {} : { detail }) }
  )
}

type Answer = Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>

const httpRequests = Metric.counter("tenet_http_requests", {
  description: "HTTP requests answered, by route template, method and status",
  incremental: true
})
const httpRequestDuration = Metric.histogram(
  "tenet_http_request_duration_seconds",
  MetricBoundaries.exponential({ start: 0.001, factor: 2, count: 15 }),
  "Time from a request's arrival to its response, by route template, method and status"
)
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
/** The metrics of each route, method and status seen: labels from small fixed sets only. */
const labelled = new Map<string, readonly [Metric.Metric.Counter<number>, Metric.Metric.Histogram<number>]>()

/** The metrics of a route, method and status, made on first use (tagging costs a lookup). */
const metricsOf = (labels: { readonly route: string; readonly method: string; readonly status: string }) => {
  const key = `${labels.route} ${labels.method} ${labels.status}`
  let metrics = labelled.get(key)
  if (metrics === undefined) {
    const tags = Object.entries(labels).map(([name, value]) => MetricLabel.make(name, value))
    metrics = [Metric.taggedWithLabels(httpRequests, tags), Metric.taggedWithLabels(httpRequestDuration, tags)]
    labelled.set(key, metrics)
  }
  return metrics
}

/**
 * Registers each route's series at its success status: a scrape before the first request reads
 * 0 for them (the request rate's denominator exists from the start).
 */
export const registerRoutes = (
  routes: ReadonlyArray<{ readonly path: string; readonly method: string; readonly success: number }>
) =>
  Effect.sync(() => {
    for (const route of routes) {
      for (const metric of metricsOf({ route: route.path, method: route.method, status: String(route.success) })) {
        metric.unsafeValue([])
      }
    }
  })

/** Counts the answer by route template, method and status (`abandoned` when there was none). */
const measure = (request: HttpServerRequest.HttpServerRequest, state: RequestState, exit: Answer) => {
  const status = exit._tag === "Success"
    ? String(exit.value.status)
    : Cause.isInterruptedOnly(exit.cause)
    ? "abandoned"
    : "500"
  const metrics = metricsOf({
    route: state.endpoint?.path ?? "unmatched",
    method: METHODS.has(request.method) ? request.method : "other",
    status
  })
  // Updated in place: no fiber-level metric labels are set anywhere, so the effects would add nothing.
  metrics[0].unsafeUpdate(1, [])
  metrics[1].unsafeUpdate((performance.now() - state.started) / 1000, [])
}

/** The log annotations with the request id, and the trace's ids when traced: a log line leads to its trace. */
const annotated = (id: string, context: Context.Context<never>) =>
(
  annotations: HashMap.HashMap<string, unknown>
): HashMap.HashMap<string, unknown> => {
  const span = Context.getOption(context, Tracer.ParentSpan)
  const withId = HashMap.set(annotations, "request_id", id)
  return span._tag === "Some" && span.value._tag === "Span"
    ? HashMap.set(HashMap.set(withId, "trace_id", span.value.traceId), "span_id", span.value.spanId)
    : withId
}

/**
 * `Retry-After` on a refusal a client should retry later (RFC 9110, 10.2.3): a 429 with the
 * throttle's wait, a 503 (the store or a dependency unavailable) after a second.
 */
const retryAfterOf = (
  state: RequestState,
  response: HttpServerResponse.HttpServerResponse
): Record<string, string> => {
  if (response.headers["retry-after"] !== undefined) return {}
  if (response.status === 429 && state.retryAfter !== undefined) return { "retry-after": String(state.retryAfter) }
  return response.status === 503 ? { "retry-after": "1" } : {}
}

/**
 * The answer as it leaves: the request id, what tells a browser how to treat it (`PageSecurity`),
 * `Deprecation` and `Sunset` from a deprecated endpoint,
 * `Connection: close` while draining, and the audit
 * entry of a request that wrote none, recorded before the caller can have its answer.
 */
const answered = (state: RequestState, store: Store.StoreShape, inFlight: Counter) =>
(
  _: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse
) => {
  const tagged = HttpServerResponse.setHeaders(response, {
    [HEADER]: state.id,
    ...retryAfterOf(state, response),
    ...PageSecurity.headersOf(response),
    ...(state.endpoint?.deprecation === undefined ? {} : Deprecation.headersOf(state.endpoint.deprecation))
  })
  const final = inFlight.draining ? HttpServerResponse.setHeader(tagged, "connection", "close") : tagged
  if (!AuditTrail.awaitsAnswer(state.audit)) return Effect.succeed(final)
  const outcome = (pending: Audit.Pending) =>
    response.status < 400 ? "success" : pending.failure ?? Api.errorOfStatus(response.status)
  return AuditTrail.recordAnswer(store, state.audit, outcome).pipe(
    Effect.catchAll((e) => Effect.logWarning("could not record the request in the audit trail", e.detail)),
    Effect.as(final)
  )
}

/**
 * Run for every request, so written as one step of the fiber's own (its services read from its
 * context, its bookkeeping plain code) around the app: what it adds to each request is a few
 * effects, not a hundred (BENCHMARKS, "Where a create's CPU goes").
 */
export const middleware = (app: HttpApp.Default): HttpApp.Default<never, InFlight | Store.Store> =>
  Effect.withFiberRuntime((fiber) => {
    const context = fiber.currentContext as Context.Context<
      HttpServerRequest.HttpServerRequest | InFlight | Store.Store
    >
    const request = Context.get(context, HttpServerRequest.HttpServerRequest)
    const inFlight = Context.get(context, InFlight)
    const store = Context.get(context, Store.Store)
    const state = new RequestState(requestId(request))
    // Too late to start: the drain waits only for requests that arrived before it began.
    if (inFlight.draining) return Effect.succeed(HttpServerResponse.setHeader(shuttingDown, HEADER, state.id))
    const abandon = () => fiber.unsafeInterruptAsFork(fiber.id())
    inFlight.requests.add(abandon)
    const unwatch = abandonWhenClosed(request, abandon)
    const level = fiber.getFiberRef(FiberRef.currentMinimumLogLevel)
    const handled = LogLevel.lessThanEqual(level, LogLevel.Debug)
      ? Effect.zipRight(Effect.logDebug("request received", { method: request.method, url: request.url }), app)
      : app
    // Set, not scoped: the request is this fiber's whole life, so nothing after it needs them
    // restored (what the platform runs after this, its answer's log lines, reads them as well).
    return FiberRef.set(Current, state).pipe(
      Effect.zipRight(FiberRef.update(FiberRef.currentLogAnnotations, annotated(state.id, context))),
      Effect.zipRight(App.appendPreResponseHandler(answered(state, store, inFlight))),
      Effect.zipRight(Effect.interruptible(handled)),
      Effect.exit,
      // Outside the interruptible request, so it runs (the platform runs the middleware
      // uninterruptibly too, which this does not count on): the request is let go of, and one
      // interrupted at the end of the shutdown grace period is answered, in JSON like every other.
      Effect.flatMap((exit) => {
        inFlight.requests.delete(abandon)
        unwatch()
        measure(request, state, exit)
        const answer = inFlight.cut && Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)
          ? Effect.succeed(HttpServerResponse.setHeader(cutAtShutdown, HEADER, state.id))
          : exit
        return LogLevel.lessThanEqual(level, LogLevel.Info)
          ? Effect.zipRight(responseLine(request, state, exit), answer)
          : answer
      }),
      Effect.uninterruptible
    )
  })

/** Serves `layer` with the headers holding tokens kept out of the platform's server spans. */
export const traced = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.locallyWith(layer, Headers.currentRedactedNames, (names) => [...names, ...Security.TOKEN_HEADERS])

/** After the grace period, how long interrupted requests get to unwind (roll back, release). */
const UNWIND = Duration.seconds(2)

/**
 * On release, before the app is detached: stops accepting connections (where the server has
 * its own listener), refuses requests arriving on open ones (503, `Connection: close`), waits
 * up to `grace` for those in flight, interrupts the rest (answered 503) and gives them a moment
 * to unwind, then lets the connections close. At most `grace` plus those moments, whatever
 * the clients do.
 */
export const drainOnShutdown = (grace: Duration.DurationInput) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const inFlight = yield* InFlight
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const listener = yield* Effect.serviceOption(Listener)
        Option.map(listener, (l) => l.stopAccepting())
        if (inFlight.inFlight > 0) {
          yield* Effect.logInfo("shutting down: waiting for requests in flight", { in_flight: inFlight.inFlight })
        }
        // Finalizers run uninterruptibly; a timeout cannot cut short what cannot be interrupted.
        const waitFor = (duration: Duration.DurationInput) =>
          Effect.interruptible(inFlight.drain).pipe(
            Effect.timeoutTo({ duration, onSuccess: () => true, onTimeout: () => false })
          )
        if (!(yield* waitFor(grace))) {
          yield* Effect.logWarning("shutting down: the grace period is over, interrupting the requests in flight", {
            in_flight: inFlight.inFlight
          })
          inFlight.abandonAll()
          yield* waitFor(UNWIND)
        }
        if (Option.isSome(listener)) yield* listener.value.closeConnections
      })
    )
  }))
