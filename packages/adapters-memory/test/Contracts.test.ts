import { MemoryOperationsLog, MemoryStore, SimulatedCluster, SimulatedEdge } from "@tenet/adapters-memory"
import { ReadModel } from "@tenet/core"
import { EdgeTunnelsContract, OperationsLogContract, OrchestratorContract, StoreContract } from "@tenet/core/testing"
import { Layer } from "effect"

StoreContract.run("memory", () => MemoryStore.layer)
StoreContract.run("memory, through the read model", () => ReadModel.layer().pipe(Layer.provide(MemoryStore.layer)))
OperationsLogContract.run("memory", () => MemoryOperationsLog.layer())
OrchestratorContract.run("simulated", () => SimulatedCluster.layer())
EdgeTunnelsContract.run("simulated", () => SimulatedEdge.layer)
