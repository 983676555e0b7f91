/**
 * The server as a program: configuration from the environment, the backends it names, a
 * Node HTTP listener, JSON logs, and one startup line saying where it listens and on what.
 */
import { FetchHttpClient, HttpMiddleware, HttpServer } from "@effect/platform"
import { MemoryOperationsLog, MemoryStore, SimulatedCluster, SimulatedEdge } from "@tenet/adapters-memory"
import type { OperationsLog } from "@tenet/core"
import { EdgeTunnels, Leadership, Orchestrator, ServerInfo, Store } from "@tenet/core"
import { NodeVault } from "@tenet/core/node"
import { Cause, Duration, Effect, Either, Layer, Logger, Option, Redacted } from "effect"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { ServerConfig, tracesUrl, TracingConfig } from "./Config.js"
import * as JsonLogs from "./JsonLogs.js"
import * as ProcessLifecycle from "./ProcessLifecycle.js"
import * as Server from "./Server.js"
import * as StartupFailure from "./StartupFailure.js"

const parseKeyOrDie = (text: string, source: string) =>
  Either.match(NodeVault.parseKey(text), {
    onLeft: (message) => Effect.dieMessage(`${source}: ${message}`),
    onRight: Effect.succeed
  })

/**
 * The key that encrypts stored secrets: TENET_ENCRYPTION_KEY when set. Otherwise the embedded
 * store keeps one in its data directory (generated on first start), the memory store uses a
 * random one (its data ends with the process), and PostgreSQL refuses to start.
 */
const vaultLayer = (config: ServerConfig) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    if (Option.isSome(config.encryptionKey)) {
      return NodeVault.layer({
        key: yield* parseKeyOrDie(Redacted.value(config.encryptionKey.value), "TENET_ENCRYPTION_KEY")
      })
    }
    switch (config.store) {
      case "memory":
        return NodeVault.layer({ key: NodeVault.parseKeyOrThrow(NodeVault.generateKey()) })
      case "postgres":
        // A random key would make every stored secret unreadable after a restart.
        return yield* Effect.dieMessage(
          "TENET_ENCRYPTION_KEY is required with TENET_STORE=postgres: 32 bytes as 64 hex characters or base64 " +
            "(e.g. `openssl rand -base64 32`); keep it with your backups"
        )
      case "embedded": {
        const file = join(config.dataDir, "encryption.key")
        if (existsSync(file)) return NodeVault.layer({ key: yield* parseKeyOrDie(readFileSync(file, "utf8"), file) })
        mkdirSync(config.dataDir, { recursive: true })
        writeFileSync(file, `${NodeVault.generateKey()}\n`, { mode: 0o600, flag: "wx" })
        yield* Effect.logWarning(
          `generated an encryption key in ${file}: stored secrets need it, so back it up with the data directory ` +
            "(or set TENET_ENCRYPTION_KEY)"
        )
        return NodeVault.layer({ key: yield* parseKeyOrDie(readFileSync(file, "utf8"), file) })
      }
    }
  }))

/**
 * The PostgreSQL and Kubernetes adapters (with their drivers) are imported only when the
 * configuration names them: loading them costs about half a second of every start.
 */
const postgres = Effect.promise(() => import("@tenet/adapters-postgres"))
const kubernetes = Effect.promise(() => import("@tenet/adapters-k8s"))

/** The Store and OperationsLog `TENET_STORE` selects. */
const storeLayer = (config: ServerConfig): Layer.Layer<Store.Store | OperationsLog.OperationsLog> => {
  switch (config.store) {
    case "memory":
      return Layer.merge(MemoryStore.layer, MemoryOperationsLog.layer())
    case "embedded":
      return Layer.unwrapEffect(
        Effect.map(
          postgres,
          ({ PgEmbedded }) => Layer.orDie(PgEmbedded.layer({ dataDir: join(config.dataDir, "pgdata") }))
        )
      )
    case "postgres":
      return Option.match(config.databaseUrl, {
        onNone: () => Layer.die(new Cause.RuntimeException("TENET_DATABASE_URL is required with TENET_STORE=postgres")),
        onSome: (url) =>
          Layer.unwrapEffect(Effect.map(postgres, ({ PgDatabase }) =>
            PgDatabase.layer({ url }).pipe(
              Layer.catchAll((error) => Layer.die(StartupFailure.cannotUseDatabase(Redacted.value(url))(error)))
            )))
      })
  }
}

/**
 * The cluster and the tunnel provider: simulated in process, or a Kube-OVN cluster and the
 * provider's API. One replica leads the controller: by a Lease on Kubernetes, by the store's
 * lock otherwise.
 */
const clusterLayer = (config: ServerConfig) => {
  if (config.orchestrator === "simulated") {
    return Layer.mergeAll(
      SimulatedCluster.layer({ serviceCidr: config.serviceCidr }),
      Leadership.Leadership.fromStore,
      config.tunnels === "simulated"
        ? SimulatedEdge.layer
        : Layer.die(
          new Cause.RuntimeException(
            "TENET_TUNNELS=edge needs TENET_ORCHESTRATOR=kubernetes: tunnel connectors run in the cluster"
          )
        )
    )
  }
  const settings = { externalSubnet: config.kubeOvnExternalSubnet, peeringSubnet: config.kubeOvnPeeringSubnet }
  return Layer.unwrapEffect(
    Effect.map(kubernetes, ({ CloudflareEdge, KubeApi, KubeLease, KubeOrchestrator }) =>
      Layer.mergeAll(
        KubeOrchestrator.layer({ settings }),
        KubeLease.layer({ namespace: config.namespace }),
        config.tunnels === "simulated"
          ? SimulatedEdge.layer
          : CloudflareEdge.layer({ api: { baseUrl: config.edgeApiUrl }, settings, platformNamespace: config.namespace })
            .pipe(
              Layer.provide(FetchHttpClient.layer)
            )
      ).pipe(Layer.provide(Layer.orDie(KubeApi.layer))))
  )
}

/** The backends the configuration selects. */
const backends = (config: ServerConfig) =>
  Layer.merge(clusterLayer(config).pipe(Layer.provideMerge(storeLayer(config))), vaultLayer(config))

const announce = (config: ServerConfig, publicUrl: string) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const store = yield* Store.Store
    const orchestrator = yield* Orchestrator.Orchestrator
    const edge = yield* EdgeTunnels.EdgeTunnels
    const leadership = yield* Leadership.Leadership
    const url = server.address._tag === "TcpAddress"
      ? `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${server.address.port}`
      : publicUrl
    yield* Effect.logInfo(`Tenet ${Server.VERSION} listening on ${url} (console ${url}/console, docs ${url}/docs)`)
      .pipe(
        Effect.annotateLogs({
          store: store.backend,
          orchestrator: orchestrator.backend,
          tunnels: edge.backend,
          leadership: leadership.backend
        })
      )
  }))

/** The metrics listener, when `TENET_METRICS_PORT` names a port (its exporter loaded only then). */
const metrics = (config: ServerConfig) =>
  Option.match(config.metricsPort, {
    onNone: () => Layer.empty,
    onSome: (port) =>
      Layer.unwrapEffect(Effect.map(Effect.promise(() => import("./MetricsListener.js")), (MetricsListener) =>
        MetricsListener.layer({
          host: Option.getOrElse(config.metricsHost, () => config.host),
          port,
          version: Server.VERSION
        })))
  })

/**
 * Traces exported over OTLP when OpenTelemetry's environment names an endpoint (the exporter
 * loaded only then). Otherwise no spans are recorded at all: the binary would export none, and
 * recording them costs a quarter of a cheap request (measured).
 */
const tracing = (version: string) =>
  Effect.map(
    TracingConfig,
    (config): <A, E>(layer: Layer.Layer<A, E>) => Layer.Layer<A, E> =>
      Option.match(tracesUrl(config), {
        onNone: () => <A, E>(layer: Layer.Layer<A, E>) =>
          layer.pipe(Layer.provide(Layer.setTracerEnabled(false)), HttpMiddleware.withTracerDisabledWhen(() => true)),
        onSome: (url) => <A, E>(layer: Layer.Layer<A, E>) =>
          layer.pipe(
            Layer.provide(
              Layer.unwrapEffect(Effect.map(
                Effect.promise(() => import("./Tracing.js")),
                (Tracing) => Tracing.layer({ url, config, version })
              ))
            )
          )
      })
  )

/** Past the grace period: interrupted requests unwinding, connections and the store closing. */
const SHUTDOWN_MARGIN = Duration.seconds(10)

export const MainLive = Layer.unwrapEffect(Effect.gen(function*() {
  const config = yield* ServerConfig
  const traced = yield* tracing(Server.VERSION)
  const publicUrl = Option.getOrElse(config.publicUrl, () => `http://${config.host}:${config.port}`)
  const ports = backends(config)
  // The backends are built first and released last: requests still draining at shutdown use them.
  // The deadline wraps everything, so its timer starts as soon as shutdown does.
  return announce(config, publicUrl).pipe(
    Layer.provideMerge(metrics(config)),
    // Announced once the app serves requests, not merely once the socket listens.
    Layer.provideMerge(Server.layer({ ...config, adminPasswordFile: join(config.dataDir, "admin-password") })),
    Layer.provide(Layer.succeed(ServerInfo.ServerInfo, { publicUrl, version: Server.VERSION })),
    Layer.provide(
      Server.listen({ requestTimeout: config.requestTimeout, host: config.host, port: config.port }).pipe(
        Layer.catchAll((error) => Layer.die(StartupFailure.cannotListen("TENET_PORT", config.host, config.port)(error)))
      )
    ),
    Layer.provide(ports),
    Layer.provide(Logger.minimumLogLevel(config.logLevel)),
    Layer.provide(JsonLogs.layer),
    traced,
    ProcessLifecycle.withDeadline(Duration.sum(config.shutdownGrace, SHUTDOWN_MARGIN))
  )
}))
