import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "consumer",
    // Its files mostly wait on what they start (processes, databases): they run in the threads
    // pool, beside the forks pool of the API suite (a pool runs its projects one at a time).
    pool: "threads",
    include: ["*.test.ts"],
    // npm installs and server starts: slow by nature, and each step depends on the last.
    testTimeout: 180_000,
    hookTimeout: 600_000
  }
})
