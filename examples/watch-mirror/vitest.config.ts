import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "example-watch-mirror",
    include: ["test/**/*.test.ts"]
  }
})
