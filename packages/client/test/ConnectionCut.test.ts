/**
 * A lost answer on PostgreSQL: a security rule is committed, then every connection to the
 * database is cut (and new ones refused) while the server is still applying it, so the caller
 * gets a 503 for a write that happened. Sent again with its `Idempotency-Key`, it is not made
 * twice; the typed client does that by itself. Needs TENET_TEST_DATABASE_URL (CI has it).
 */
import { FetchHttpClient, HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { PgDatabase } from "@tenet/adapters-postgres"
import { TenetClient } from "@tenet/client"
import { TestServer } from "@tenet/server"
import { Effect, Fiber, Layer, Schedule } from "effect"

const url = process.env.TENET_TEST_DATABASE_URL

type Json = Record<string, any>

const call = (base: string, method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, body: await response.json() as Json }
  })

describe.skipIf(url === undefined)("a PostgreSQL connection cut after a commit", () => {
  it.live(
    "a keyed create answered 503 is done once when sent again, by hand and by the typed client",
    () =>
      Effect.gen(function*() {
        const name = `tenet_test_cut_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
        const admin = yield* Layer.build(PgDatabase.layerClient({ url: url!, maxConnections: 1 }))
        const adminSql = yield* Effect.provide(SqlClient.SqlClient, admin)
        yield* adminSql.unsafe(`CREATE DATABASE ${name}`)
        yield* Effect.addFinalizer(() =>
          adminSql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.orDie)
        )
        const target = new URL(url!)
        target.pathname = `/${name}`
        const app = yield* Layer.build(
          TestServer.layer({ store: PgDatabase.layer({ url: target.toString(), maxConnections: 4 }).pipe(Layer.orDie) })
        )
        const server = yield* Effect.provide(HttpServer.HttpServer, app)
        const cluster = yield* Effect.provide(SimulatedCluster.ClusterSwitches, app)
        const base = server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : ""

        /** Every connection to the server's database closed, and no new one let in until `restore`. */
        const cut = adminSql.unsafe(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`).pipe(
          Effect.zipRight(adminSql.unsafe(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}' AND pid <> pg_backend_pid()`
          ))
        )
        const restore = adminSql.unsafe(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)

        const adminToken = (yield* call(base, "POST", "/admin/login", {}, {
          username: TestServer.ADMIN_USERNAME,
          password: TestServer.ADMIN_PASSWORD
        })).body.api_token as string
        const tenant = (yield* call(base, "POST", "/tenants", { "x-admin-token": adminToken }, {
          name: "cut",
          password: "cut-password"
        })).body
        const session =
          (yield* call(base, "POST", "/tenants/login", {}, { name: "cut", password: "cut-password" })).body
        const headers = { "x-auth-token": session.api_token as string }
        const vpc = (yield* call(base, "POST", "/vpcs", headers, {
          token: session.api_token,
          tenant_id: tenant.id,
          name: "cut",
          enable_internet: false
        })).body
        const rule = (ruleName: string) => ({
          vpc_id: vpc.id,
          name: ruleName,
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          ports: "443",
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0"
        })
        const rulesNamed = (ruleName: string) =>
          Effect.map(
            call(base, "GET", `/security-rules?vpc_id=${vpc.id}`, headers),
            (r) => (r.body.rules as Array<Json>).filter((x) => x.name === ruleName)
          )
        /** Waits until the rule is committed: from then on, the server is still applying it. */
        const committed = (ruleName: string) =>
          rulesNamed(ruleName).pipe(
            Effect.filterOrFail((rules) => rules.length === 1),
            Effect.retry(Schedule.spaced("10 millis")),
            Effect.map((rules) => rules[0]!.id as string)
          )

        // The cluster answers slowly, and then with a failure the server must record: it is
        // still applying after it has committed, and has one more write to make.
        yield* cluster.setLatency("1 second")
        yield* cluster.failApplies("the cluster is failing")

        // By hand: 503, then the same request with the same key.
        const key = crypto.randomUUID()
        const first = yield* Effect.fork(
          call(base, "POST", "/security-rules", { ...headers, "idempotency-key": key }, rule("by-hand"))
        )
        const made = yield* committed("by-hand")
        yield* cut
        const lost = yield* Fiber.join(first)
        expect(lost.status).toBe(503)
        yield* restore
        yield* cluster.heal
        const again = yield* call(
          base,
          "POST",
          "/security-rules",
          { ...headers, "idempotency-key": key },
          rule("by-hand")
        )
        expect(again.status).toBe(201)
        expect(again.body.rule.id).toBe(made)
        expect(yield* rulesNamed("by-hand")).toHaveLength(1)

        // The typed client: it names the POST and retries it with the same key through the 503s.
        const client = yield* TenetClient.make({
          baseUrl: base,
          tenantToken: session.api_token,
          tenantId: tenant.id,
          retry: { times: 8 }
        }).pipe(Effect.provide(FetchHttpClient.layer))
        yield* cluster.setLatency("1 second")
        yield* cluster.failApplies("the cluster is failing")
        const created = yield* Effect.fork(
          client.securityRules.create({ payload: rule("by-client") as never }).pipe(
            Effect.provide(FetchHttpClient.layer)
          )
        )
        const madeByClient = yield* committed("by-client")
        yield* cut
        // The answer is lost about 2 seconds after the commit (two slow cluster calls); the
        // connections come back 1.5 seconds later, while the client is retrying.
        yield* Effect.sleep("3500 millis")
        yield* cluster.heal
        yield* restore
        const result = yield* Fiber.join(created)
        expect(result.rule?.id).toBe(madeByClient)
        expect(yield* rulesNamed("by-client")).toHaveLength(1)
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )
})
