/**
 * Statements per request on PostgreSQL, counted by the server itself: the load's seed and
 * endpoints against a server in this process on a fresh database, with a tracer that counts
 * `@effect/sql`'s spans (`sql.execute` is one statement, `sql.transaction` two: BEGIN and
 * COMMIT). Each endpoint is called once to warm the read model, then counted over 20 calls.
 * Every write endpoint of a tenant's rows is counted too, each call on a resource of its own
 * made beforehand (uncounted). Then the heap a snapshot takes there, for 200 small tenants.
 */
import { HttpServer } from "@effect/platform"
import { PgTesting } from "@tenet/adapters-postgres"
import { Effect, Layer, ManagedRuntime, Tracer } from "effect"
import { TestServer } from "../src/index.js"
import { call } from "../test/Loopback.js"
import * as Load from "./Load.js"
import * as Scale from "./Scale.js"

export interface StatementsRow {
  readonly endpoint: string
  readonly statements: number
}

export interface StatementsReport {
  readonly rows: ReadonlyArray<StatementsRow>
  /** Every write endpoint: what one call costs, the authentication's read included. */
  readonly writes: ReadonlyArray<StatementsRow>
  /** The read model's heap per snapshot here, for tenants with a VPC and 10 rules. */
  readonly heapPerViewKb: number
  readonly tenants: number
}

const CALLS = 20
const WRITE_CALLS = 3

type Response = Awaited<ReturnType<typeof call>>

interface WriteScenario {
  readonly endpoint: string
  /** Makes what the i-th counted call needs; answers the call. */
  readonly prepare: (i: number) => Promise<() => Promise<Response>>
}

/** Each write endpoint with what it needs, on the load's seed. */
const writeScenarios = (port: number, seeded: Awaited<ReturnType<typeof Load.seed>>): ReadonlyArray<WriteScenario> => {
  const { creds, headers } = seeded
  const as = (method: string, path: string, body?: unknown) => () => call(port, method, path, body, headers)
  const ok = async (method: string, path: string, body?: unknown) => {
    const response = await as(method, path, body)()
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
    return response.body
  }
  const vpc = (name: string) => ok("POST", "/vpcs", { ...creds, name, enable_internet: false })
  const pod = (name: string) =>
    ok("POST", "/pods", {
      ...creds,
      vpc_id: seeded.ruleVpc,
      subnet_id: seeded.subnet,
      name,
      container_image: "nginx:1.27"
    })
  let n = 0
  const target = () => seeded.postVpcs[n++ % seeded.postVpcs.length]!
  return [
    {
      endpoint: "POST /vpcs",
      prepare: async (i) => as("POST", "/vpcs", { ...creds, name: `sv${i}`, enable_internet: false })
    },
    { endpoint: "DELETE /vpcs/{id}", prepare: async (i) => as("DELETE", `/vpcs/${(await vpc(`dv${i}`)).id}`) },
    {
      endpoint: "POST /subnets",
      prepare: async (i) =>
        as("POST", "/subnets", {
          ...creds,
          vpc_id: seeded.postVpcs[i]!,
          name: "s",
          cidr: "10.1.0.0/24",
          gateway_ip: "10.1.0.1"
        })
    },
    {
      endpoint: "POST /security-rules",
      prepare: async (i) => as("POST", "/security-rules", Load.rule(target(), 5000 + i))
    },
    {
      endpoint: "PATCH /security-rules/{id}",
      prepare: async (i) => {
        const made = await ok("POST", "/security-rules", Load.rule(target(), 6000 + i))
        return as("PATCH", `/security-rules/${made.rule.id}`, { description: "patched" })
      }
    },
    {
      endpoint: "DELETE /security-rules/{id}",
      prepare: async (i) => {
        const made = await ok("POST", "/security-rules", Load.rule(target(), 7000 + i))
        return as("DELETE", `/security-rules/${made.rule.id}`)
      }
    },
    {
      endpoint: "POST /security-rules/reorder",
      prepare: async () => {
        const vpcId = target()
        const list = await ok("GET", `/security-rules?vpc_id=${vpcId}`)
        const ids = (list.rules as ReadonlyArray<{ readonly id: string }>).map((r) => r.id).reverse()
        return as("POST", "/security-rules/reorder", { vpc_id: vpcId, rule_ids: ids })
      }
    },
    {
      endpoint: "POST /pods",
      prepare: async (i) =>
        as("POST", "/pods", {
          ...creds,
          vpc_id: seeded.ruleVpc,
          subnet_id: seeded.subnet,
          name: `sp${i}`,
          container_image: "nginx:1.27"
        })
    },
    {
      endpoint: "POST /pods/{id}/replicas",
      prepare: async (i) => as("POST", `/pods/${(await pod(`rp${i}`)).id}/replicas`)
    },
    {
      endpoint: "PATCH /pods/{id}/config",
      prepare: async (i) => as("PATCH", `/pods/${(await pod(`cp${i}`)).id}/config`, { auto_healing: true })
    },
    { endpoint: "DELETE /pods/{id}", prepare: async (i) => as("DELETE", `/pods/${(await pod(`xp${i}`)).id}`) },
    {
      endpoint: "POST /pods/{id}/tunnel",
      prepare: async (i) =>
        as("POST", `/pods/${(await pod(`tp${i}`)).id}/tunnel`, {
          tunnel_name: `t${i}`,
          subdomain: `t${i}`,
          protocol_type: "http",
          domain: null
        })
    },
    {
      endpoint: "DELETE /tunnels/{id}",
      prepare: async (i) => {
        const tunnel = await ok("POST", `/pods/${(await pod(`dp${i}`)).id}/tunnel`, {
          tunnel_name: `d${i}`,
          subdomain: `d${i}`,
          protocol_type: "http",
          domain: null
        })
        return as("DELETE", `/tunnels/${tunnel.id}`)
      }
    },
    {
      endpoint: "POST /tenants/{id}/registry-credentials",
      prepare: async (i) =>
        as("POST", `/tenants/${creds.tenant_id}/registry-credentials`, {
          name: `c${i}`,
          server: "ghcr.io",
          username: "u",
          password: "p"
        })
    }
  ]
}
const TENANTS = 200

export const runStatements = async (databaseServer: string): Promise<StatementsReport> => {
  let statements = 0
  const counting = Layer.unwrapEffect(Effect.map(Effect.tracer, (inner) =>
    Layer.setTracer(Tracer.make({
      context: inner.context,
      span: (name, ...rest) => {
        if (name === "sql.execute") statements += 1
        else if (name === "sql.transaction") statements += 2
        return inner.span(name, ...rest)
      }
    }))))
  const runtime = ManagedRuntime.make(
    TestServer.layer({ store: PgTesting.layerFreshDatabase(databaseServer), adminPassword: Load.PASSWORD }).pipe(
      Layer.provide(counting)
    )
  )
  try {
    const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
    const port = address._tag === "TcpAddress" ? address.port : 0
    const seeded = await Load.seed(port)
    const rows: Array<StatementsRow> = []
    let n = 20_000
    for (const endpoint of Load.endpoints(seeded)) {
      const once = () =>
        call(port, endpoint.method, endpoint.path, endpoint.body && JSON.parse(endpoint.body(n++)), seeded.headers)
      await once()
      const before = statements
      for (let i = 0; i < CALLS; i++) await once()
      rows.push({ endpoint: endpoint.name, statements: (statements - before) / CALLS })
    }
    // Tunnels need a domain: the provider's default one.
    await call(port, "POST", "/provider-config", {
      external_subnet_cidr: "192.0.2.0/24",
      external_subnet_gateway: "192.0.2.1",
      peering_subnet_cidr: "100.64.0.0/16",
      pod_dns_ndots: null,
      edge_account_id: null,
      edge_domain: "apps.example.com"
    }, seeded.adminHeaders)
    const writes: Array<StatementsRow> = []
    for (const scenario of writeScenarios(port, seeded)) {
      let total = 0
      for (let i = 0; i < WRITE_CALLS; i++) {
        const counted = await scenario.prepare(i)
        const before = statements
        const response = await counted()
        if (response.status >= 300) throw new Error(`${scenario.endpoint}: ${response.status} ${response.text}`)
        total += statements - before
      }
      writes.push({ endpoint: scenario.endpoint, statements: total / WRITE_CALLS })
    }
    const filled = await runtime.runPromise(Scale.fillTenants(TENANTS, "heap"))
    const heap = await runtime.runPromise(Scale.readModelHeap(filled.tokens))
    return { rows, writes, heapPerViewKb: heap.heapPerViewKb, tenants: TENANTS }
  } finally {
    await runtime.dispose()
  }
}

export const toMarkdown = (report: StatementsReport) =>
  [
    "| endpoint | statements per request |",
    "|---|---:|",
    ...report.rows.map((r) => `| ${r.endpoint} | ${r.statements.toFixed(1)} |`),
    "",
    "Every write endpoint of a tenant's rows, one call each on a resource of its own (the request's",
    "authentication is one of the statements; BEGIN and COMMIT are two more where the commit holds a",
    "VPC or claims an Idempotency-Key, none where it is one statement alone):",
    "",
    "| write endpoint | statements per request |",
    "|---|---:|",
    ...report.writes.map((r) => `| ${r.endpoint} | ${r.statements.toFixed(1)} |`),
    "",
    `The read model on PostgreSQL, after ${report.tenants} tenants with a VPC and 10 rules were each authenticated ` +
    `once: ${report.heapPerViewKb.toFixed(1)} KB of heap per snapshot (its own decoded rows).`
  ].join("\n")

if (import.meta.url === `file://${process.argv[1]}`) {
  const server = process.env.TENET_BENCH_DATABASE_URL ?? process.env.TENET_TEST_DATABASE_URL
  if (server === undefined) throw new Error("set TENET_BENCH_DATABASE_URL to a PostgreSQL server")
  console.log(toMarkdown(await runStatements(server)))
}
