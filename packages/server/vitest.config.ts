import { configDefaults } from "vitest/config"
import { project } from "../../vitest.shared.js"

/** Tests that choose their own store: run once, in the plain server project. */
export const storeSpecific = [
  "test/Postgres.test.ts",
  "test/Restart.test.ts",
  "test/Connections.test.ts",
  "test/Shutdown.test.ts",
  "test/PgOutage.test.ts",
  "test/Failover.test.ts",
  "test/InterruptedDelete.test.ts",
  "test/RollingUpgrade.test.ts",
  "test/DataDirectory.test.ts",
  "test/FullDisk.test.ts",
  "test/ReadConsistency.test.ts",
  "test/Walkthrough.test.ts",
  "test/WritePath.test.ts",
  "test/Invariants.test.ts",
  "test/StaleBatch.test.ts",
  "test/KubernetesReal.test.ts",
  "test/ClusterDrift.test.ts",
  "test/ClusterWiped.test.ts"
]

/**
 * Tests whose subject is neither the store nor the cluster: run once, in the plain server project.
 * Docs: the docs' commands and the contract; Traffic: the engine's answers through the API, held
 * to the reference interpreter (the stores hand the engine the same records); StrictInput:
 * unknown fields and parameters, refused before any store or cluster is asked; Endpoints: the
 * router; Deployment and Operations: files that ship (the manifests, the alert rules); Packets:
 * what the renderer makes, on OVN's data plane (the stores hand the renderer the same specs). The others
 * never build a server on the store or cluster under test, so every project would run them alike:
 * StartupFailure and MetricsAtStart start the binary with settings of their own; ProcessLifecycle
 * is the shutdown deadline alone.
 */
export const storeAgnostic = [
  "test/Docs.test.ts",
  "test/NewKind.test.ts",
  "test/Traffic.test.ts",
  "test/StartupFailure.test.ts",
  "test/MetricsAtStart.test.ts",
  "test/ProcessLifecycle.test.ts",
  "test/StrictInput.test.ts",
  "test/Endpoints.test.ts",
  "test/Deployment.test.ts",
  "test/Operations.test.ts",
  "test/Packets.test.ts"
]

/** Tests that read or switch the simulated cluster, or bring a cluster of their own. */
export const clusterSpecific = [
  "test/Faults.test.ts",
  "test/Metrics.test.ts",
  "test/Networks.test.ts",
  "test/Pods.test.ts",
  "test/Reconciler.test.ts",
  "test/RegistryCredentials.test.ts",
  "test/SecurityRules.test.ts",
  "test/Topology.test.ts",
  "test/Kubernetes.test.ts",
  "test/ClusterController.test.ts",
  "test/Convergence.test.ts"
]

/**
 * What `pnpm test:quick` (TENET_TEST_QUICK=1) leaves out of the API suite on the memory store:
 * the files that choose a store of their own or start Tenet, or the docs' commands, as processes.
 */
const slow = [...storeSpecific, "test/Docs.test.ts", "test/StartupFailure.test.ts", "test/MetricsAtStart.test.ts"]

export default project({
  test: {
    name: "server",
    include: ["test/**/*.test.ts"],
    exclude: process.env.TENET_TEST_QUICK === "1" ? [...configDefaults.exclude, ...slow] : configDefaults.exclude,
    benchmark: { include: ["bench/**/*.bench.ts"] }
  }
})
