import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "consumer",
    // The threads lane (see the root vitest.config.ts).
    pool: "threads",
    include: ["*.test.ts"],
    // npm installs and server starts: slow by nature, and each step depends on the last.
    testTimeout: 180_000,
    hookTimeout: 600_000
  }
})
