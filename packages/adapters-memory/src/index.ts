/** @tenet/adapters-memory: the whole Tenet platform in memory, with fault injection. */
export * as MemoryOperationsLog from "./MemoryOperationsLog.js"
export * as MemoryPorts from "./MemoryPorts.js"
export * as MemoryStore from "./MemoryStore.js"
export * as SimulatedCluster from "./SimulatedCluster.js"
export * as SimulatedEdge from "./SimulatedEdge.js"
