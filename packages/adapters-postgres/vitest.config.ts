import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "adapters-postgres",
    include: ["test/**/*.test.ts"],
    benchmark: { include: ["bench/**/*.bench.ts"] }
  }
})
