/**
 * A real Tenet server on the in-memory platform, listening on a random loopback port, with
 * an `HttpClient` pointed at it and the platform's fault switches: for Tenet's own tests and
 * for tenants testing their automation.
 */
import { HttpServer } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { MemoryPorts } from "@tenet/adapters-memory"
import type { OperationsLog, Orchestrator, Store } from "@tenet/core"
import { type ChangeFeed, type ClusterController, type Fairness, Identity, Leadership, ServerInfo } from "@tenet/core"
import { Duration, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import * as Server from "./Server.js"

export interface Options {
  readonly adminUsername?: string
  readonly adminPassword?: string
  readonly maxBodyBytes?: number
  readonly platform?: MemoryPorts.Options
  /** Another Store and OperationsLog in place of the memory ones (e.g. PostgreSQL). */
  readonly store?: Layer.Layer<Store.Store | OperationsLog.OperationsLog>
  /** Wraps the store (e.g. to make one of its calls fail). */
  readonly storeDecorator?: Layer.Layer<Store.Store, never, Store.Store>
  /** Another cluster in place of the simulated one (e.g. Kubernetes against a test API server). */
  readonly orchestrator?: Layer.Layer<Orchestrator.Orchestrator>
  /** How often failed applies are retried; long by default so tests decide when it happens. */
  readonly reconcileInterval?: Duration.DurationInput
  /** The controller's settings; its resync runs at start, then hourly, by default. */
  readonly controller?: ClusterController.Options
  /** The change stream's bookmarks and retention. */
  readonly watch?: ChangeFeed.Options
  /**
   * How long a write waits for its change to be in force; by default longer than an apply may
   * take (10 s), so that an answer on a loaded machine is the apply's outcome, not the bound's,
   * and nothing is recorded after it.
   */
  readonly applyWait?: Duration.DurationInput
  /** How long a client may take to send a request (408 after); 30 seconds by default. */
  readonly requestTimeout?: Duration.DurationInput
  /** On shutdown, how long requests in flight may take to finish; 10 seconds by default. */
  readonly shutdownGrace?: Duration.DurationInput
  /** Request logs are noise in tests: warnings and errors only, by default. */
  readonly logLevel?: LogLevel.LogLevel
  /** How failed logins are slowed (`Identity.defaultThrottlePolicy` by default). */
  readonly loginThrottle?: Identity.ThrottlePolicy
  /** How long sign-in sessions last (12 hours by default). */
  readonly sessionTtl?: Duration.DurationInput
  /** How expensive requests share the server (`Fairness.DEFAULTS` by default). */
  readonly fairness?: Partial<Fairness.Options>
}

export const ADMIN_USERNAME = "admin"
export const ADMIN_PASSWORD = "tenet-test-admin-password"

export { VERSION } from "./Server.js"

export const layer = (options: Options = {}) => {
  const memory = MemoryPorts.layer({ scryptLogN: 10, ...options.platform })
  const ports = Layer.mergeAll(memory, options.store ?? Layer.empty, options.orchestrator ?? Layer.empty)
  const decorated = options.storeDecorator === undefined
    ? ports
    : options.storeDecorator.pipe(Layer.provideMerge(ports))
  const platform = Layer.provideMerge(Leadership.Leadership.fromStore, decorated)
  return Server.layer({
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    adminUsername: options.adminUsername ?? ADMIN_USERNAME,
    adminPassword: Option.some(Redacted.make(options.adminPassword ?? ADMIN_PASSWORD)),
    reconcileInterval: options.reconcileInterval ?? Duration.hours(1),
    controller: { resync: Duration.hours(1), ...options.controller },
    applyWait: options.applyWait ?? Duration.seconds(15),
    ...(options.watch === undefined ? {} : { watch: options.watch }),
    ...(options.shutdownGrace === undefined ? {} : { shutdownGrace: options.shutdownGrace }),
    ...(options.sessionTtl === undefined ? {} : { sessionTtl: options.sessionTtl }),
    ...(options.fairness === undefined ? {} : { fairness: options.fairness })
  }).pipe(
    Layer.provide(
      options.loginThrottle === undefined
        ? Layer.empty
        : Layer.succeed(Identity.LoginThrottling, options.loginThrottle)
    ),
    Layer.provide(
      Layer.succeed(ServerInfo.ServerInfo, { publicUrl: "http://127.0.0.1:8080", version: Server.VERSION })
    ),
    Layer.provideMerge(platform),
    Layer.provideMerge(
      // NodeHttpServer.layerTest, with the server's own timeouts.
      HttpServer.layerTestClient.pipe(
        Layer.provide(NodeHttpClient.layerWithoutAgent),
        Layer.provide(NodeHttpClient.makeAgentLayer({ keepAlive: false })),
        Layer.provideMerge(
          Server.listen({ requestTimeout: options.requestTimeout ?? Duration.seconds(30), host: "127.0.0.1", port: 0 })
        )
      )
    ),
    Layer.provide(Logger.minimumLogLevel(options.logLevel ?? LogLevel.Warning))
  )
}
