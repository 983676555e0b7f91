/**
 * The outermost middleware: what every request carries through the server. A request id on
 * every log line written while it is handled (and in the `X-Request-Id` response header), the
 * request's state (`RequestState`) for the layers within to fill in, a log line and the HTTP
 * metrics per answer, and a count of requests in flight, so that shutdown can wait for them.
 *
 * It is here for what it does, not for speed: re-measured once reads came from memory (memory
 * store, 8 connections, server and load on separate CPUs), the server with this middleware,
 * with none, and with the platform's `HttpMiddleware.logger` in its place served GET /vpcs at
 * 4,400-4,600, 4,400-5,650 and 5,000-5,700 req/s: within the run-to-run spread. Plain state
 * and synchronous callbacks are kept because they are the simplest correct form.
 */
import type { HttpApp } from "@effect/platform"
import { Headers, HttpApp as App, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Api, Audit, Security, Store } from "@tenet/core"
import {
  Cause,
  Context,
  Duration,
  Effect,
  Exit,
  Layer,
  Metric,
  MetricBoundaries,
  MetricLabel,
  Option,
  Schedule,
  Tracer
} from "effect"
import { STATUS_CODES } from "node:http"
import type { Socket } from "node:net"
import type { Endpoint } from "./Endpoints.js"
import { RequestState } from "./RequestState.js"
import * as Current from "./RequestState.js"

const HEADER = "x-request-id"

/** Ids a caller may choose: short, and harmless inside a log line. */
const CALLER_ID = /^[\w.:-]{1,128}$/

/** The caller's `X-Request-Id` when it is a sane one, a fresh UUID otherwise. */
const requestId = (request: HttpServerRequest.HttpServerRequest): string => {
  const given = request.headers[HEADER]
  return given !== undefined && CALLER_ID.test(given) ? given : crypto.randomUUID()
}

/** Requests being handled right now, and whether the server is shutting down. */
export class Counter {
  /** Each request in flight, as how to interrupt it. */
  readonly #requests = new Set<() => void>()
  /** Set once shutdown begins: requests arriving then are refused. */
  draining = false
  /** Set once the grace period is over: requests interrupted then are answered 503. */
  cut = false

  get inFlight(): number {
    return this.#requests.size
  }

  enter(abandon: () => void): void {
    this.#requests.add(abandon)
  }

  leave(abandon: () => void): void {
    this.#requests.delete(abandon)
  }

  /** Interrupts every request still in flight. */
  abandonAll(): void {
    this.cut = true
    for (const abandon of this.#requests) abandon()
  }

  /** Marks the server as draining and completes once no request is in flight. */
  readonly drain: Effect.Effect<void> = Effect.suspend(() => {
    this.draining = true
    return Effect.repeat(Effect.sync(() => this.#requests.size), {
      until: (inFlight) => inFlight === 0,
      schedule: Schedule.spaced(Duration.millis(10))
    })
  })
}

export class InFlight extends Context.Tag("@tenet/server/InFlight")<InFlight, Counter>() {
  static readonly layer = Layer.sync(InFlight, () => new Counter())
}

/**
 * The Node listener, where the server has one of its own (`Server.listen`): shutdown stops it
 * accepting connections as soon as it starts draining, and closes what connections are left
 * once it has drained.
 */
export class Listener extends Context.Tag("@tenet/server/Listener")<Listener, {
  readonly stopAccepting: () => void
  readonly closeConnections: Effect.Effect<void>
}>() {}

/** What a request interrupted at the end of the shutdown grace period is answered. */
const cutAtShutdown = HttpServerResponse.unsafeJson(
  { detail: "the server shut down before this request finished; it may or may not have taken effect, retry it" },
  { status: 503, headers: { "retry-after": "1", connection: "close" } }
)

/** Answers requests that arrive on an open connection while the server drains. */
const shuttingDown = HttpServerResponse.unsafeJson(
  { detail: "the server is shutting down; retry on a new connection" },
  { status: 503, headers: { "retry-after": "1", connection: "close" } }
)

/** Per connection: how to abandon each of its requests whose response is not yet sent. */
const unanswered = new WeakMap<Socket, Set<() => void>>()

/**
 * The platform writes a response and waits for Node to confirm it; after a connection reset
 * Node never does (nor for pipelined requests queued behind it, whose responses never even
 * reach the socket), and the request would stay in flight forever. So when the connection
 * closes, every request on it still unanswered is interrupted. One listener per connection:
 * a pipelining client may queue any number of requests on it.
 */
const abandonWhenClosed = <A, E, R>(request: HttpServerRequest.HttpServerRequest, self: Effect.Effect<A, E, R>) =>
  Effect.withFiberRuntime<A, E, R>((fiber) => {
    const socket = NodeHttpServerRequest.toIncomingMessage(request).socket
    const response = NodeHttpServerRequest.toServerResponse(request)
    const abandon = () => {
      if (!response.writableFinished) fiber.unsafeInterruptAsFork(fiber.id())
    }
    let requests = unanswered.get(socket)
    if (requests === undefined) {
      const created = new Set<() => void>()
      unanswered.set(socket, created)
      socket.once("close", () => created.forEach((abandonOne) => abandonOne()))
      requests = created
    }
    const own = requests
    own.add(abandon)
    if (socket.destroyed) abandon()
    return Effect.ensuring(Effect.interruptible(self), Effect.sync(() => own.delete(abandon)))
  })

/** What a refusal said (its `detail`), for the log line of a 4xx. */
const detailOf = (response: HttpServerResponse.HttpServerResponse): unknown => {
  if (response.body._tag !== "Uint8Array") return undefined
  try {
    const body = JSON.parse(new TextDecoder().decode(response.body.body)) as { readonly detail?: unknown }
    return body.detail
  } catch {
    return undefined
  }
}

/**
 * The request's line: `GET /vpcs 401 Unauthorized (2.1 ms)`, with the method, route template,
 * URL, status and duration as fields, and for a refusal (4xx) what it said.
 */
const responseLine = (
  request: HttpServerRequest.HttpServerRequest,
  endpoint: Endpoint | undefined,
  exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>,
  started: number
) => {
  const duration_ms = Math.round((performance.now() - started) * 10) / 10
  const fields = { method: request.method, route: endpoint?.path ?? null, url: request.url, duration_ms }
  if (Exit.isSuccess(exit)) {
    const status = exit.value.status
    const detail = status >= 400 && status < 500 ? detailOf(exit.value) : undefined
    return Effect.logInfo(
      `${request.method} ${request.url} ${status} ${STATUS_CODES[status] ?? ""} (${duration_ms} ms)`,
      { ...fields, status, ...(detail === undefined ? {} : { detail }) }
    )
  }
  return Effect.logInfo(
    Exit.isInterrupted(exit)
      ? `${request.method} ${request.url} abandoned: the client left, or shutdown could wait no longer`
      : `${request.method} ${request.url} failed`,
    fields
  )
}

/**
 * Counts the response under its route template, method and status: `abandoned` for a request
 * interrupted before its answer, and a method outside HTTP's few as `other` (labels stay bounded).
 * Recorded whether or not a listener exposes them.
 */
const measure = (
  request: HttpServerRequest.HttpServerRequest,
  endpoint: Endpoint | undefined,
  exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>,
  started: number
) => {
  const status = Exit.isSuccess(exit) ? String(exit.value.status) : Exit.isInterrupted(exit) ? "abandoned" : "500"
  const method = METHODS.has(request.method) ? request.method : "other"
  const route = endpoint?.path ?? "unmatched"
  const key = `${route} ${method} ${status}`
  let metrics = labelled.get(key)
  if (metrics === undefined) {
    const labels = [
      MetricLabel.make("route", route),
      MetricLabel.make("method", method),
      MetricLabel.make("status", status)
    ]
    metrics = {
      requests: Metric.taggedWithLabels(httpRequests, labels),
      duration: Metric.taggedWithLabels(httpRequestDuration, labels)
    }
    labelled.set(key, metrics)
  }
  return Effect.zipRight(
    Metric.increment(metrics.requests),
    Metric.update(metrics.duration, (performance.now() - started) / 1000)
  )
}

/** The metrics of each route, method and status seen (bounded, as the labels are). */
const labelled = new Map<string, {
  readonly requests: Metric.Metric.Counter<number>
  readonly duration: Metric.Metric.Histogram<number>
}>()

const httpRequests = Metric.counter("tenet_http_requests", {
  description: "HTTP requests answered, by route template, method and status",
  incremental: true
})

/** Seconds, from 1 ms to about 16 s. */
const httpRequestDuration = Metric.histogram(
  "tenet_http_request_duration_seconds",
  MetricBoundaries.exponential({ start: 0.001, factor: 2, count: 15 }),
  "Time from a request's arrival to its response, by route template, method and status"
)

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/**
 * The answer as it leaves: with the request id, and `Connection: close` while the server
 * drains (keep-alive clients move on). Its audit entry is recorded before it is written: a
 * caller that has its answer finds its entry.
 */
const answered = (
  state: RequestState,
  store: Store.StoreShape,
  inFlight: Counter,
  response: HttpServerResponse.HttpServerResponse
) => {
  const tagged = HttpServerResponse.setHeader(response, HEADER, state.id)
  return Effect.as(
    recordAnswer(store, state.audit, response.status),
    inFlight.draining ? HttpServerResponse.setHeader(tagged, "connection", "close") : tagged
  )
}

/** Wraps the whole app: every log line gets `request_id`, every response the header. */
export const middleware = (app: HttpApp.Default): HttpApp.Default<never, InFlight | Store.Store> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const inFlight = yield* InFlight
    const store = yield* Store.Store
    const id = requestId(request)
    // Too late to start: the drain waits only for requests that arrived before it began.
    if (inFlight.draining) return HttpServerResponse.setHeader(shuttingDown, HEADER, id)
    const state = new RequestState(id, performance.now())
    yield* App.appendPreResponseHandler((_, response) => answered(state, store, inFlight, response))
    return yield* Effect.withFiberRuntime<
      HttpServerResponse.HttpServerResponse,
      never,
      HttpServerRequest.HttpServerRequest
    >((fiber) => {
      const abandon = () => fiber.unsafeInterruptAsFork(fiber.id())
      return Effect.acquireUseRelease(
        Effect.sync(() => inFlight.enter(abandon)).pipe(
          Effect.tap(Effect.logDebug("request received", { method: request.method, url: request.url }))
        ),
        () =>
          abandonWhenClosed(request, app).pipe(
            Effect.locally(Current.Current, state),
            Effect.onExit((exit) =>
              Effect.zipRight(
                measure(request, state.endpoint, exit, state.started),
                Effect.whenLogLevel(Effect.suspend(() => responseLine(request, state.endpoint, exit, state.started)), "Info")
              )
            ),
            // Outside the interruptible request, so it runs: one interrupted at the end of the
            // shutdown grace period is answered, in JSON like every other answer.
            Effect.catchAllCause((cause) =>
              inFlight.cut && Cause.isInterruptedOnly(cause)
                ? Effect.succeed(HttpServerResponse.setHeader(cutAtShutdown, HEADER, id))
                : Effect.failCause(cause)
            )
          ),
        () => Effect.sync(() => inFlight.leave(abandon))
      )
    }).pipe(Effect.annotateLogs(yield* logAnnotations(id)))
  })

/**
 * The request id, and when the request is traced its trace and span ids: a log line leads to
 * its trace. (The platform's router gives the server span its `http.route`.)
 */
const logAnnotations = (id: string) =>
  Effect.map(
    Effect.serviceOption(Tracer.ParentSpan),
    (span): Record<string, string> =>
      span._tag === "Some" && span.value._tag === "Span"
        ? { request_id: id, trace_id: span.value.traceId, span_id: span.value.spanId }
        : { request_id: id }
  )

/** Serves `layer` with the headers holding tokens kept out of the platform's server spans. */
export const traced = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  layer.pipe(Layer.locallyWith(Headers.currentRedactedNames, (names) => [...names, ...Security.TOKEN_HEADERS]))

/**
 * What the request did not record in a change of its own: its answer, `success` or the error
 * it was refused with (a failure to write it is logged).
 */
const recordAnswer = (store: Store.StoreShape, entry: Audit.Pending | undefined, status: number) =>
  Audit.recordAnswer(
    store,
    entry,
    (pending) => status < 400 ? "success" : pending.failure ?? Api.errorOfStatus(status)
  ).pipe(
    Effect.catchAll((e) => Effect.logWarning("could not record the request in the audit trail", e.detail))
  )

/** After the grace period, how long interrupted requests get to unwind (roll back, release). */
const UNWIND = Duration.seconds(2)

/**
 * On release, before the handler is detached: stops accepting connections (where the server
 * has its own listener), marks the server as draining (requests arriving on open connections
 * get 503 and `Connection: close`), and waits up to `grace` for the requests in flight. Those
 * still running then are interrupted (and answered 503) and get a moment to unwind; then the
 * connections close, by themselves as their last answers said or, after a moment, by force.
 * So shutdown takes at most `grace` plus those moments, whatever the clients do.
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
        // Finalizers run uninterruptibly, and a timeout cannot cut short what cannot be
        // interrupted: without `interruptible` the grace period would wait for the last request.
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
