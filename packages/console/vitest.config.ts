import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "console",
    // The threads lane (see the root vitest.config.ts).
    pool: "threads",
    include: ["test/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
