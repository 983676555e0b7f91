/**
 * Tenet embedded in a host control plane: the use-cases of `@tenet/core` over ports the host
 * chooses. Here the store, operations log, vault and tunnel provider come from the memory
 * platform, and the cluster is the host's own driver, layered over the memory one.
 */
import { MemoryPorts } from "@tenet/adapters-memory"
import { ServerInfo, UseCases } from "@tenet/core"
import { Layer } from "effect"
import * as HostCluster from "./HostCluster.js"

/** Where the host is reached: the default target of platform service tunnels. */
const hostInfo = Layer.succeed(ServerInfo.ServerInfo, { publicUrl: "https://control.example.com", version: "embedded" })

export const layer = UseCases.layer.pipe(
  // Later layers win: the host's driver replaces the simulated cluster.
  Layer.provideMerge(Layer.mergeAll(MemoryPorts.layer(), HostCluster.layer(), hostInfo))
)
