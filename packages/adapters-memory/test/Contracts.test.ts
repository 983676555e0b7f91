import { MemoryOperationsLog, MemoryStore, SimulatedCluster, SimulatedEdge } from "@tenet/adapters-memory"
import { EdgeTunnelsContract, OperationsLogContract, OrchestratorContract, StoreContract } from "@tenet/core/testing"

StoreContract.run("memory", () => MemoryStore.layer)
OperationsLogContract.run("memory", () => MemoryOperationsLog.layer())
OrchestratorContract.run("simulated", () => SimulatedCluster.layer())
EdgeTunnelsContract.run("simulated", () => SimulatedEdge.layer)
