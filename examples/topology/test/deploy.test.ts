import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { TestServer } from "@tenet/server"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { deploy, describe } from "../src/deploy.js"

const topology = JSON.parse(readFileSync(new URL("../topology.json", import.meta.url), "utf8"))

layer(TestServer.layer(), { excludeTestServices: true })("topology example", (it) => {
  it.effect("deploys the example file and describes every VPC, subnet and pod", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const port = server.address._tag === "TcpAddress" ? server.address.port : 0
      const view = yield* deploy(
        {
          baseUrl: `http://127.0.0.1:${port}`,
          adminUsername: TestServer.ADMIN_USERNAME,
          adminPassword: TestServer.ADMIN_PASSWORD
        },
        topology,
        "example-test"
      )
      const lines = describe(view)
      expect(lines.filter((l) => l.startsWith("VPC "))).toHaveLength(2)
      expect(lines.filter((l) => l.trim().startsWith("pod ")).every((l) => l.includes(": running"))).toBe(true)
      expect(lines.join("\n")).toContain("pod storefront nginx:1.27: running, 2/2 ready")
    }))
})
