import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "console",
    include: ["test/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
