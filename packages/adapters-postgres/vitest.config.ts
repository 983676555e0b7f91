import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "adapters-postgres",
    include: ["test/**/*.test.ts"],
    // Each embedded test starts a PGlite (~3 s, more under load).
    testTimeout: 60_000,
    benchmark: { include: ["bench/**/*.bench.ts"] }
  }
})
