/**
 * The reference server: the contract's handlers, authentication, the refusals, the
 * OpenAPI document (`/openapi.json`), the interactive docs (`/docs`) and the web console
 * (`/console`), over whichever ports it is given.
 */
import { HttpApiBuilder, HttpApiScalar } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import {
  Api,
  ChangeFeed,
  ClusterController,
  Cooperative,
  EdgeController,
  Fairness,
  Identity,
  Quota,
  UseCases
} from "@tenet/core"
import { NodeProcessIdentity } from "@tenet/core/node"
import { Cause, Duration, Effect, Layer, Option, Redacted } from "effect"
import { chmodSync, mkdirSync, writeFileSync } from "node:fs"
import { createServer, type ServerResponse, STATUS_CODES } from "node:http"
import { createRequire } from "node:module"
import * as Net from "node:net"
import { dirname } from "node:path"
import type { Duplex } from "node:stream"
import * as Auth from "./Auth.js"
import * as Endpoints from "./Endpoints.js"
import { HandlersLive } from "./handlers/index.js"
import * as Reconciler from "./Reconciler.js"
import * as Refusals from "./Refusals.js"
import * as RequestContext from "./RequestContext.js"
import * as WebConsole from "./WebConsole.js"

/** The server's version, from its package.json (one level above both src/ and dist/). */
export const VERSION: string = (createRequire(import.meta.url)("../package.json") as { version: string }).version

/** The use-cases, over the ports, as this Node process's server (`NodeProcessIdentity`). */
export const UseCasesLive = UseCases.layer.pipe(Layer.provide(NodeProcessIdentity.layer))

export interface HttpOptions {
  /** Larger request bodies are refused with 413. */
  readonly maxBodyBytes: number
  /** On shutdown, how long requests in flight may take to finish; 10 seconds by default. */
  readonly shutdownGrace?: Duration.DurationInput
}

export interface Options extends HttpOptions {
  readonly adminUsername: string
  readonly adminPassword: Option.Option<Redacted.Redacted<string>>
  /**
   * Where a generated admin password is written (mode 0600) when `adminPassword` is none and the
   * admin does not exist yet; the log names the file, never the password. Without it such a
   * start fails: a password nobody can read would lock the admin out.
   */
  readonly adminPasswordFile?: string
  /** How often VPCs whose apply failed are applied again. */
  readonly reconcileInterval: Duration.DurationInput
  /**
   * The controller's workers, backoff and resync (`ClusterController.Options`); the resync also
   * compares the tunnel provider with the committed tunnels (`EdgeController`).
   */
  readonly controller?: ClusterController.Options
  /** The change stream's bookmarks and retention (`ChangeFeed`). */
  readonly watch?: ChangeFeed.Options
  /** How long a write waits for its change to be in force in the cluster before answering (2 s). */
  readonly applyWait?: Duration.DurationInput
  /** How long a sign-in session lasts unless signed out (`Session.DEFAULT_TTL`). */
  readonly sessionTtl?: Duration.DurationInput
  /** How expensive requests share the process between tenants (`Fairness.DEFAULTS`). */
  readonly fairness?: Partial<Fairness.Options>
  /** What each tenant may have unless the administrator sets otherwise (`Quota.DEFAULTS`). */
  readonly quotas?: Quota.Limits
}

/**
 * Expensive work (`Fairness`) gives way to the other requests in flight (`Cooperative`): those
 * not running or waiting as expensive work themselves.
 */
const PressureLive = Layer.effect(
  Cooperative.Pressure,
  Effect.map(
    Effect.all([RequestContext.InFlight, Fairness.Fairness]),
    ([inFlight, fairness]) => ({ others: () => Math.max(0, inFlight.inFlight - fairness.occupancy()) })
  )
)

/**
 * The whole HTTP surface; needs the use-cases (`UseCasesLive`) and an `HttpServer`. Requests
 * are logged with their id; on release it first waits for the requests in flight.
 */
export const layerHttp = (options: HttpOptions) =>
  RequestContext.drainOnShutdown(options.shutdownGrace ?? Duration.seconds(10)).pipe(
    Layer.provide(
      RequestContext.traced(HttpApiBuilder.serve(RequestContext.middleware)).pipe(
        Layer.provide(Refusals.bodyLimit(options))
      )
    ),
    // Scalar's script is served inline; its default fonts would come from Scalar's host.
    Layer.provide(HttpApiScalar.layer({ path: "/docs", scalar: { withDefaultFonts: false } })),
    Layer.provide(WebConsole.layer),
    Layer.provide(Endpoints.methodNotAllowedRoutes),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(Refusals.layer(options)),
    Layer.provide(HttpApiBuilder.api(Api.TenetApi)),
    Layer.provide(HandlersLive.pipe(Layer.provide(PressureLive))),
    Layer.provide(Layer.mergeAll(Auth.layer, Endpoints.layer, Layer.effectDiscard(Endpoints.registerMetrics))),
    Layer.provideMerge(RequestContext.InFlight.layer)
  )

/**
 * A Node HTTP server that does not wait forever on slow clients: headers and the whole
 * request must arrive within `requestTimeout` (408 otherwise), and idle keep-alive
 * connections close after 5 seconds. With the controls shutdown uses (`RequestContext.Listener`).
 */
const makeNodeServer = (options: { readonly requestTimeout: Duration.DurationInput }) => {
  const timeout = Duration.toMillis(options.requestTimeout)
  const server = createServer({
    requestTimeout: timeout,
    headersTimeout: timeout,
    keepAliveTimeout: KEEP_ALIVE,
    // Node would answer a missing Host with an empty 400; the refusals answer it in JSON.
    requireHostHeader: false,
    // How often Node looks for requests past their timeout.
    connectionsCheckingInterval: Math.min(timeout, 30_000) / 2
  })
  // Each connection's latest response: an error on a connection whose response has begun
  // cannot be answered without corrupting it.
  const responses = new WeakMap<Duplex, ServerResponse>()
  // The socket listens before the app is attached (the store may still be migrating) and after
  // it is detached at shutdown; requests in those windows get a 503 rather than no answer.
  server.on("request", (request, response) => {
    responses.set(request.socket, response)
    if (server.listenerCount("request") > 1) return
    response.writeHead(503, { "content-type": "application/json", "retry-after": "1", connection: "close" })
    response.end(JSON.stringify({ detail: "the server is starting or shutting down; retry shortly" }))
  })
  // What Node's HTTP parser refuses never reaches the app; its answer is JSON too.
  server.on("clientError", (error: Error & { readonly code?: string }, socket: Duplex) => {
    const response = responses.get(socket)
    answerClientError(error, socket, response !== undefined && response.headersSent && !response.writableFinished)
  })
  const connections = Effect.async<number>((resume) => {
    server.getConnections((error, count) => resume(Effect.succeed(error ? 0 : count)))
  })
  return {
    server,
    // net.Server's own close: it stops accepting and leaves open connections alone, where
    // http.Server's would also close the idle ones at once, resetting a request on its way in.
    // Requests on those connections are answered (503 and Connection: close while draining).
    stopAccepting: () => {
      if (server.listening) Net.Server.prototype.close.call(server)
    },
    // Connections close as their last answers say `Connection: close` (a keep-alive client's
    // next request is answered so); those still open after a moment (idle, or a client that
    // never finishes its request) are closed.
    closeConnections: Effect.gen(function*() {
      for (let waited = 0; waited < CONNECTIONS_SETTLE_MS && (yield* connections) > 0; waited += 50) {
        yield* Effect.sleep(Duration.millis(50))
      }
      server.closeAllConnections()
    })
  }
}

/** Idle keep-alive connections close after this long. */
const KEEP_ALIVE = 5_000

/** At shutdown, how long open connections get to close by themselves once the requests are done. */
const CONNECTIONS_SETTLE_MS = 1_000

/** The status and body for a request Node's parser refused; bad input (400) names where it is, as every refusal of it does. */
const clientErrorAnswer = (code: string | undefined): { readonly status: number; readonly body: object } => {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return { status: 431, body: { detail: "the request line and headers are too large" } }
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, body: { detail: "the request did not arrive in time" } }
    default: {
      const message = `is not valid HTTP/1.1 (${code ?? "unreadable"})`
      return { status: 400, body: { detail: `request: ${message}`, errors: [{ field: "request", message }] } }
    }
  }
}

const answerClientError = (error: Error & { readonly code?: string }, socket: Duplex, responding: boolean) => {
  // Nothing to answer on a connection that is gone, or whose response has begun.
  if (error.code === "ECONNRESET" || !socket.writable || responding) {
    socket.destroy()
    return
  }
  const answer = clientErrorAnswer(error.code)
  const { status } = answer
  const body = JSON.stringify(answer.body)
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

/** The Node `http.Server` to give `NodeHttpServer.layer`, for embedders with a listener of their own. */
export const nodeServer = (options: { readonly requestTimeout: Duration.DurationInput }) => () =>
  makeNodeServer(options).server

/**
 * Listens on `host:port` with the server's own Node listener: the `HttpServer`, and the
 * `RequestContext.Listener` that shutdown stops accepting at once and closes last.
 */
export const listen = (options: {
  readonly requestTimeout: Duration.DurationInput
  readonly host: string
  readonly port: number
}) =>
  Layer.unwrapEffect(Effect.sync(() => {
    const { closeConnections, server, stopAccepting } = makeNodeServer(options)
    return Layer.merge(
      NodeHttpServer.layer(() => server, { host: options.host, port: options.port }),
      Layer.succeed(RequestContext.Listener, { stopAccepting, closeConnections })
    )
  }))

/**
 * The server over the given ports: HTTP surface, use-cases, the reconciler, and the admin
 * made sure of at startup. Needs the ports, `ServerInfo` and an `HttpServer`.
 */
export const layer = (options: Options) =>
  Layer.mergeAll(
    // The admin exists before the first request is served.
    layerHttp(options).pipe(Layer.provide(bootstrapAdmin(options))),
    Reconciler.layer(options.reconcileInterval),
    ClusterController.ClusterController.layer(options.controller),
    EdgeController.EdgeController.layer(options.controller)
  ).pipe(
    Layer.provideMerge(Layer.merge(
      UseCases.make({
        ...(options.applyWait === undefined ? {} : { applier: { wait: options.applyWait } }),
        ...(options.fairness === undefined ? {} : { fairness: options.fairness })
      }),
      ChangeFeed.ChangeFeed.layer(options.watch)
    )),
    Layer.provide(
      options.sessionTtl === undefined
        ? Layer.empty
        : Layer.succeed(Identity.SessionLifetime, Duration.decode(options.sessionTtl))
    ),
    Layer.provide(options.quotas === undefined ? Layer.empty : Layer.succeed(Quota.Defaults, options.quotas)),
    // Which server marked a delete, so a restarted one finishes its dead predecessor's at once.
    Layer.provide(NodeProcessIdentity.layer)
  )

/** Writes a generated password where only this user can read it, replacing what was there. */
const writeSecret = (file: string, secret: string) =>
  Effect.try({
    try: () => {
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, `${secret}\n`, { mode: 0o600 })
      // A file that existed keeps its mode through a write: make sure of it.
      chmodSync(file, 0o600)
    },
    catch: (cause) =>
      new Cause.RuntimeException(`cannot write the generated admin password to ${file}: ${String(cause)}`)
  })

/**
 * Makes sure the admin exists. A generated password goes to `adminPasswordFile` (mode 0600),
 * never to the log, which reaches every log pipeline: it is not stored in clear anywhere else.
 */
export const bootstrapAdmin = (
  options: Pick<Options, "adminUsername" | "adminPassword" | "adminPasswordFile">
) =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const identity = yield* Identity.Identity
      const file = options.adminPasswordFile
      if (Option.isNone(options.adminPassword) && file === undefined) {
        return yield* Effect.dieMessage("set TENET_ADMIN_PASSWORD, or give the server a file for a generated one")
      }
      const { generatedPassword } = yield* identity.bootstrapAdmin(
        options.adminUsername,
        Option.map(options.adminPassword, Redacted.value)
      )
      if (Option.isSome(generatedPassword) && file !== undefined) {
        yield* writeSecret(file, generatedPassword.value)
        yield* Effect.logWarning(
          `generated a password for admin '${options.adminUsername}' in ${file} (readable by this user only); ` +
            "set TENET_ADMIN_PASSWORD to choose your own"
        )
      }
    }).pipe(Effect.orDie)
  )
