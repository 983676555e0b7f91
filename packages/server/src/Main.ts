/**
 * The server as a program: configuration from the environment, the backends it names, a
 * Node HTTP listener, JSON logs, and one startup line saying where it listens and on what.
 */
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { MemoryOperationsLog, MemoryStore, SimulatedCluster, SimulatedEdge } from "@tenet/adapters-memory"
import { EdgeTunnels, Orchestrator, ServerInfo, Store } from "@tenet/core"
import { NodeVault } from "@tenet/core/node"
import { Console, Effect, Either, Layer, Logger, Option, Redacted } from "effect"
import { createServer } from "node:http"
import { ServerConfig } from "./Config.js"
import * as Server from "./Server.js"

const vaultLayer = (key: Option.Option<Redacted.Redacted<string>>) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    if (Option.isSome(key)) {
      const parsed = NodeVault.parseKey(Redacted.value(key.value))
      if (Either.isLeft(parsed)) return yield* Effect.dieMessage(`TENET_ENCRYPTION_KEY: ${parsed.left}`)
      return NodeVault.layer({ key: parsed.right })
    }
    yield* Effect.logWarning(
      "TENET_ENCRYPTION_KEY is not set: using a random key for this process (fine for the memory store, " +
        "whose data ends with the process)"
    )
    return NodeVault.layer({ key: NodeVault.parseKeyOrThrow(NodeVault.generateKey()) })
  }))

/** The backends `TENET_STORE` selects. */
const backends = (config: ServerConfig) => {
  switch (config.store) {
    case "memory":
      return Layer.mergeAll(
        MemoryStore.layer,
        MemoryOperationsLog.layer(),
        SimulatedCluster.layer({ serviceCidr: config.serviceCidr }),
        SimulatedEdge.layer,
        vaultLayer(config.encryptionKey)
      )
  }
}

const announce = (config: ServerConfig, publicUrl: string) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const store = yield* Store.Store
    const orchestrator = yield* Orchestrator.Orchestrator
    const edge = yield* EdgeTunnels.EdgeTunnels
    const url = server.address._tag === "TcpAddress"
      ? `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${server.address.port}`
      : publicUrl
    yield* Console.log(
      `Tenet ${Server.VERSION} listening on ${url} (docs ${url}/docs) - store: ${store.backend}, ` +
        `orchestrator: ${orchestrator.backend}, tunnels: ${edge.backend}`
    )
  }))

export const MainLive = Layer.unwrapEffect(Effect.gen(function*() {
  const config = yield* ServerConfig
  const publicUrl = Option.getOrElse(config.publicUrl, () => `http://${config.host}:${config.port}`)
  const ports = backends(config)
  return Layer.mergeAll(
    Server.layer(config),
    announce(config, publicUrl)
  ).pipe(
    Layer.provide(Layer.succeed(ServerInfo.ServerInfo, { publicUrl, version: Server.VERSION })),
    Layer.provide(ports),
    Layer.provide(NodeHttpServer.layer(createServer, { host: config.host, port: config.port })),
    Layer.provide(Logger.minimumLogLevel(config.logLevel)),
    Layer.provide(Logger.json)
  )
}))
