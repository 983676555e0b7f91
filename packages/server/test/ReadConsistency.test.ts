/**
 * Reads served from the read model are never older than an acknowledged write: two server
 * processes on one PostgreSQL database, each with its own cache, write at once, and every read
 * on either, made after a write was acknowledged by the other, sees it. The same holds for
 * status written behind the API's back (as another process's reconciler does).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { PgDatabase } from "@tenet/adapters-postgres"
import { NodeVault } from "@tenet/core/node"
import { Effect, Layer } from "effect"
import { call, until } from "./Loopback.js"
import { spawnServer } from "./ServerProcess.js"

const url = process.env.TENET_TEST_DATABASE_URL

type Json = Record<string, any>

const ROUNDS = 12

describe.skipIf(url === undefined)("reads from the read model, two processes on one database", () => {
  it.live(
    "a read on either process sees every write acknowledged by the other, and status written elsewhere",
    () =>
      Effect.gen(function*() {
        const name = `tenet_test_reads_${Date.now().toString(36)}`
        const target = new URL(url!)
        target.pathname = `/${name}`
        const admin = yield* Layer.build(PgDatabase.layerClient({ url: url!, maxConnections: 1 }))
        const adminSql = yield* Effect.provide(SqlClient.SqlClient, admin)
        yield* adminSql.unsafe(`CREATE DATABASE ${name}`)
        yield* Effect.addFinalizer(() =>
          adminSql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.orDie)
        )
        const direct = yield* Layer.build(PgDatabase.layerClient({ url: target.toString(), maxConnections: 1 }))
        const sql = yield* Effect.provide(SqlClient.SqlClient, direct)

        yield* Effect.promise(async () => {
          const env = {
            TENET_STORE: "postgres",
            TENET_DATABASE_URL: target.toString(),
            TENET_ENCRYPTION_KEY: NodeVault.generateKey(),
            TENET_ADMIN_PASSWORD: "consistency-admin-password",
            // The readers' own reconcilers stay out of the way; a third process's does the work.
            TENET_RECONCILE_INTERVAL: "1 hour"
          }
          // One after the other: the first runs the migrations.
          const first = await spawnServer(env)
          await until(() => first.output().includes("listening"), "the first server to listen", 60_000)
          const second = await spawnServer(env)
          await until(() => second.output().includes("listening"), "the second server to listen", 60_000)
          const servers = [first.port, second.port] as const

          const adminToken = (await call(servers[0], "POST", "/admin/login", {
            username: "admin",
            password: "consistency-admin-password"
          })).body.api_token as string
          const created = await call(servers[1], "POST", "/tenants", {
            name: "reader",
            password: "correct horse battery"
          }, {
            "x-admin-token": adminToken
          })
          expect(created.status, created.text).toBe(201)
          const session = (await call(servers[0], "POST", "/tenants/login", {
            name: "reader",
            password: "correct horse battery"
          })).body
          const headers = { "x-auth-token": session.api_token as string }
          const creds = { token: session.api_token, tenant_id: session.id }

          // Warm both caches, so that a stale one would have something to answer with.
          const vpc =
            (await call(servers[0], "POST", "/vpcs", { ...creds, name: "shared", enable_internet: false }, headers))
              .body as Json
          // The evaluated flows come from inside the VPC: a route carries them, the rules decide.
          const subnet = await call(servers[0], "POST", "/subnets", {
            ...creds,
            vpc_id: vpc.id,
            name: "inside",
            cidr: "10.1.0.0/16",
            gateway_ip: "10.1.0.1"
          }, headers)
          expect(subnet.status, subnet.text).toBe(200)
          for (const port of servers) expect((await call(port, "GET", "/vpcs", undefined, headers)).status).toBe(200)

          /** Writes on one process; each acknowledged write is read back at once on the other. */
          const writer = async (lane: number) => {
            for (let i = 0; i < ROUNDS; i++) {
              const writeOn = servers[(lane + i) % 2]!
              const readOn = servers[(lane + i + 1) % 2]!
              const rule = await call(writeOn, "POST", "/security-rules", {
                vpc_id: vpc.id,
                name: `r-${lane}-${i}`,
                direction: "ingress",
                action: "allow",
                priority: 100 + lane * ROUNDS + i,
                protocol: "tcp",
                ports: String(1000 + lane * ROUNDS + i),
                remote_type: "cidr",
                remote_cidr: "10.0.0.0/8"
              }, headers)
              expect(rule.status, rule.text).toBe(201)
              const id = rule.body.rule.id as string
              const listed = await call(readOn, "GET", `/security-rules?vpc_id=${vpc.id}`, undefined, headers)
              expect(listed.body.rules.map((r: Json) => r.id), `rule ${id} on the other process`).toContain(id)
              const one = await call(readOn, "GET", `/security-rules/${id}`, undefined, headers)
              expect(one.status).toBe(200)
              const verdict = await call(readOn, "POST", "/security-rules/evaluate", {
                vpc_id: vpc.id,
                direction: "ingress",
                protocol: "tcp",
                port: 1000 + lane * ROUNDS + i,
                remote_ip: "10.1.2.3"
              }, headers)
              expect(verdict.body.allowed_flow?.decided_by, "the other process's rules have the new rule").toEqual({
                kind: "rule",
                rule_id: id,
                name: `r-${lane}-${i}`
              })
              if (i % 3 === 0) {
                const deleted = await call(writeOn, "DELETE", `/security-rules/${id}`, undefined, headers)
                expect(deleted.status, deleted.text).toBe(200)
                const after = await call(readOn, "GET", `/security-rules/${id}`, undefined, headers)
                expect(after.status, `deleted rule ${id} on the other process`).toBe(404)
              }
              const other = await call(writeOn, "POST", "/vpcs", {
                ...creds,
                name: `v-${lane}-${i}`,
                enable_internet: false
              }, headers)
              expect(other.status, other.text).toBe(200)
              const vpcs = await call(readOn, "GET", "/vpcs", undefined, headers)
              expect(vpcs.body.map((v: Json) => v.id)).toContain(other.body.id)
            }
          }
          await Promise.all([0, 1, 2, 3].map(writer))

          // Status written outside either process's requests, as a reconciler elsewhere does.
          await Effect.runPromise(sql`UPDATE vpcs SET applied = false, apply_error = 'elsewhere' WHERE id = ${vpc.id}`)
          for (const port of servers) {
            const listed = await call(port, "GET", "/vpcs", undefined, headers)
            expect(listed.body.find((v: Json) => v.id === vpc.id)).toMatchObject({
              applied: false,
              apply_error: "elsewhere"
            })
          }
          // Another process's reconciler applies it again; once that is committed, both say so.
          const reconciler = await spawnServer({ ...env, TENET_RECONCILE_INTERVAL: "200 millis" })
          let applied = false
          const started = Date.now()
          while (!applied && Date.now() - started < 30_000) {
            const rows = await Effect.runPromise(
              sql<{ applied: boolean }>`SELECT applied FROM vpcs WHERE id = ${vpc.id}`
            )
            applied = rows[0]!.applied
            if (!applied) await new Promise((resolve) => setTimeout(resolve, 50))
          }
          expect(applied, "a reconciler applied the VPC again").toBe(true)
          for (const port of servers) {
            const listed = await call(port, "GET", "/vpcs", undefined, headers)
            expect(listed.body.find((v: Json) => v.id === vpc.id)).toMatchObject({ applied: true, apply_error: null })
          }
          for (const server of [first, second, reconciler]) server.child.kill("SIGTERM")
          await Promise.all([first.exited, second.exited, reconciler.exited])
        })
      }).pipe(Effect.scoped),
    180_000
  )
})
