import { project } from "../../vitest.shared.js"
import { once, slow } from "./vitest.config.js"

/** The server's files that run once, not per store (the lists and why: vitest.config.ts). */
export default project({
  test: {
    name: "server-once",
    // The threads lane (see the root vitest.config.ts).
    pool: "threads",
    include: process.env.TENET_TEST_QUICK === "1" ? once.filter((file) => !slow.includes(file)) : once
  }
})
