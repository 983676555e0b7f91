/**
 * What every request carries through the server: a request id on every log line written
 * while it is handled (and in the `X-Request-Id` response header), a log line per response,
 * and a count of requests in flight, so that shutdown can wait for them to finish.
 *
 * This runs on every request, so it keeps to plain state and synchronous callbacks: no
 * forked fibers, no log spans (measured: the platform's request logger and a
 * `SubscriptionRef` counter cost about half the throughput of a cheap endpoint).
 */
import type { HttpApp } from "@effect/platform"
import { HttpApp as App, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import type { Duration } from "effect"
import { Context, Effect, Exit, Layer } from "effect"
import type { Socket } from "node:net"

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
  #inFlight = 0
  #draining = false
  readonly #idle = new Set<() => void>()

  get inFlight(): number {
    return this.#inFlight
  }

  get draining(): boolean {
    return this.#draining
  }

  enter(): void {
    this.#inFlight++
  }

  leave(): void {
    if (--this.#inFlight === 0) { for (const wake of this.#idle) wake() }
  }

  /** Marks the server as draining and completes once no request is in flight. */
  readonly drain: Effect.Effect<void> = Effect.async<void>((resume) => {
    this.#draining = true
    if (this.#inFlight === 0) return resume(Effect.void)
    const wake = () => {
      this.#idle.delete(wake)
      resume(Effect.void)
    }
    this.#idle.add(wake)
    return Effect.sync(() => this.#idle.delete(wake))
  })
}

export class InFlight extends Context.Tag("@tenet/server/InFlight")<InFlight, Counter>() {
  static readonly layer = Layer.sync(InFlight, () => new Counter())
}

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

const responseLine = (
  request: HttpServerRequest.HttpServerRequest,
  exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>
) => {
  const fields = { method: request.method, url: request.url }
  if (Exit.isSuccess(exit)) return Effect.logInfo("Sent HTTP response", { ...fields, status: exit.value.status })
  return Effect.logInfo(
    Exit.isInterrupted(exit) ? "HTTP request abandoned: the client left" : "HTTP request failed",
    fields
  )
}

/**
 * Wraps the whole app: every log line gets `request_id`, every response the header (and,
 * while the server drains, `Connection: close` so keep-alive clients move on).
 */
export const middleware = (app: HttpApp.Default): HttpApp.Default<never, InFlight> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const inFlight = yield* InFlight
    const id = requestId(request)
    yield* App.appendPreResponseHandler((_, response) => {
      const tagged = HttpServerResponse.setHeader(response, HEADER, id)
      return Effect.succeed(inFlight.draining ? HttpServerResponse.setHeader(tagged, "connection", "close") : tagged)
    })
    return yield* Effect.acquireUseRelease(
      Effect.sync(() => inFlight.enter()).pipe(
        Effect.zipRight(Effect.logDebug("request received", { method: request.method, url: request.url }))
      ),
      () => abandonWhenClosed(request, app).pipe(Effect.onExit((exit) => responseLine(request, exit))),
      () => Effect.sync(() => inFlight.leave())
    ).pipe(Effect.annotateLogs("request_id", id))
  })

/**
 * On release, before the handler is detached and the listener closed: marks the server as
 * draining and waits, up to `grace`, for the requests in flight to finish.
 */
export const drainOnShutdown = (grace: Duration.DurationInput) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const inFlight = yield* InFlight
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (inFlight.inFlight > 0) {
          yield* Effect.logInfo("shutting down: waiting for requests in flight", { in_flight: inFlight.inFlight })
        }
        const drained = yield* inFlight.drain.pipe(
          Effect.timeoutTo({ duration: grace, onSuccess: () => true, onTimeout: () => false })
        )
        if (!drained) {
          yield* Effect.logWarning("shutting down with requests still in flight", { in_flight: inFlight.inFlight })
        }
      })
    )
  }))
