import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    projects: [
      "packages/*",
      "examples/*",
      // The whole API suite once more on PostgreSQL, when a server is given.
      ...(process.env.TENET_TEST_DATABASE_URL === undefined ? [] : [{
        extends: "./packages/server/vitest.config.ts",
        root: "./packages/server",
        test: { name: "server-on-postgres", env: { TENET_TEST_STORE: "postgres" } }
      }])
    ]
  }
})
