import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "adapters-k8s",
    include: ["test/**/*.test.ts"],
    benchmark: { include: ["bench/**/*.bench.ts"] }
  }
})
