/**
 * PostgreSQL going away under traffic: a private PostgreSQL server (its own data directory and
 * port, so no other test notices) is stopped and started again while a tenant keeps creating
 * VPCs. While it is down requests answer 503 with a detail; nothing acknowledged is lost; the
 * Tenet server recovers by itself once the database is back.
 */
import { describe, expect, it } from "@effect/vitest"
import { NodeVault } from "@tenet/core/node"
import { ConfigProvider, Effect, Layer, ManagedRuntime } from "effect"
import { Main } from "../src/index.js"
import { call, freePort, tenantOver } from "./Loopback.js"
import * as PgServers from "./PgServers.js"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("PostgreSQL outage", () => {
  // Outside CI a machine without PostgreSQL's server binaries skips this; CI must have them.
  it.live.skipIf(PgServers.pgBin === undefined && process.env.CI === undefined)(
    "requests answer 503 while the database is down, nothing acknowledged is lost, service resumes by itself",
    () =>
      Effect.promise(async () => {
        const pg = await PgServers.initdb()
        pg.start()
        const port = await freePort()
        const server = ManagedRuntime.make(
          Main.MainLive.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
            new Map([
              ["TENET_STORE", "postgres"],
              ["TENET_DATABASE_URL", pg.url],
              ["TENET_ENCRYPTION_KEY", NodeVault.generateKey()],
              ["TENET_PORT", String(port)],
              ["TENET_ADMIN_PASSWORD", "outage-admin-password"],
              ["TENET_LOG_LEVEL", "error"]
            ])
          ))))
        )
        try {
          await server.runPromise(Effect.void)
          const { headers, session } = await tenantOver(port, "outage-admin-password", "steady")

          const acknowledged: Array<string> = []
          const statuses: Array<number> = []
          const details: Array<string> = []
          let healthWhileDown = 0
          let phase = "before" as "before" | "down" | "after"
          let sent = 0
          const traffic = (async () => {
            // Keeps going until a few VPCs were created after the database came back.
            while (phase !== "after" || statuses.slice(-5).some((s) => s !== 200)) {
              const response = await call(port, "POST", "/vpcs", {
                token: session.api_token,
                tenant_id: session.id,
                name: `vpc-${sent++}`,
                enable_internet: false
              }, headers).catch(() => ({ status: 0, body: {} }))
              statuses.push(response.status)
              if (response.status === 200) acknowledged.push(response.body.id)
              else details.push(response.body.detail)
              await sleep(20)
            }
          })()

          await sleep(500)
          pg.stop()
          phase = "down"
          await sleep(1_500)
          healthWhileDown = (await call(port, "GET", "/healthz")).status
          pg.start()
          phase = "after"
          await traffic

          expect(statuses.filter((s) => s !== 200 && s !== 503), JSON.stringify(details)).toEqual([])
          expect(statuses).toContain(503)
          expect(details.every((d) => typeof d === "string" && d.length > 0)).toBe(true)
          expect(healthWhileDown).toBe(503)
          expect((await call(port, "GET", "/healthz")).status).toBe(200)
          // Every acknowledged VPC is there. A request refused mid-way may still have committed
          // (the store failed after it): at most one VPC per refused request, never a partial one.
          const stored = ((await call(port, "GET", "/vpcs", undefined, headers)).body as Array<{ id: string }>)
            .map((v) => v.id)
          expect(stored).toEqual(expect.arrayContaining(acknowledged))
          expect(stored.length - acknowledged.length).toBeLessThanOrEqual(statuses.filter((s) => s === 503).length)
          const rules = await Promise.all(
            stored.map((id) => call(port, "GET", `/security-rules?vpc_id=${id}`, undefined, headers))
          )
          // Each VPC, acknowledged or not, was written whole: with the rule every VPC starts with.
          expect(rules.every((r) => r.status === 200 && r.body.rules.length === 1)).toBe(true)
        } finally {
          await server.dispose()
          pg.remove()
        }
      }),
    { timeout: 120_000 }
  )
})
