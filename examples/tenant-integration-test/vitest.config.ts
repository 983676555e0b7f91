import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "example-tenant-integration-test",
    include: ["test/**/*.test.ts"]
  }
})
