/**
 * The write path under load: `POST /security-rules` at 8 connections against `tenet-server` on
 * each store (a process of its own, as in `Load.ts`), in three shapes:
 *
 * - one tenant whose creates go to 40 VPCs while it holds about 100 rules;
 * - the same with 5,000 rules in 40 other VPCs of the tenant (a create must not cost more as
 *   the tenant grows);
 * - 8 tenants at once, each request another tenant's (writes of different tenants must not
 *   wait for each other);
 * - one tenant whose 40 VPCs are peered in a ring, each create an allow rule naming the next
 *   VPC (a rule that names another VPC converges both sides and their peers).
 *
 * On PostgreSQL, pgbench then runs the statements a create makes (a read standing in for the
 * authentication, BEGIN, the statement holding the VPC, the one making the writes with the
 * version and revision steps, the audit row and the event, COMMIT) at the same concurrency on
 * the same database: what the database allows, for Tenet's rate to be read against. And what
 * the change stream's order costs commits: the same over 8 tenants at 8 and 32 clients, with no
 * event, with one appended as Tenet does, and under the lock commits held before migration 0013.
 *
 * In the same run, on each store, what the issue "Writes at the speed of the database" holds the
 * creates against: `GET /vpcs` of a tenant with 20 VPCs at the same connections, and a bulk write,
 * a topology of 10 VPCs, 20 subnets and 50 pods in one `POST /tenants/{id}/topology` (the median
 * of three, each into a tenant of its own, answered once it is in force).
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Load from "./Load.js"
import { topology } from "./Scale.js"

export interface WriteRow {
  readonly store: Load.StoreKind
  readonly shape: string
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
}

export interface PgbenchResult {
  readonly tps: number
  readonly latencyMs: number
}

export interface EventOrderRow extends PgbenchResult {
  readonly clients: number
  readonly append: Append
}

export interface ReadRow {
  readonly store: Load.StoreKind
  readonly rps: number
  readonly p99: number
}

export interface BulkRow {
  readonly store: Load.StoreKind
  /** The median of the topology posts' durations. */
  readonly ms: number
}

export interface WritesReport {
  readonly rows: ReadonlyArray<WriteRow>
  /** `GET /vpcs` of a tenant with 20 VPCs, at the creates' connections. */
  readonly reads: ReadonlyArray<ReadRow>
  readonly bulk: ReadonlyArray<BulkRow>
  /** pgbench on the statements of a create, its event appended as Tenet appends it. */
  readonly pgbench: PgbenchResult | null
  readonly eventOrder: ReadonlyArray<EventOrderRow>
}

export const CONNECTIONS = 8
export const VPCS = 40
export const ONE_TENANT = "one tenant, about 100 rules"
export const LARGE_TENANT = "one tenant, 5,000 rules"
export const EIGHT_TENANTS = "8 tenants at once"
export const PEERED = "one tenant, 40 VPCs peered in a ring"
export const READ_VPCS = 20
export const BULK = { vpcs: 10, subnetsPerVpc: 2, pods: 50, rounds: 3 } as const

export interface Writer {
  readonly headers: Record<string, string>
  readonly creds: { readonly token: string; readonly tenant_id: string }
}

export const newTenant = async (port: number, admin: Record<string, string>, name: string): Promise<Writer> => {
  await Load.must(port, "POST", "/tenants", admin, { name, password: "write-password" })
  const session = (await Load.must(port, "POST", "/tenants/login", {}, { name, password: "write-password" })).body
  return { headers: { "x-auth-token": session.api_token }, creds: { token: session.api_token, tenant_id: session.id } }
}

/** `count` calls of `f`, 8 at a time. */
const inBatches = async <A>(count: number, f: (i: number) => Promise<A>): Promise<Array<A>> => {
  const out: Array<A> = []
  for (let i = 0; i < count; i += CONNECTIONS) {
    out.push(...await Promise.all(Array.from({ length: Math.min(CONNECTIONS, count - i) }, (_, j) => f(i + j))))
  }
  return out
}

export const vpcsOf = (port: number, writer: Writer, prefix: string, count: number) =>
  inBatches(count, async (i) =>
    (await Load.must(port, "POST", "/vpcs", writer.headers, {
      ...writer.creds,
      name: `${prefix}${i}`,
      enable_internet: false
    })).body.id as string)

/** `total` rules in `vpcs` (each VPC starts with one), spread evenly. */
export const fill = (port: number, writer: Writer, vpcs: ReadonlyArray<string>, total: number) =>
  inBatches(
    total - vpcs.length,
    (i) => Load.must(port, "POST", "/security-rules", writer.headers, Load.rule(vpcs[i % vpcs.length]!, i))
  )

/** Creates spread over the writers, each request the next writer's, into that writer's VPCs in turn. */
export const creating = (
  name: string,
  writers: ReadonlyArray<{ readonly writer: Writer; readonly vpcs: ReadonlyArray<string> }>
): Load.Endpoint => ({
  name,
  method: "POST",
  path: "/security-rules",
  body: (n) => {
    const { vpcs } = writers[n % writers.length]!
    return JSON.stringify(Load.rule(vpcs[Math.floor(n / writers.length) % vpcs.length]!, 100_000 + n))
  },
  headers: (n) => writers[n % writers.length]!.writer.headers
})

/** An allow rule in the `i`-th of `vpcs` naming the next one: what peers them (`Paths`). */
const naming = (vpcs: ReadonlyArray<string>, i: number, n: number) => ({
  ...Load.rule(vpcs[i % vpcs.length]!, n),
  action: "allow",
  remote_type: "vpc",
  remote_cidr: undefined,
  remote_vpc_id: vpcs[(i + 1) % vpcs.length]!
})

/** Creates into `vpcs` in turn, each naming the next VPC of the ring (`ring`) the setup peered. */
export const peering = (name: string, writer: Writer, vpcs: ReadonlyArray<string>): Load.Endpoint => ({
  name,
  method: "POST",
  path: "/security-rules",
  body: (n) => JSON.stringify(naming(vpcs, n, 100_000 + n)),
  headers: () => writer.headers
})

/** A tenant with `VPCS` VPCs, each peered with the next by a rule naming it. */
const ring = async (port: number, admin: Record<string, string>) => {
  const writer = await newTenant(port, admin, "peered")
  const vpcs = await vpcsOf(port, writer, "p", VPCS)
  await inBatches(vpcs.length, (i) => Load.must(port, "POST", "/security-rules", writer.headers, naming(vpcs, i, i)))
  return { writer, vpcs }
}

/** `GET /vpcs` of a fresh tenant holding `READ_VPCS` VPCs, warmed up, then measured. */
const reading = async (port: number, admin: Record<string, string>, seconds: number) => {
  const reader = await newTenant(port, admin, "reader")
  await vpcsOf(port, reader, "v", READ_VPCS)
  const endpoint: Load.Endpoint = { name: `GET /vpcs (${READ_VPCS} VPCs)`, method: "GET", path: "/vpcs" }
  await Load.load(port, endpoint, reader.headers, CONNECTIONS, 2)
  return Load.load(port, endpoint, reader.headers, CONNECTIONS, seconds)
}

/** The median duration (ms) of `BULK.rounds` topology posts, each into a tenant of its own. */
const bulkPosts = async (port: number, admin: Record<string, string>) => {
  const samples: Array<number> = []
  for (let round = 0; round < BULK.rounds; round++) {
    const writer = await newTenant(port, admin, `bulk${round}`)
    const body = { token: writer.creds.token, ...topology(BULK.vpcs, BULK.subnetsPerVpc, BULK.pods) }
    const started = performance.now()
    await Load.must(port, "POST", `/tenants/${writer.creds.tenant_id}/topology`, writer.headers, body)
    samples.push(performance.now() - started)
  }
  return Math.round([...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!)
}

/** How a pgbench create appends its event: not at all, as Tenet does, or under the old lock. */
export type Append = "none" | "lock-free" | "locked"

/**
 * The event a create appends, about the size of a real one (a rule as the API shows it), built
 * in SQL: pgbench would take the colons of a JSON literal for its variables.
 */
const EVENT_OBJECT = "jsonb_build_object('name', 'bench', 'description', NULL, 'direction', 'ingress', " +
  "'action', 'allow', 'priority', 100, 'protocol', 'tcp', 'ports', '443', " +
  "'remote', jsonb_build_object('type', 'cidr', 'cidr', '10.0.0.0/16'), 'target', jsonb_build_object('type', 'vpc'), " +
  "'enabled', true, 'created_at', to_jsonb(now()), 'updated_at', to_jsonb(now()))"

/**
 * The statements of one create, for pgbench: into a VPC of `tenants` chosen at random (of
 * `vpcs` in all), with its event appended as `append` says. "locked" takes the advisory lock
 * every commit with events held from its append to its end before migration 0013.
 */
const pgbenchScript = (tenants: ReadonlyArray<string>, vpcs: number, append: Append) => {
  const event = "jsonb_build_array(jsonb_build_object('tenant_id', :tenant::text, 'type', 'ADDED', " +
    `'kind', 'security_rule', 'id', gen_random_uuid()::text, 'object', ${EVENT_OBJECT}))`
  const appending = append === "none"
    ? []
    : [
      append === "locked"
        ? `w3 AS (SELECT tenet_append_events(${event}) FROM (SELECT pg_advisory_xact_lock(1413828165, 1)) l)`
        : `w3 AS (SELECT tenet_append_events(${event}))`
    ]
  const counted = ["w0", "w1", "w2", ...(append === "none" ? [] : ["w3"])]
  return [
    `\\set v random(0, ${vpcs - 1})`,
    `SELECT id AS vpc, tenant_id AS tenant FROM vpcs WHERE tenant_id IN (${
      tenants.map((t) => `'${t}'`).join(", ")
    }) ORDER BY id OFFSET :v LIMIT 1 \\gset`,
    "BEGIN;",
    "WITH held AS (SELECT id::text, version FROM vpcs WHERE id IN (:vpc) ORDER BY id FOR UPDATE), " +
    "claimed AS (SELECT NULL::text AS key WHERE false) " +
    "SELECT coalesce((SELECT json_object_agg(id, version) FROM held), '{}') AS versions, " +
    "(SELECT count(*)::int FROM claimed) AS claimed;",
    "WITH w0 AS (INSERT INTO security_rules (id, vpc_id, tenant_id, seq, name, description, direction, action, " +
    "priority, protocol, ports, remote_type, remote_cidr, remote_vpc_id, target_type, target_subnet_id, " +
    "target_pod_ids, enabled, created_at, updated_at) VALUES (gen_random_uuid(), :vpc, " +
    ":tenant, 1000 + :v, 'bench', NULL, 'ingress', 'allow', 100, 'tcp', '443', 'cidr', '10.0.0.0/16', NULL, " +
    "'vpc', NULL, NULL, true, now(), now()) RETURNING 1), " +
    "w1 AS (UPDATE vpcs SET version = version + 1 WHERE id IN (:vpc) RETURNING 1), " +
    "w2 AS (INSERT INTO audit_log (at, request_id, actor_type, actor, tenant_id, action, resource_kind, " +
    "resource_id, outcome) VALUES (now(), 'bench', 'tenant', 'bench', :tenant, 'securityRules.create', " +
    "'security_rule', 'r', 'success') RETURNING 1), " +
    appending.map((w) => `${w}, `).join("") +
    "step AS (UPDATE tenants SET revision = revision + 1 WHERE id = :tenant AND " +
    counted.map((w) => `(SELECT count(*) FROM ${w})`).join(" + ") + " >= 0 " +
    "RETURNING (revision - 1)::text AS before, revision::text AS after, " +
    "set_config('tenet.revision_stepped', id::text, true) AS stepped) SELECT before, after FROM step;",
    "COMMIT;"
  ].join("\n")
}

const pgbench = (
  databaseUrl: string,
  script: string,
  clients: number,
  seconds: number
): PgbenchResult => {
  const dir = mkdtempSync(join(tmpdir(), "tenet-pgbench-"))
  try {
    const file = join(dir, "create.sql")
    writeFileSync(file, `${script}\n`)
    const output = execFileSync(
      "pgbench",
      ["-n", "-M", "prepared", "-c", String(clients), "-j", "2", "-T", String(seconds), "-f", file, databaseUrl],
      { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }
    )
    const tps = Number(/tps = ([\d.]+)/.exec(output)?.[1])
    const latencyMs = Number(/latency average = ([\d.]+) ms/.exec(output)?.[1])
    return { tps, latencyMs }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * What ordering the change stream costs commits: the create's statements over 8 tenants at 8 and
 * 32 clients, without an event, with one appended as Tenet appends it, and under the old lock.
 */
const eventOrder = (databaseUrl: string, tenants: ReadonlyArray<string>, vpcs: number, seconds: number) =>
  [8, 32].flatMap((clients) =>
    (["none", "lock-free", "locked"] as const).map((append) => ({
      clients,
      append,
      ...pgbench(databaseUrl, pgbenchScript(tenants, vpcs, append), clients, seconds)
    }))
  )

const onStore = async (store: Load.StoreKind, seconds: number) => {
  const tenet = await Load.startTenet(store)
  try {
    const port = tenet.port
    const admin = {
      "x-admin-token":
        (await Load.must(port, "POST", "/admin/login", {}, { username: "admin", password: Load.PASSWORD }))
          .body.api_token
    }
    const read = await reading(port, admin, seconds)
    const bulk: BulkRow = { store, ms: await bulkPosts(port, admin) }
    const small = await newTenant(port, admin, "small")
    const smallVpcs = await vpcsOf(port, small, "v", VPCS)
    await fill(port, small, smallVpcs, 100)
    const large = await newTenant(port, admin, "large")
    await fill(port, large, await vpcsOf(port, large, "full", VPCS), 5_000)
    const largeVpcs = await vpcsOf(port, large, "v", VPCS)
    const many = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
      const writer = await newTenant(port, admin, `parallel${i}`)
      return { writer, vpcs: await vpcsOf(port, writer, "v", 10) }
    }))
    const peered = await ring(port, admin)
    const shapes = [
      creating(ONE_TENANT, [{ writer: small, vpcs: smallVpcs }]),
      creating(LARGE_TENANT, [{ writer: large, vpcs: largeVpcs }]),
      creating(EIGHT_TENANTS, many),
      peering(PEERED, peered.writer, peered.vpcs)
    ]
    const rows: Array<WriteRow> = []
    for (const shape of shapes) {
      await Load.load(port, shape, small.headers, CONNECTIONS, 2)
      const result = await Load.load(port, shape, small.headers, CONNECTIONS, seconds)
      rows.push({ store, shape: shape.name, rps: result.rps, p50: result.p50, p99: result.p99, errors: result.errors })
    }
    const reads: ReadRow = { store, rps: read.rps, p99: read.p99 }
    const url = tenet.databaseUrl
    if (url === undefined) return { rows, reads, bulk, pgbench: null, eventOrder: [] }
    return {
      rows,
      reads,
      bulk,
      pgbench: pgbench(url, pgbenchScript([small.creds.tenant_id], VPCS, "lock-free"), CONNECTIONS, seconds),
      eventOrder: eventOrder(url, many.map((m) => m.writer.creds.tenant_id), many.length * 10, seconds)
    }
  } finally {
    await tenet.stop()
  }
}

export const runWrites = async (options: {
  readonly seconds: number
  /** The stores to run on (default: memory, embedded, and postgres when a server is named). */
  readonly stores?: ReadonlyArray<Load.StoreKind>
}): Promise<WritesReport> => {
  if (Load.cpus !== null) Load.pinSelf(Load.cpus.load)
  try {
    const rows: Array<WriteRow> = []
    const reads: Array<ReadRow> = []
    const bulk: Array<BulkRow> = []
    let measured: PgbenchResult | null = null
    let eventOrderRows: ReadonlyArray<EventOrderRow> = []
    const stores: ReadonlyArray<Load.StoreKind> = options.stores ?? Load.STORES
    for (const store of stores) {
      const result = await onStore(store, options.seconds)
      rows.push(...result.rows)
      reads.push(result.reads)
      bulk.push(result.bulk)
      measured = result.pgbench ?? measured
      if (result.eventOrder.length > 0) eventOrderRows = result.eventOrder
    }
    return { rows, reads, bulk, pgbench: measured, eventOrder: eventOrderRows }
  } finally {
    if (Load.cpus !== null) Load.pinSelf(`0-${Load.cpus.server}`)
  }
}

const rate = (rps: number) => Math.round(rps).toLocaleString("en-US")

/**
 * The rows, and each target as measured: `floorPost` is the Effect HttpApi floor's
 * `POST /security-rules` at 8 connections in the same run (`Load.ts`).
 */
export const toMarkdown = (report: WritesReport, floorPost: number | undefined) => {
  const find = (store: Load.StoreKind, shape: string) => report.rows.find((r) => r.store === store && r.shape === shape)
  const lines = [
    "| store | shape | req/s | p50 (ms) | p99 (ms) | errors |",
    "|---|---|---:|---:|---:|---:|",
    ...report.rows.map((r) => `| ${r.store} | ${r.shape} | ${rate(r.rps)} | ${r.p50} | ${r.p99} | ${r.errors} |`),
    "",
    `In the same run, \`GET /vpcs\` of a tenant with ${READ_VPCS} VPCs at ${CONNECTIONS} connections, and a topology of ` +
    `${BULK.vpcs} VPCs, ${BULK.vpcs * BULK.subnetsPerVpc} subnets and ${BULK.pods} pods in one post (the median of ` +
    `${BULK.rounds}, each answered once in force):`,
    "",
    "| store | GET /vpcs req/s | GET /vpcs p99 (ms) | topology post (ms) |",
    "|---|---:|---:|---:|",
    ...report.reads.map((r) =>
      `| ${r.store} | ${rate(r.rps)} | ${r.p99} | ${report.bulk.find((b) => b.store === r.store)?.ms ?? ""} |`
    ),
    ...(report.pgbench === null ? [] : [
      "",
      `pgbench, the same statements (the event appended as Tenet appends it) at ${CONNECTIONS} clients on the ` +
      `same database: ${rate(report.pgbench.tps)} transactions/s, ${report.pgbench.latencyMs} ms average.`
    ]),
    ...(report.eventOrder.length === 0 ? [] : [
      "",
      "What ordering the change stream costs commits (pgbench, the create's statements over 8 tenants):",
      "",
      "| clients | event appended | transactions/s | average (ms) |",
      "|---:|---|---:|---:|",
      ...report.eventOrder.map((r) =>
        `| ${r.clients} | ${
          { none: "none", "lock-free": "as Tenet appends it", locked: "under the old lock" }[r.append]
        } | ${rate(r.tps)} | ${r.latencyMs} |`
      )
    ]),
    "",
    "| target | measured | met |",
    "|---|---|---|"
  ]
  /** A target's line: what it asks, what was measured, and whether that meets it (blank when unmeasured). */
  const target = (what: string, measured: number | undefined, unit: string, met: (m: number) => boolean) =>
    lines.push(
      measured === undefined
        ? `| ${what} |  |  |`
        : `| ${what} | ${measured}${unit} | ${met(measured) ? "yes" : "no"} |`
    )
  /** A target on `part` as a share of `whole`, at least `least`. */
  const share = (what: string, part: number | undefined, whole: number | undefined, least: number) =>
    target(
      what,
      part === undefined || whole === undefined || whole === 0 ? undefined : Math.round((part / whole) * 100),
      "%",
      (p) => p >= least * 100
    )
  const memory = find("memory", ONE_TENANT)
  const embedded = find("embedded", ONE_TENANT)
  const postgres = find("postgres", ONE_TENANT)
  const readsOf = (store: Load.StoreKind) => report.reads.find((r) => r.store === store)?.rps
  if (memory !== undefined) {
    share("memory >= 30% of the floor's POST", memory.rps, floorPost, 0.3)
    share(`memory >= 40% of its GET /vpcs (${READ_VPCS})`, memory.rps, readsOf("memory"), 0.4)
    target("memory p99 < 25 ms", memory.p99, " ms", (ms) => ms < 25)
    if (embedded !== undefined) share("embedded >= 40% of memory", embedded.rps, memory.rps, 0.4)
  }
  if (postgres !== undefined) {
    share("postgres >= 50% of pgbench", postgres.rps, report.pgbench?.tps, 0.5)
    target("postgres p99 < 50 ms", postgres.p99, " ms", (ms) => ms < 50)
    share(`postgres GET /vpcs (${READ_VPCS}) >= 50% of memory's`, readsOf("postgres"), readsOf("memory"), 0.5)
    target(
      "postgres topology post < 1,000 ms",
      report.bulk.find((b) => b.store === "postgres")?.ms,
      " ms",
      (ms) => ms < 1_000
    )
    const eight = find("postgres", EIGHT_TENANTS)
    const times = eight === undefined ? undefined : Math.round((eight.rps / postgres.rps) * 10) / 10
    target("postgres, 8 tenants >= 3x one tenant", times, "x", (x) => x >= 3)
  }
  for (const store of ["memory", "embedded", "postgres"] as const) {
    const one = find(store, ONE_TENANT)
    const large = find(store, LARGE_TENANT)
    if (one !== undefined && large !== undefined) share(`${store}, 5,000 rules >= 90% of 100`, large.rps, one.rps, 0.9)
  }
  return lines.join("\n")
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const stores = process.env.TENET_BENCH_STORES?.split(",") as ReadonlyArray<Load.StoreKind> | undefined
  const report = await runWrites({ seconds: Number(process.env.TENET_LOAD_SECONDS ?? 5), ...(stores && { stores }) })
  console.log(toMarkdown(report, undefined))
}
