import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "example-tenant-integration-test",
    include: ["test/**/*.test.ts"]
  }
})
