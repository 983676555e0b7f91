import { defineConfig } from "vitest/config"
import { clusterSpecific, storeAgnostic, storeSpecific } from "./packages/server/vitest.config.js"

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
      "tools/*",
      // The whole API suite once more on embedded PostgreSQL (PGlite).
      {
        extends: "./packages/server/vitest.config.ts",
        root: "./packages/server",
        test: {
          name: "server-on-embedded",
          env: { TENET_TEST_STORE: "embedded" },
          exclude: [...storeSpecific, ...storeAgnostic],
          benchmark: { include: [] }
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
          benchmark: { include: [] }
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
