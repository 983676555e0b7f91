import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "adapters-postgres",
    include: ["test/**/*.test.ts"],
    benchmark: { include: ["bench/**/*.bench.ts"] }
  }
})
