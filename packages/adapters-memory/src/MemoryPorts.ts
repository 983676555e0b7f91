/**
 * Every port in one process, as one Layer: the in-memory store and operations log,
 * the simulated cluster and tunnel provider (with their switches), and a vault with a
 * random key. Tenants use it to test their own automation; Tenet's tests use it too.
 */
import type { EdgeTunnels, OperationsLog, Orchestrator, Store, Vault } from "@tenet/core"
import { NodeVault } from "@tenet/core/node"
import { Layer } from "effect"
import * as MemoryOperationsLog from "./MemoryOperationsLog.js"
import * as MemoryStore from "./MemoryStore.js"
import * as SimulatedCluster from "./SimulatedCluster.js"
import * as SimulatedEdge from "./SimulatedEdge.js"

export interface Options {
  readonly cluster?: SimulatedCluster.Options
  /**
   * log2 of scrypt's cost for password hashes. Tests may lower it (10 is ~1 ms) to keep many
   * logins fast; the default is the production cost.
   */
  readonly scryptLogN?: number
  /**
   * The vault's key (`NodeVault.generateKey()`'s form); a new one by default. Servers sharing
   * a store (replicas on one database) must share it, as deployed ones share `TENET_ENCRYPTION_KEY`.
   */
  readonly vaultKey?: string
}

/** Every port of the platform, plus the switches of the store, cluster and provider. */
export type Services =
  | Store.Store
  | OperationsLog.OperationsLog
  | Orchestrator.Orchestrator
  | EdgeTunnels.EdgeTunnels
  | Vault.Vault
  | MemoryStore.StoreSwitches
  | SimulatedCluster.ClusterSwitches
  | SimulatedEdge.EdgeSwitches

export const layer = (options: Options = {}): Layer.Layer<Services> =>
  Layer.mergeAll(
    MemoryStore.layer,
    MemoryOperationsLog.layer(),
    SimulatedCluster.layer(options.cluster),
    SimulatedEdge.layer,
    NodeVault.layer({
      key: NodeVault.parseKeyOrThrow(options.vaultKey ?? NodeVault.generateKey()),
      ...(options.scryptLogN === undefined ? {} : { scryptLogN: options.scryptLogN })
    })
  )
