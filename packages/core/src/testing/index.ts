/**
 * Contract suites for the ports, for any adapter's tests (`@effect/vitest` required):
 * `StoreContract.run("postgres", () => PgStore.layer(...))`.
 */
export * as EdgeTunnelsContract from "./EdgeTunnelsContract.js"
export * as Fixtures from "./Fixtures.js"
export * as OperationsLogContract from "./OperationsLogContract.js"
export * as OrchestratorContract from "./OrchestratorContract.js"
export * as StoreContract from "./StoreContract.js"
