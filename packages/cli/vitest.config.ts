import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "cli",
    // Its files mostly wait on what they start (processes, databases): they run in the threads
    // pool, beside the forks pool of the API suite (a pool runs its projects one at a time).
    pool: "threads",
    include: ["test/**/*.test.ts"]
  }
})
