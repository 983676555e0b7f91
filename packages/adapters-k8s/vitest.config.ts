import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "adapters-k8s",
    // The threads lane (see the root vitest.config.ts).
    pool: "threads",
    include: ["test/**/*.test.ts"],
    benchmark: { include: ["bench/**/*.bench.ts"] }
  }
})
