import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "example-topology",
    include: ["test/**/*.test.ts"]
  }
})
