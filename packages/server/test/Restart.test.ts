/**
 * The default store keeps everything across restarts: the server as `pnpm start` runs it,
 * stopped and started again on the same data directory.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Main } from "../src/index.js"
import { call } from "./Loopback.js"

const start = (dataDir: string, port: number) =>
  ManagedRuntime.make(
    Main.MainLive.pipe(
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
        new Map([
          ["TENET_STORE", "embedded"],
          ["TENET_DATA_DIR", dataDir],
          ["TENET_PORT", String(port)],
          ["TENET_ADMIN_PASSWORD", "restart-admin-password"],
          ["TENET_LOG_LEVEL", "warn"]
        ])
      )))
    )
  )

describe("restarts", () => {
  it.live("stop the server, start it on the same data directory, find everything", () =>
    Effect.promise(async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "tenet-restart-"))
      // Both starts need the same port: one below Linux's ephemeral range (32768 and up), which
      // the connections and port-0 listeners of tests running alongside take theirs from.
      const port = 20000 + Math.floor(Math.random() * 12000)
      try {
        const first = start(dataDir, port)
        await first.runPromise(Effect.void)
        const admin =
          (await call(port, "POST", "/admin/login", { username: "admin", password: "restart-admin-password" }))
            .body.api_token
        await call(port, "POST", "/tenants", { name: "durable", password: "durable-password" }, {
          "x-admin-token": admin
        })
        const before =
          (await call(port, "POST", "/tenants/login", { name: "durable", password: "durable-password" })).body
        const headers = { "x-auth-token": before.api_token }
        const vpc = (await call(port, "POST", "/vpcs", {
          token: before.api_token,
          tenant_id: before.id,
          name: "kept",
          enable_internet: true
        }, headers)).body
        await first.dispose()

        // The key that decrypts the stored tokens was generated once and kept, owner-only.
        expect(statSync(join(dataDir, "encryption.key")).mode & 0o777).toBe(0o600)

        const second = start(dataDir, port)
        await second.runPromise(Effect.void)
        try {
          const after =
            (await call(port, "POST", "/tenants/login", { name: "durable", password: "durable-password" })).body
          expect(after).toEqual(before)
          const vpcs = (await call(port, "GET", "/vpcs", undefined, headers)).body
          expect(vpcs.map((v: { id: string }) => v.id)).toEqual([vpc.id])
          const health = (await call(port, "GET", "/healthz")).body
          expect(health.store).toBe("embedded")
        } finally {
          await second.dispose()
        }
      } finally {
        rmSync(dataDir, { recursive: true, force: true })
      }
    }), { timeout: 120_000 })
})
