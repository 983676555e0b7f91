/**
 * What only a shared database can show: secrets are not stored in clear, and limits hold
 * when several server processes write at once.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { PgDatabase, PgTesting } from "@tenet/adapters-postgres"
import { Identity } from "@tenet/core"
import { NodeVault } from "@tenet/core/node"
import { Effect, Layer, ManagedRuntime, Option } from "effect"
import { Reconciler, TestServer } from "../src/index.js"
import { adminLogin, newTenant, postFrom, raw, setProviderConfig, TENANT_PASSWORD } from "./Harness.js"
import * as Sse from "./Sse.js"

const url = process.env.TENET_TEST_DATABASE_URL

/** Servers on one fresh database: each knows nothing but what the database holds. */
/** A wait no pause of a busy machine outlasts: which attempts are throttled depends on counts alone. */
const loginThrottle = {
  ...Identity.defaultThrottlePolicy,
  nameAndAddress: { ...Identity.defaultThrottlePolicy.nameAndAddress, baseMillis: 60_000 }
}

const servers = (count: number) =>
  Effect.gen(function*() {
    const database = yield* Layer.build(PgTesting.layerFreshDatabase(url!))
    const store = Layer.succeedContext(database)
    // One secret key, as replicas share theirs.
    const platform = { vaultKey: NodeVault.generateKey() }
    const runtimes = Array.from(
      { length: count },
      () => ManagedRuntime.make(TestServer.layer({ store, platform, loginThrottle }))
    )
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(runtimes.map((r) => r.dispose()))))
    return runtimes
  })

const twoServers = Effect.map(servers(2), ([one, two]) => [one!, two!] as const)

describe.skipIf(url === undefined)("on PostgreSQL", () => {
  it.live(
    "no password, token, env var value, registry password or provider token is stored in clear",
    () =>
      Effect.gen(function*() {
        const server = url!
        const name = `tenet_test_raw_${Date.now().toString(36)}`
        const target = new URL(server)
        target.pathname = `/${name}`
        const admin = yield* Layer.build(PgDatabase.layerClient({ url: server, maxConnections: 1 }))
        const adminSql = yield* Effect.provide(SqlClient.SqlClient, admin)
        yield* adminSql.unsafe(`CREATE DATABASE ${name}`)
        yield* Effect.addFinalizer(() =>
          adminSql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.orDie)
        )

        const app = yield* Layer.build(
          TestServer.layer({ store: PgDatabase.layer({ url: target.toString() }).pipe(Layer.orDie) })
        )
        const secrets = yield* Effect.gen(function*() {
          const adminToken = (yield* adminLogin).api_token
          yield* setProviderConfig({
            edge_account_id: "acct",
            edge_api_token: "provider-token-in-clear?",
            edge_domain: "apps.example.com"
          })
          const { session, tenant } = yield* newTenant()
          const headers = { "x-auth-token": session.api_token }
          const creds = { token: session.api_token, tenant_id: tenant.id }
          yield* raw("POST", `/tenants/${tenant.id}/registry-credentials`, {
            headers,
            body: { name: "reg", server: "r.example.com", username: "u", password: "registry-password-in-clear?" }
          })
          const vpc = (yield* raw("POST", "/vpcs", { headers, body: { ...creds, name: "v", enable_internet: true } }))
            .body as {
              id: string
            }
          const subnet = (yield* raw("POST", "/subnets", {
            headers,
            body: { ...creds, vpc_id: vpc.id, name: "s", cidr: "10.0.0.0/24", gateway_ip: "10.0.0.1" }
          })).body as { id: string }
          const pod = yield* raw("POST", "/pods", {
            headers,
            body: {
              ...creds,
              vpc_id: vpc.id,
              subnet_id: subnet.id,
              name: "p",
              container_image: "nginx:1",
              env_vars: { DB_PASSWORD: "env-value-in-clear?" }
            }
          })
          expect(pod.status).toBe(200)
          return [
            TestServer.ADMIN_PASSWORD,
            adminToken,
            TENANT_PASSWORD,
            session.api_token,
            "provider-token-in-clear?",
            "registry-password-in-clear?",
            "env-value-in-clear?"
          ]
        }).pipe(Effect.provide(app))

        // Every table, every row, as text.
        const sql = yield* Effect.provide(
          SqlClient.SqlClient,
          yield* Layer.build(PgDatabase.layerClient({ url: target.toString() }))
        )
        const tables = yield* sql<{ table_name: string }>`
        SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'
      `
        expect(tables.length).toBeGreaterThan(10)
        let dump = ""
        for (const { table_name } of tables) {
          const rows = yield* sql.unsafe<{ row: string }>(`SELECT t::text AS row FROM ${table_name} t`)
          dump += rows.map((r) => r.row).join("\n")
        }
        expect(dump).toContain("DB_PASSWORD") // names are not secret; they prove the rows were read
        for (const secret of secrets) expect(dump).not.toContain(secret)
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )

  // End to end. The race window is narrow here, so this passes even without the row lock:
  // the lock itself is proven by the Store contract's "VPC lock" test, which widens it.
  it.live("200 rules per VPC hold with two server processes writing at once", () =>
    Effect.gen(function*() {
      const [one, two] = yield* twoServers
      const setup = yield* Effect.promise(() =>
        one.runPromise(Effect.gen(function*() {
          const { session, tenant } = yield* newTenant()
          const headers = { "x-auth-token": session.api_token }
          const vpc = (yield* raw("POST", "/vpcs", {
            headers,
            body: { token: session.api_token, tenant_id: tenant.id, name: "busy", enable_internet: true }
          })).body as { id: string }
          return { headers, vpc }
        }))
      )
      const create = (i: number) =>
        raw("POST", "/security-rules", {
          headers: setup.headers,
          body: {
            vpc_id: setup.vpc.id,
            name: `r${i}`,
            direction: "ingress",
            action: "allow",
            priority: 100,
            remote_type: "cidr",
            remote_cidr: "0.0.0.0/0"
          }
        }).pipe(Effect.map((r) => r.status))
      yield* Effect.promise(() =>
        one.runPromise(Effect.forEach(Array.from({ length: 179 }, (_, i) => i), create, { concurrency: 8 }))
      )
      const statuses = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? one : two).runPromise(create(1000 + i))))
      )
      expect(statuses.filter((s) => s === 201)).toHaveLength(20)
      expect(statuses.filter((s) => s === 409)).toHaveLength(30)
      const list = yield* Effect.promise(() =>
        two.runPromise(raw("GET", `/security-rules?vpc_id=${setup.vpc.id}`, { headers: setup.headers }))
      )
      expect((list.body as { rules: Array<unknown> }).rules).toHaveLength(200)
    }).pipe(Effect.scoped), { timeout: 120_000 })
})

describe.skipIf(url === undefined)("replicas on one PostgreSQL database", () => {
  it.live("only one replica runs a reconciler pass at a time", () =>
    Effect.gen(function*() {
      const [one, two] = yield* twoServers
      // A VPC whose apply failed on replica one.
      const vpcId = yield* Effect.promise(() =>
        one.runPromise(Effect.gen(function*() {
          const cluster = yield* SimulatedCluster.ClusterSwitches
          yield* cluster.failApplies("cluster down")
          const { session, tenant } = yield* newTenant()
          const vpc = (yield* raw("POST", "/vpcs", {
            headers: { "x-auth-token": session.api_token },
            body: { token: session.api_token, tenant_id: tenant.id, name: "retry-me", enable_internet: true }
          })).body as { id: string }
          yield* cluster.heal
          return vpc.id
        }))
      )
      // Both replicas' clusters are slow, so their passes overlap.
      const slowPass = Effect.gen(function*() {
        yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.setLatency("150 millis"))
        return yield* Reconciler.pass
      })
      const [first, second] = yield* Effect.promise(() =>
        Promise.all([one.runPromise(slowPass), two.runPromise(slowPass)])
      )
      expect([first, second].filter(Option.isSome)).toHaveLength(1)
      const holds = (runtime: typeof one) =>
        runtime.runPromise(Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) =>
          Effect.map(c.snapshot, (s) =>
            s.vpcs.some((v) => v.vpc_id === vpcId))))
      const applied = yield* Effect.promise(() =>
        Promise.all([holds(one), holds(two)])
      )
      expect(applied.filter(Boolean)).toHaveLength(1)
    }).pipe(Effect.scoped), { timeout: 60_000 })
})

describe.skipIf(url === undefined)("two replicas, one change stream", () => {
  it.live(
    "a watcher on one replica, resumed from any revision, gets every change made on the other once, in order",
    () =>
      Effect.gen(function*() {
        const [writer, reader] = yield* twoServers
        const [writerBase, readerBase] = yield* Effect.promise(() =>
          Promise.all([writer.runPromise(Sse.baseUrl), reader.runPromise(Sse.baseUrl)])
        )
        const { session, tenant } = yield* Effect.promise(() => writer.runPromise(newTenant()))
        const headers = { "x-auth-token": session.api_token }
        const live = yield* Effect.promise(() => Sse.open(`${readerBase}/watch`, headers))
        const [start] = yield* Effect.promise(() => live.until((f) => f.length >= 1))
        const made: Array<string> = []
        for (let i = 0; i < 6; i++) {
          const vpc = yield* Effect.promise(() =>
            fetch(`${writerBase}/vpcs`, {
              method: "POST",
              headers: { ...headers, "content-type": "application/json" },
              body: JSON.stringify({
                token: session.api_token,
                tenant_id: tenant.id,
                name: `v${i}`,
                enable_internet: false
              })
            }).then((r) => r.json() as Promise<{ id: string }>)
          )
          made.push(vpc.id)
        }
        // Every VPC's ADDED, seen on the other replica.
        const frames = yield* Effect.promise(() =>
          live.until((f) => made.every((id) => Sse.changes(f).some((e) => e.id === id && e.type === "ADDED")))
        )
        yield* Effect.promise(() => live.close())
        const whole = Sse.changes(frames)
        const revisions = [Number(start!.data.revision), ...whole.map((e) => Number(e.revision))]
        expect(revisions.slice(1)).toEqual([...revisions.slice(1)].sort((x, y) => x - y))
        for (const since of revisions) {
          const resumed = yield* Effect.promise(() => Sse.open(`${readerBase}/watch?since=${since}`, headers))
          const got = yield* Effect.promise(() =>
            resumed.until((f) => f.some((frame) => frame.data.type === "BOOKMARK"))
          )
          yield* Effect.promise(() => resumed.close())
          // The same changes, from either replica: the store's, not the process's.
          const expected = whole.filter((e) => Number(e.revision) > since).map((e) => e.revision)
          expect(Sse.changes(got).map((e) => e.revision).slice(0, expected.length)).toEqual(expected)
        }
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )
})

describe.skipIf(url === undefined)("two replicas, one revocation", () => {
  it.live(
    "a token rotated on one replica ends the streams opened with it on the other within 5 s, tenant's and admin's",
    () =>
      Effect.gen(function*() {
        const [one, two] = yield* twoServers
        const [oneBase, twoBase] = yield* Effect.promise(() =>
          Promise.all([one.runPromise(Sse.baseUrl), two.runPromise(Sse.baseUrl)])
        )
        const { session, tenant } = yield* Effect.promise(() => one.runPromise(newTenant()))
        const admin = yield* Effect.promise(() => one.runPromise(adminLogin))
        const tenantStream = yield* Effect.promise(() =>
          Sse.open(`${twoBase}/watch`, { "x-auth-token": session.api_token })
        )
        const adminStream = yield* Effect.promise(() =>
          Sse.open(`${twoBase}/watch`, { "x-admin-token": admin.api_token })
        )
        yield* Effect.promise(() =>
          Promise.all([tenantStream.until((f) => f.length >= 1), adminStream.until((f) => f.length >= 1)])
        )
        const post = (path: string, headers: Record<string, string>) =>
          Effect.promise(() => fetch(`${oneBase}${path}`, { method: "POST", headers }).then((r) => r.status))
        const ends = (stream: Awaited<ReturnType<typeof Sse.open>>) =>
          Effect.promise(async () => {
            // Within 5 s, or `until` fails.
            const frames = await stream.until((f) => f.some((frame) => frame.data.type === "ERROR"), 5_000)
            await stream.finished
            return { last: frames[frames.length - 1]!.data }
          })
        expect(yield* post(`/tenants/${tenant.id}/rotate-token`, { "x-admin-token": admin.api_token })).toBe(200)
        const tenantEnd = yield* ends(tenantStream)
        expect(tenantEnd.last).toMatchObject({
          type: "ERROR",
          status: 401,
          detail: expect.stringContaining("no longer valid")
        })
        // The admin's stream holds until the admin's own token is rotated.
        expect(adminStream.frames.some((frame) => frame.data.type === "ERROR")).toBe(false)
        expect(yield* post("/admin/rotate-token", { "x-admin-token": admin.api_token })).toBe(200)
        const adminEnd = yield* ends(adminStream)
        expect(adminEnd.last).toMatchObject({ type: "ERROR", status: 401 })
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )
})

describe.skipIf(url === undefined)("an admin password reset at start", () => {
  it.live("ends the admin's sign-in sessions, on every replica; the API token goes on", () =>
    Effect.gen(function*() {
      const database = yield* Layer.build(PgTesting.layerFreshDatabase(url!))
      const store = Layer.succeedContext(database)
      const platform = { vaultKey: NodeVault.generateKey() }
      const one = ManagedRuntime.make(TestServer.layer({ store, platform }))
      yield* Effect.addFinalizer(() => Effect.promise(() => one.dispose()))
      const signIn = raw("POST", "/admin/login", {
        body: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD, session: true }
      })
      const session = (yield* Effect.promise(() => one.runPromise(signIn))).body as { api_token: string }
      const token = (yield* Effect.promise(() => one.runPromise(adminLogin))).api_token
      const tenants = (with_: string) =>
        Effect.promise(() =>
          one.runPromise(Effect.map(raw("GET", "/tenants", { headers: { "x-admin-token": with_ } }), (r) => r.status))
        )
      expect(yield* tenants(session.api_token)).toBe(200)
      // Another replica starts with the admin's password set anew (TENET_ADMIN_PASSWORD).
      const two = ManagedRuntime.make(TestServer.layer({ store, platform, adminPassword: "a-new-admin-password" }))
      yield* Effect.addFinalizer(() => Effect.promise(() => two.dispose()))
      yield* Effect.promise(() => two.runPromise(Effect.void))
      expect(yield* tenants(session.api_token)).toBe(401)
      expect(yield* tenants(token)).toBe(200)
    }).pipe(Effect.scoped), { timeout: 60_000 })
})

describe.skipIf(url === undefined)("three replicas on one PostgreSQL database", () => {
  it.live(
    "failed logins are throttled after 5 per name and address, whichever replicas the guesses go to",
    () =>
      Effect.gen(function*() {
        const replicas = yield* servers(3)
        const { tenant } = yield* Effect.promise(() => replicas[0]!.runPromise(newTenant()))
        const login = (replica: number, password: string) =>
          Effect.promise(() =>
            replicas[replica % 3]!.runPromise(
              Effect.map(raw("POST", "/tenants/login", { body: { name: tenant.name, password } }), (r) => r.status)
            )
          )
        // One after another, round the replicas: five are checked, then the name waits on all.
        const sequential = yield* Effect.forEach([0, 1, 2, 3, 4, 5, 6, 7], (i) => login(i, "wrong guess"))
        expect(sequential).toEqual([401, 401, 401, 401, 401, 429, 429, 429])
        // Waiting: the right password from this address is refused too, on every replica...
        expect(yield* Effect.forEach([0, 1, 2], (i) => login(i, TENANT_PASSWORD))).toEqual([429, 429, 429])
        // ... while the owner, from an address of its own, gets in on every replica.
        const owner = yield* Effect.forEach([0, 1, 2], (i) =>
          Effect.promise(() =>
            replicas[i]!.runPromise(
              Effect.map(
                postFrom(`127.0.0.${3 + i}`, "/tenants/login", { name: tenant.name, password: TENANT_PASSWORD }),
                (r) => r.status
              )
            )
          ))
        expect(owner).toEqual([200, 200, 200])

        // At once: fifteen guesses for another name spread over the replicas, five checked.
        const other = yield* Effect.promise(() => replicas[1]!.runPromise(newTenant()))
        const concurrent = yield* Effect.forEach(
          Array.from({ length: 15 }, (_, i) => i),
          (i) =>
            Effect.promise(() =>
              replicas[i % 3]!.runPromise(Effect.map(
                raw("POST", "/tenants/login", { body: { name: other.tenant.name, password: `guess ${i}` } }),
                (r) => r.status
              ))
            ),
          { concurrency: "unbounded" }
        )
        expect(concurrent.filter((s) => s === 401)).toHaveLength(5)
        expect(concurrent.filter((s) => s === 429)).toHaveLength(10)
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )
})
