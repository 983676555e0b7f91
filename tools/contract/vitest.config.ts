import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "contract",
    include: ["test/**/*.test.ts"]
  }
})
