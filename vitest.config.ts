import { defineConfig } from "vitest/config"

/** Tests that choose their own store: run once, in the plain server project. */
const storeSpecific = [
  "test/Postgres.test.ts",
  "test/Restart.test.ts",
  "test/Connections.test.ts",
  "test/Shutdown.test.ts",
  "test/PgOutage.test.ts",
  "test/DataDirectory.test.ts",
  "test/FullDisk.test.ts",
  "test/ReadConsistency.test.ts",
  "test/Walkthrough.test.ts",
  "test/WritePath.test.ts",
  "test/KubernetesReal.test.ts"
]

/**
 * Tests whose subject is neither the store nor the cluster: run once, in the plain server project.
 * Docs: the docs' commands and the contract; Traffic: the engine's answers through the API, held
 * to the reference interpreter (the stores hand the engine the same records). The others never
 * build a server on the store or cluster under test, so every project would run them alike:
 * StartupFailure and MetricsAtStart start the binary with settings of their own; ProcessLifecycle
 * is the shutdown deadline alone.
 */
const storeAgnostic = [
  "test/Docs.test.ts",
  "test/Traffic.test.ts",
  "test/StartupFailure.test.ts",
  "test/MetricsAtStart.test.ts",
  "test/ProcessLifecycle.test.ts"
]

/** Tests that read or switch the simulated cluster, or bring a cluster of their own. */
const clusterSpecific = [
  "test/Faults.test.ts",
  "test/Metrics.test.ts",
  "test/Networks.test.ts",
  "test/Pods.test.ts",
  "test/Reconciler.test.ts",
  "test/RegistryCredentials.test.ts",
  "test/SecurityRules.test.ts",
  "test/Topology.test.ts",
  "test/Kubernetes.test.ts"
]

export default defineConfig({
  test: {
    // Files run two at a time: much of a file's time is spent waiting on processes it started
    // (servers, PostgreSQL, kube-apiserver), which the other file's worker fills.
    maxWorkers: 2,
    minWorkers: 1,
    // A worker runs many files of one project, importing their modules once (see
    // vitest.shared.ts); projects then run one after another.
    isolate: false,
    projects: [
      "packages/*",
      "test/*",
      "examples/*",
      // The whole API suite once more on embedded PostgreSQL (PGlite).
      {
        extends: "./packages/server/vitest.config.ts",
        root: "./packages/server",
        test: {
          name: "server-on-embedded",
          env: { TENET_TEST_STORE: "embedded" },
          exclude: [...storeSpecific, ...storeAgnostic],
          benchmark: { include: [] },
          testTimeout: 60_000,
          hookTimeout: 60_000
        }
      },
      // The API suite once more on a real Kubernetes API server (one LocalCluster for the
      // project, started by its global setup), when one is built (.ci/run sets
      // TENET_KUBE_APISERVER).
      ...(process.env.TENET_KUBE_APISERVER === undefined ? [] : [{
        extends: "./packages/server/vitest.config.ts",
        root: "./packages/server",
        test: {
          name: "server-on-kubernetes",
          env: { TENET_TEST_ORCHESTRATOR: "kubernetes" },
          globalSetup: ["./test/ClusterSetup.ts"],
          exclude: [...storeSpecific, ...storeAgnostic, ...clusterSpecific],
          benchmark: { include: [] },
          testTimeout: 60_000,
          hookTimeout: 120_000
        }
      }]),
      // The whole API suite once more on PostgreSQL, when a server is given.
      ...(process.env.TENET_TEST_DATABASE_URL === undefined ? [] : [{
        extends: "./packages/server/vitest.config.ts",
        root: "./packages/server",
        test: {
          name: "server-on-postgres",
          env: { TENET_TEST_STORE: "postgres" },
          exclude: [...storeSpecific, ...storeAgnostic],
          benchmark: { include: [] }
        }
      }])
    ]
  }
})
