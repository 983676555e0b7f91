/**
 * A rolling update through a migration, as the Deployment's two replicas go through one: the
 * server of the commit before the newest migration (from git, installed from the pnpm store and
 * run from its sources) serves a database under write load; HEAD's server starts beside it,
 * migrates the shared database while the old one serves, and both take writes. No request fails
 * other than with a retryable 503, and what either wrote reads the same through the other
 * (every VPC and rule, field by field where both versions have the field, versions included).
 */
import { describe, expect, it } from "@effect/vitest"
import { Migrations } from "@tenet/adapters-postgres"
import { NodeVault } from "@tenet/core/node"
import { Effect } from "effect"
import { execFileSync, execSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { launch } from "./Launch.js"
import { call, freePort, tenantOver, until } from "./Loopback.js"
import * as PgServers from "./PgServers.js"
import { spawnServer } from "./ServerProcess.js"

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")
const MIGRATIONS = "packages/adapters-postgres/src/Migrations.ts"

const git = (...args: Array<string>) => execFileSync("git", args, { cwd: repo, encoding: "utf8" }).trim()

/** The commit before the one that added the newest migration, when the history is here. */
const previous = (() => {
  try {
    const newest = Migrations.LATEST.toString().padStart(4, "0")
    const added = git("log", "-1", "--format=%H", `-S"${newest}_`, "--", MIGRATIONS)
    return added === "" ? undefined : git("rev-parse", `${added}^`)
  } catch {
    return undefined
  }
})()

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The fields both versions show, for comparing what one wrote with what the other reads. */
const common = (a: Record<string, unknown>, b: Record<string, unknown>) =>
  [a, b].map((o) => Object.fromEntries(Object.entries(o).filter(([k]) => k in a && k in b)))

describe("a rolling update through a migration", () => {
  // CI clones the whole history; a checkout without it (a shallow clone, an archive) skips this outside CI.
  it.live.skipIf((previous === undefined || PgServers.pgBin === undefined) && process.env.CI === undefined)(
    "the release before the newest migration and HEAD serve one database together: only retryable 503s, nothing misread",
    () =>
      Effect.promise(async () => {
        expect(previous, "the commit before the newest migration (is the history here?)").toBeDefined()
        const before = mkdtempSync(join(tmpdir(), "tenet-before-"))
        const pg = await PgServers.initdb()
        pg.start()
        const migrated = () => Number(pg.query("SELECT max(migration_id) FROM effect_sql_migrations"))
        try {
          execSync(`git -C ${repo} archive ${previous} | tar -x -C ${before}`)
          execFileSync("pnpm", ["install", "--frozen-lockfile", "--prefer-offline", "--ignore-scripts"], {
            cwd: before,
            stdio: "pipe",
            env: { ...process.env, CI: "true" }
          })
          const env = {
            TENET_STORE: "postgres",
            TENET_DATABASE_URL: pg.url,
            TENET_ENCRYPTION_KEY: NodeVault.generateKey(),
            TENET_ADMIN_PASSWORD: "upgrade-admin-password",
            TENET_LOG_LEVEL: "info"
          }
          const oldPort = await freePort()
          const old = launch(
            process.execPath,
            ["--conditions=@tenet/source", "--import", "tsx", join(before, "packages/server/src/bin.ts")],
            { cwd: before, env: { ...env, TENET_PORT: String(oldPort) } }
          )
          let writing = true
          try {
            await until(() => old.output().includes("listening"), "the previous release to listen", 90_000)
              .catch((e) => Promise.reject(new Error(`${e}: ${old.output()}`)))
            const { headers, session } = await tenantOver(oldPort, "upgrade-admin-password", "upgrading", {
              vpcs: 10_000
            })

            const ports = [oldPort]
            const statuses: Array<{ readonly status: number; readonly what: string; readonly detail?: string }> = []
            /** A request retried with its key while it answers 503; its last answer. */
            const send = async (method: string, path: string, body?: unknown) => {
              const key = randomUUID()
              for (let i = 0;; i++) {
                const port = ports[Math.floor(Math.random() * ports.length)]!
                const answer = await call(port, method, path, body, { ...headers, "idempotency-key": key })
                  .catch((error) => ({ status: 0, body: { detail: String(error) } }))
                statuses.push({
                  status: answer.status,
                  what: `${method} ${path} on ${port === oldPort ? "the previous release" : "HEAD"}`,
                  ...(answer.status >= 400 ? { detail: answer.body?.detail } : {})
                })
                if (answer.status !== 503) return answer
                if (i === 20) {
                  statuses.push({ status: 0, what: `${method} ${path}: still 503 after 20 retries` })
                  return answer
                }
                await sleep(100)
              }
            }
            // Each writer makes VPCs, adds a rule to each, and deletes every third: its own, in turn.
            const writer = async (index: number) => {
              for (let n = 0; writing; n++) {
                const vpc = (await send("POST", "/vpcs", {
                  token: session.api_token,
                  tenant_id: session.id,
                  name: `w${index}-${n}`,
                  enable_internet: n % 2 === 0
                })).body
                if (vpc?.id === undefined) continue
                await send("POST", "/security-rules", {
                  vpc_id: vpc.id,
                  name: `allow-${n}`,
                  direction: "ingress",
                  action: "allow",
                  priority: 100 + (n % 1000),
                  protocol: "tcp",
                  ports: String(1000 + n),
                  remote_type: "cidr",
                  remote_cidr: "10.0.0.0/8"
                })
                if (n % 3 === 2) await send("DELETE", `/vpcs/${vpc.id}`)
              }
            }
            const writers = Promise.all([0, 1, 2].map(writer))
            await sleep(1_000)

            // HEAD starts beside it and migrates the database the previous release is serving.
            expect(migrated()).toBeLessThan(Migrations.LATEST)
            const head = await spawnServer(env)
            await until(() => head.output().includes("listening"), "HEAD to listen", 90_000)
            ports.push(head.port)
            await sleep(3_000)
            writing = false
            await writers

            expect(migrated()).toBe(Migrations.LATEST)
            // Answered by both (a connection refused or reset, status 0, is a failure too).
            expect(statuses.filter((s) => (s.status < 200 || s.status >= 300) && s.status !== 503)).toEqual([])
            for (const release of ["the previous release", "HEAD"]) {
              expect(statuses.filter((s) => s.status < 300 && s.what.endsWith(release)).length, release)
                .toBeGreaterThan(5)
            }

            // What either wrote, read through both, agrees field by field.
            const listOn = async (port: number, path: string) =>
              (await call(port, "GET", path, undefined, headers)).body
            const [oldVpcs, newVpcs] = await Promise.all([listOn(oldPort, "/vpcs"), listOn(head.port, "/vpcs")]) as [
              Array<Record<string, unknown>>,
              Array<Record<string, unknown>>
            ]
            expect(newVpcs.map((v) => v.id)).toEqual(oldVpcs.map((v) => v.id))
            expect(newVpcs.every((v) => v.lifecycle === "active")).toBe(true)
            for (const [i, vpc] of oldVpcs.entries()) {
              const [a, b] = common(vpc, newVpcs[i]!)
              expect(b).toEqual(a)
              const [oldRules, newRules] = await Promise.all([
                listOn(oldPort, `/security-rules?vpc_id=${vpc.id}`),
                listOn(head.port, `/security-rules?vpc_id=${vpc.id}`)
              ])
              expect(newRules.rules.length).toBe(oldRules.rules.length)
              for (const [j, rule] of (oldRules.rules as Array<Record<string, unknown>>).entries()) {
                const [x, y] = common(rule, newRules.rules[j])
                expect(y).toEqual(x)
              }
            }
          } finally {
            writing = false
            old.kill()
          }
        } finally {
          pg.remove()
          rmSync(before, { recursive: true, force: true })
        }
      }),
    { timeout: 300_000 }
  )
})
