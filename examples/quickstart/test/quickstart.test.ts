import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { TestServer } from "@tenet/server"
import { Effect } from "effect"
import { quickstart } from "../src/quickstart.js"

layer(TestServer.layer(), { excludeTestServices: true })("quickstart example", (it) => {
  it.effect("walks the whole tour and prints what runs", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const port = server.address._tag === "TcpAddress" ? server.address.port : 0
      const lines: Array<string> = []
      const result = yield* Effect.promise(() =>
        quickstart(
          {
            baseUrl: `http://127.0.0.1:${port}`,
            adminUsername: TestServer.ADMIN_USERNAME,
            adminPassword: TestServer.ADMIN_PASSWORD
          },
          "quickstart-test",
          (line) => lines.push(line)
        )
      )
      expect(result.pod.status.phase).toBe("running")
      expect(result.tunnel).toMatchObject({ hostname: "shop.apps.example.com", status: "active" })
      expect(result.verdict.reach).toBe("allowed")
      expect(lines).toContain("tcp/443 from 198.51.100.7: allowed")
      // Everything but the VPC's own block (its seeded rule lets that in already) and the core network.
      expect(lines).toContain(
        "preview of 'https in': opens tcp/443 from 0.0.0.0/0 except 10.0.1.0/24, 100.64.0.0/16, closes 0 regions"
      )
      expect(lines).toContain("internet -> pod storefront: tcp 443, udp none")
      expect(lines).toContain("again: you already have a VPC named 'prod'")
    }))
})
