import { HttpServer } from "@effect/platform"
import { expect, it, layer } from "@effect/vitest"
import { TestServer } from "@tenet/server"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { deploy, describe, describePlan } from "../src/deploy.js"

const topology = JSON.parse(readFileSync(new URL("../topology.json", import.meta.url), "utf8"))

layer(TestServer.layer(), { excludeTestServices: true })("topology example", (it) => {
  it.effect("deploys the example file and describes every VPC, subnet and pod", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const port = server.address._tag === "TcpAddress" ? server.address.port : 0
      const { plan, view } = yield* deploy(
        {
          baseUrl: `http://127.0.0.1:${port}`,
          adminUsername: TestServer.ADMIN_USERNAME,
          adminPassword: TestServer.ADMIN_PASSWORD
        },
        topology,
        "example-test"
      )
      // The preview: each new VPC's seeded rule opens its internal traffic, from its own blocks.
      expect(describePlan(plan)).toEqual([
        "would create 2 VPCs, 3 subnets, 3 pods",
        expect.stringMatching(
          /^ {2}VPC shop would open \d+ regions \(from [^)]*10\.10\.1\.\d+\/\d+[^)]*\) and close 0$/
        ),
        expect.stringMatching(
          /^ {2}VPC data would open \d+ regions \(from [^)]*10\.20\.0\.\d+\/\d+[^)]*\) and close 0$/
        )
      ])
      expect(plan.created.pods.map((p) => p.name)).toEqual(["storefront", "orders", "postgres"])
      const lines = describe(view)
      expect(lines.filter((l) => l.startsWith("VPC "))).toHaveLength(2)
      expect(lines.filter((l) => l.trim().startsWith("pod ")).every((l) => l.includes(": running"))).toBe(true)
      expect(lines.join("\n")).toContain("pod storefront nginx:1.27: running, 2/2 ready")
    }))
})

// What a newcomer types at the repository root: the file is theirs, not the example's.
it("`pnpm --filter @tenet/example-topology start <file>` deploys the file it is given", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tenet-topology-"))
  writeFileSync(
    join(dir, "solo.json"),
    JSON.stringify({ vpcs: [{ name: "solo", enable_internet: false }], subnets: [], pods: [] })
  )
  const { INIT_CWD: _, ...env } = process.env
  const { stdout } = await promisify(execFile)(
    "pnpm",
    [
      "--dir",
      fileURLToPath(new URL("../../..", import.meta.url)),
      "--filter",
      "@tenet/example-topology",
      "start",
      "solo.json"
    ],
    { cwd: dir, env }
  )
  expect(stdout).toContain("VPC solo (internet: no")
  expect(stdout).not.toContain("VPC shop")
}, 60_000)
