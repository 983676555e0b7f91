import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "example-quickstart",
    include: ["test/**/*.test.ts"]
  }
})
