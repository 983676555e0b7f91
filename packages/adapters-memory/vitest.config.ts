import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "adapters-memory",
    include: ["test/**/*.test.ts"],
    benchmark: { include: ["bench/**/*.bench.ts"] }
  }
})
