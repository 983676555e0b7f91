/**
 * A VPC delete interrupted halfway: its mark committed, then the server killed (`kill -9`) and
 * its connections to PostgreSQL cut while it was removing the VPC's rows. Meanwhile the VPC
 * reads as deleting everywhere (listed with `lifecycle: "deleting"`, its rules answering that
 * it is being deleted); the restarted server knows the server that marked it is gone and
 * finishes the delete within seconds of starting, not after the mark's lease and a reconciler
 * interval.
 */
import { describe, expect, it } from "@effect/vitest"
import { NodeVault } from "@tenet/core/node"
import { Effect } from "effect"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import { spawn } from "node:child_process"
import { call, tenantOver, until } from "./Loopback.js"
import * as PgServers from "./PgServers.js"
import { spawnServer } from "./ServerProcess.js"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("a VPC delete interrupted halfway", () => {
  it.live.skipIf(PgServers.pgBin === undefined && process.env.CI === undefined)(
    "reads as deleting everywhere meanwhile, and is finished within seconds of the restart, its rules with it",
    () =>
      Effect.promise(async () => {
        const pg = await PgServers.initdb()
        pg.start()
        let holder: ChildProcessWithoutNullStreams | undefined
        try {
          const env = {
            TENET_STORE: "postgres",
            TENET_DATABASE_URL: pg.url,
            TENET_ENCRYPTION_KEY: NodeVault.generateKey(),
            TENET_ADMIN_PASSWORD: "interrupted-admin-password",
            TENET_LOG_LEVEL: "info"
          }
          const started = async () => {
            const server = await spawnServer(env)
            await until(() => server.output().includes("listening"), "the server to listen", 60_000)
            return server
          }
          const first = await started()
          const { headers, session } = await tenantOver(first.port, "interrupted-admin-password", "leaving")
          const vpc = (await call(first.port, "POST", "/vpcs", {
            token: session.api_token,
            tenant_id: session.id,
            name: "leaving",
            enable_internet: false
          }, headers)).body
          const [rule] = (await call(first.port, "GET", `/security-rules?vpc_id=${vpc.id}`, undefined, headers)).body
            .rules as Array<{ id: string }>

          // The removal of the VPC's rows waits on a lock held on its rule; the mark (the VPC's row
          // alone) does not.
          holder = spawn("psql", ["-h", "127.0.0.1", "-p", String(pg.port), "-U", "postgres", "-d", "postgres"], {
            stdio: ["pipe", "pipe", "pipe"]
          })
          let held = ""
          holder.stdout.on("data", (chunk) => (held += chunk))
          holder.stdin.write(`BEGIN;\nSELECT 'held' FROM security_rules WHERE id = '${rule!.id}' FOR UPDATE;\n`)
          await until(() => held.includes("held"), "the rule's row lock", 10_000)

          const deleting = call(first.port, "DELETE", `/vpcs/${vpc.id}`, undefined, headers).catch(() => undefined)
          const lifecycleOf = async (port: number) =>
            ((await call(port, "GET", "/vpcs", undefined, headers)).body as Array<{ id: string; lifecycle: string }>)
              .find((v) => v.id === vpc.id)?.lifecycle
          for (let i = 0; i < 100 && (await lifecycleOf(first.port)) !== "deleting"; i++) await sleep(100)
          expect(await lifecycleOf(first.port)).toBe("deleting")
          const ruleRead = await call(first.port, "GET", `/security-rules/${rule!.id}`, undefined, headers)
          const listRead = await call(first.port, "GET", `/security-rules?vpc_id=${vpc.id}`, undefined, headers)
          expect([ruleRead.status, ruleRead.body.detail]).toEqual([404, `VPC ${vpc.id} is being deleted`])
          expect([listRead.status, listRead.body.detail]).toEqual([404, `VPC ${vpc.id} is being deleted`])

          // The server dies mid-removal, and its connections with it.
          first.child.kill("SIGKILL")
          await first.exited
          pg.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tenet'")
          holder.stdin.end("ROLLBACK;\n")
          await deleting

          // Well inside the mark's lease (a minute): the restarted server knows its marker is gone.
          const second = await started()
          await until(
            () => second.output().includes("finished the VPC deletes a stopped server left"),
            "the restarted server to finish the delete",
            30_000
          )
          expect(await lifecycleOf(second.port)).toBeUndefined()
          const ruleAfter = await call(second.port, "GET", `/security-rules/${rule!.id}`, undefined, headers)
          expect(ruleAfter.status).toBe(404)
          expect(ruleAfter.body.detail).not.toContain("being deleted")
        } finally {
          holder?.kill()
          pg.remove()
        }
      }),
    { timeout: 180_000 }
  )
})
