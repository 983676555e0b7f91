import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "adapters-postgres",
    include: ["test/**/*.test.ts"],
    // Each embedded test starts a PGlite (~3 s, more under load).
    testTimeout: 60_000,
    benchmark: { include: ["bench/**/*.bench.ts"] }
  }
})
