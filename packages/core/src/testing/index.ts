/**
 * Contract suites for the ports, for any adapter's tests (`@effect/vitest` required):
 * `StoreContract.run("postgres", () => PgStore.layer(...))`; and the reference interpreter of
 * the rules (`Reference.verdict`), for properties over the engine or the API.
 */
export * as EdgeTunnelsContract from "./EdgeTunnelsContract.js"
export * as Fixtures from "./Fixtures.js"
export * as OperationsLogContract from "./OperationsLogContract.js"
export * as OrchestratorContract from "./OrchestratorContract.js"
export * as Reference from "./Reference.js"
export * as StoreContract from "./StoreContract.js"
