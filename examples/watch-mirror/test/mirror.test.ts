import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { PromiseClient } from "@tenet/client"
import { TestServer } from "@tenet/server"
import { Effect } from "effect"
import { follow } from "../src/mirror.js"

layer(TestServer.layer(), { excludeTestServices: true })("watch-mirror example", (it) => {
  it.effect("the mirror holds what was listed and every change after, without polling", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const baseUrl = `http://127.0.0.1:${server.address._tag === "TcpAddress" ? server.address.port : 0}`
      const result = yield* Effect.promise(async () => {
        const admin = await PromiseClient.loginAdmin({
          baseUrl,
          username: TestServer.ADMIN_USERNAME,
          password: TestServer.ADMIN_PASSWORD
        })
        await admin.tenants.create({ payload: { name: "mirror-test", password: "mirror-password" } })
        await admin.close()
        const tenet = await PromiseClient.loginTenant({ baseUrl, name: "mirror-test", password: "mirror-password" })
        // Some VPCs before the mirror starts (it lists them), more after (it watches them).
        for (let i = 0; i < 3; i++) await tenet.vpcs.create({ payload: { name: `old-${i}`, enable_internet: false } })
        const lines: Array<string> = []
        const mirror = await follow(tenet, (line) => lines.push(line))
        const fresh = await tenet.vpcs.create({ payload: { name: "new", enable_internet: false } })
        const old = (await tenet.vpcs.list()).find((v) => v.name === "old-0")!
        await tenet.vpcs.delete({ path: { vpc_id: old.id } })
        const deadline = Date.now() + 5000
        while (Date.now() < deadline && (mirror.vpcs.has(old.id) || !mirror.vpcs.has(fresh.id))) {
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
        const names = [...mirror.vpcs.values()].sort()
        const listed = (await tenet.vpcs.list()).map((v) => v.name).sort()
        await mirror.stop()
        await tenet.close()
        return { names, listed, lines }
      })
      expect(result.names).toEqual(["new", "old-1", "old-2"])
      expect(result.names).toEqual(result.listed)
      expect(result.lines[0]).toMatch(/^listed 3 VPCs; watching from revision \d+$/)
      expect(result.lines).toContainEqual(expect.stringMatching(/^DELETED vpc old-0 \(revision \d+\)$/))
    }))
})
