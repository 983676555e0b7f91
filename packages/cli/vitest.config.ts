import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "cli",
    include: ["test/**/*.test.ts"]
  }
})
