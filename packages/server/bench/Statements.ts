/**
 * Statements per request on PostgreSQL, counted by the server itself: the load's seed and
 * endpoints against a server in this process on a fresh database, with a tracer that counts
 * `@effect/sql`'s spans (`sql.execute` is one statement, `sql.transaction` two: BEGIN and
 * COMMIT). Each endpoint is called once to warm the read model, then counted over 20 calls.
 * Then the heap a snapshot takes there, for 200 small tenants.
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
  /** The read model's heap per snapshot here, for tenants with a VPC and 10 rules. */
  readonly heapPerViewKb: number
  readonly tenants: number
}

const CALLS = 20
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
    const filled = await runtime.runPromise(Scale.fillTenants(TENANTS, "heap"))
    const heap = await runtime.runPromise(Scale.readModelHeap(filled.tokens))
    return { rows, heapPerViewKb: heap.heapPerViewKb, tenants: TENANTS }
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
    `The read model on PostgreSQL, after ${report.tenants} tenants with a VPC and 10 rules were each authenticated ` +
    `once: ${report.heapPerViewKb.toFixed(1)} KB of heap per snapshot (its own decoded rows).`
  ].join("\n")

if (import.meta.url === `file://${process.argv[1]}`) {
  const server = process.env.TENET_BENCH_DATABASE_URL ?? process.env.TENET_TEST_DATABASE_URL
  if (server === undefined) throw new Error("set TENET_BENCH_DATABASE_URL to a PostgreSQL server")
  console.log(toMarkdown(await runStatements(server)))
}
