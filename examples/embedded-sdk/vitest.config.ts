import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "example-embedded-sdk",
    include: ["test/**/*.test.ts"]
  }
})
