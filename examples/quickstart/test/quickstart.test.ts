import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { TestServer } from "@tenet/server"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { quickstart } from "../src/quickstart.js"

const packageDir = fileURLToPath(new URL("..", import.meta.url))

/** `pnpm start` as its script runs it, against `url` as the given admin: its exit code and what it printed. */
const start = (url: string, adminPassword: string) =>
  Effect.async<{ code: number; stdout: string; stderr: string }>((resume) => {
    execFile(
      fileURLToPath(new URL("../node_modules/.bin/tsx", import.meta.url)),
      ["--conditions=@tenet/source", "src/main.ts"],
      {
        cwd: packageDir,
        env: {
          ...process.env,
          TENET_URL: url,
          TENET_ADMIN_USERNAME: TestServer.ADMIN_USERNAME,
          TENET_ADMIN_PASSWORD: adminPassword
        }
      },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    )
  })

layer(TestServer.layer(), { excludeTestServices: true })("quickstart example", (it) => {
  const baseUrl = Effect.map(
    HttpServer.HttpServer,
    (server) => `http://127.0.0.1:${server.address._tag === "TcpAddress" ? server.address.port : 0}`
  )

  it.effect("walks the whole tour and prints what runs", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const lines: Array<string> = []
      const result = yield* Effect.promise(() =>
        quickstart(
          {
            baseUrl: url,
            adminUsername: TestServer.ADMIN_USERNAME,
            adminPassword: TestServer.ADMIN_PASSWORD
          },
          "quickstart-test",
          (line) => lines.push(line)
        )
      )
      expect(result.pod.status.phase).toBe("running")
      expect(result.tunnel).toMatchObject({ hostname: "shop-quickstart-test.apps.example.com", status: "active" })
      expect(result.verdict.reach).toBe("allowed")
      expect(lines).toContain("tcp/443 from 198.51.100.7: allowed")
      // Everything but the VPC's own block (its seeded rule lets that in already) and the core network.
      expect(lines).toContain(
        "preview of 'https in': opens tcp/443 from 0.0.0.0/0 except 10.0.1.0/24, 100.64.0.0/16, closes 0 regions"
      )
      expect(lines).toContain("internet -> pod storefront: tcp 443, udp none")
      expect(lines).toContain("again: you already have a VPC named 'prod'")
    }))

  it.effect(
    "runs again against the same server; an API's refusal ends it in one line, without a stack trace",
    () =>
      Effect.gen(function*() {
        const url = yield* baseUrl
        // Each run is a tenant of its own, publishing under a hostname of its own.
        const hostnames: Array<string> = []
        for (let run = 0; run < 2; run++) {
          const ran = yield* start(url, TestServer.ADMIN_PASSWORD)
          expect(ran.code, ran.stderr).toBe(0)
          const published = /tunnel storefront: https:\/\/(\S+) \(active\)/.exec(ran.stdout)
          expect(published, ran.stdout).not.toBeNull()
          hostnames.push(published![1]!)
        }
        expect(new Set(hostnames).size).toBe(2)

        const refused = yield* start(url, "not the admin's password")
        expect(refused.code).toBe(1)
        expect(refused.stdout).toBe("")
        expect(refused.stderr).toMatch(/^quickstart: Unauthorized: .+\n$/)
      }),
    120_000
  )
})
