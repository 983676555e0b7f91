import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "example-topology",
    include: ["test/**/*.test.ts"]
  }
})
