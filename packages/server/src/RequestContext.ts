/**
 * What every request carries through the server: a request id on every log line written
 * while it is handled (and in the `X-Request-Id` response header), and a count of requests in
 * flight, so that shutdown can wait for them to finish.
 */
import type { HttpApp } from "@effect/platform"
import { HttpApp as App, HttpMiddleware, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import type { Duration } from "effect"
import { Context, Effect, Layer, Stream, SubscriptionRef } from "effect"

const HEADER = "x-request-id"

/** Ids a caller may choose: short, and harmless inside a log line. */
const CALLER_ID = /^[\w.:-]{1,128}$/

/** The caller's `X-Request-Id` when it is a sane one, a fresh UUID otherwise. */
const requestId = (request: HttpServerRequest.HttpServerRequest): string => {
  const given = request.headers[HEADER]
  return given !== undefined && CALLER_ID.test(given) ? given : crypto.randomUUID()
}

interface State {
  readonly inFlight: number
  readonly draining: boolean
}

/**
 * Completes when the client's connection is gone before the response was sent. The platform
 * writes a response and waits for Node to confirm it; after a connection reset Node never
 * does, and the request would stay in flight forever.
 */
const connectionClosed = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.async<HttpServerResponse.HttpServerResponse>((resume) => {
    const response = NodeHttpServerRequest.toServerResponse(request)
    const onClose = () => {
      if (!response.writableFinished) {
        resume(Effect.succeed(HttpServerResponse.empty({ status: 499 })))
      }
    }
    if (response.destroyed) onClose()
    else response.once("close", onClose)
    return Effect.sync(() => response.off("close", onClose))
  })

/** Requests being handled right now, and whether the server is shutting down. */
export class InFlight
  extends Context.Tag("@tenet/server/InFlight")<InFlight, SubscriptionRef.SubscriptionRef<State>>()
{
  static readonly layer = Layer.effect(InFlight, SubscriptionRef.make<State>({ inFlight: 0, draining: false }))
}

/**
 * Wraps the whole app (the request logger included): every log line gets `request_id`, every
 * response the header, and while the server drains, `Connection: close` so keep-alive
 * clients move on.
 */
export const middleware = (app: HttpApp.Default): HttpApp.Default<never, InFlight> => {
  // Wrapped once: the request logger numbers its spans across requests.
  const logged = HttpMiddleware.logger(app)
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const state = yield* InFlight
    const id = requestId(request)
    yield* App.appendPreResponseHandler((_, response) =>
      Effect.map(SubscriptionRef.get(state), ({ draining }) => {
        const tagged = HttpServerResponse.setHeader(response, HEADER, id)
        return draining ? HttpServerResponse.setHeader(tagged, "connection", "close") : tagged
      })
    )
    return yield* Effect.acquireUseRelease(
      SubscriptionRef.update(state, (s) => ({ ...s, inFlight: s.inFlight + 1 })).pipe(
        Effect.zipRight(Effect.logDebug("request received", { method: request.method, url: request.url }))
      ),
      // The platform runs all but the route handler uninterruptibly, so a client that hung up
      // could not stop the body read or the response write; here both can be abandoned.
      () => Effect.interruptible(Effect.raceFirst(logged, connectionClosed(request))),
      () => SubscriptionRef.update(state, (s) => ({ ...s, inFlight: s.inFlight - 1 }))
    ).pipe(Effect.annotateLogs("request_id", id))
  })
}

/**
 * On release, before the handler is detached and the listener closed: marks the server as
 * draining and waits, up to `grace`, for the requests in flight to finish.
 */
export const drainOnShutdown = (grace: Duration.DurationInput) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const state = yield* InFlight
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const { inFlight } = yield* SubscriptionRef.updateAndGet(state, (s) => ({ ...s, draining: true }))
        if (inFlight > 0) {
          yield* Effect.logInfo("shutting down: waiting for requests in flight", { in_flight: inFlight })
        }
        const drained = yield* state.changes.pipe(
          Stream.takeUntil((s) => s.inFlight === 0),
          Stream.runDrain,
          Effect.timeoutTo({ duration: grace, onSuccess: () => true, onTimeout: () => false })
        )
        if (!drained) {
          const { inFlight: left } = yield* SubscriptionRef.get(state)
          yield* Effect.logWarning("shutting down with requests still in flight", { in_flight: left })
        }
      })
    )
  }))
