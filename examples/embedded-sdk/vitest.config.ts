import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "example-embedded-sdk",
    include: ["test/**/*.test.ts"]
  }
})
