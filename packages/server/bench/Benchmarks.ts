/**
 * `pnpm bench`: every package's micro-benchmarks (vitest bench), HTTP load against the server
 * and a bare node:http ceiling, scale, the soak, then the cold start of the installed server on
 * each store; prints the results and writes them, with the machine they ran on, to BENCHMARKS.md
 * at the root. Loopback only; about 25 minutes on 2 vCPU.
 *
 * The Kubernetes orchestrator's informer caches are measured per 1,000 pods on a real API
 * server (`Informers.ts`), and drift repaired by the controller (`Drift.ts`), where
 * `.ci/kube-apiserver` has built one; a change's way to the first packet that obeys it, and the
 * packet differential's run time, on OVN's real data plane (`Packets.ts`), where it is installed;
 * a PostgreSQL failover under write load (`Failover.ts`), where PostgreSQL's binaries are.
 *
 * Rules as code (`Declarations.ts`: a 200-rule plan and apply, a create with 10 guardrails)
 * follows the write path's, then an address set's edit across 20 VPCs (`AddressSets.ts`), then
 * another tenant's latency beside a tenant of 2,000 pods asking for its most expensive answers
 * (`Neighbours.ts`), then pages of 10,000 tenants on PostgreSQL (`Pages.ts`) and the
 * change stream across two replicas with 100 watchers (`Watch.ts`).
 *
 * The write path's own load (`Writes.ts`: creates with 100 and 5,000 rules in the tenant, 8
 * tenants at once, and pgbench running the same statements on PostgreSQL, and what the change
 * stream's order costs commits) follows the load, then the peer (`Peer.ts`: kube-apiserver's
 * ConfigMap create on etcd at the same connections, beside Tenet's create on each store, where
 * `.ci/kube-apiserver` has built one), then where a create's CPU goes (`Profile.ts`:
 * effects per request, CPU per create and the top frames of a CPU profile, on every store).
 *
 * TENET_LOAD_SECONDS (default 5 per run), TENET_SCALE_TENANTS (default 10,000) and
 * TENET_SOAK_SECONDS (default 60) shorten or lengthen the parts. With TENET_BENCH_DATABASE_URL
 * (or TENET_TEST_DATABASE_URL) naming a PostgreSQL server, the load and the cold start run on
 * it too, and the statements each benchmarked endpoint makes there are counted.
 */
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, totalmem } from "node:os"
import { fileURLToPath } from "node:url"
import * as AddressSets from "./AddressSets.js"
import * as Declarations from "./Declarations.js"
import * as Drift from "./Drift.js"
import * as Failover from "./Failover.js"
import * as Informers from "./Informers.js"
import * as Load from "./Load.js"
import * as Neighbours from "./Neighbours.js"
import * as Packets from "./Packets.js"
import * as Pages from "./Pages.js"
import * as Peer from "./Peer.js"
import * as Profile from "./Profile.js"
import * as RequestPath from "./RequestPath.js"
import * as Scale from "./Scale.js"
import { runSoak, toMarkdown } from "./Soak.js"
import * as Statements from "./Statements.js"
import * as Watch from "./Watch.js"
import * as Writes from "./Writes.js"

const root = fileURLToPath(new URL("../../../", import.meta.url))

interface VitestBench {
  readonly name: string
  readonly hz: number
  readonly mean: number
  readonly p99: number
  readonly sampleCount: number
}

interface VitestReport {
  readonly files: ReadonlyArray<{
    readonly filepath: string
    readonly groups: ReadonlyArray<{ readonly fullName: string; readonly benchmarks: ReadonlyArray<VitestBench> }>
  }>
}

/** Runs every package's vitest benchmarks; each as a group, a name and its statistics. */
const microBenchmarks = () => {
  const output = `${root}build/bench.json`
  // The packages with benchmarks (the extra server projects would repeat them), one file at a
  // time: benchmarks running side by side take each other's CPU.
  execFileSync("pnpm", [
    "exec",
    "vitest",
    "bench",
    "--run",
    "--no-file-parallelism",
    "--project",
    "core",
    "--project",
    "server",
    `--outputJson=${output}`
  ], {
    cwd: root,
    stdio: "inherit"
  })
  const report = JSON.parse(readFileSync(output, "utf8")) as VitestReport
  return report.files.flatMap((file) =>
    file.groups.flatMap((group) =>
      group.benchmarks.map((bench) => ({
        group: group.fullName.split(" > ").slice(1).join(" > ") || group.fullName,
        bench
      }))
    )
  )
}

type Micro = ReturnType<typeof microBenchmarks>

const microTable = (micro: Micro) =>
  [
    "| group | benchmark | ops/s | mean (us) | p99 (us) |",
    "|---|---|---:|---:|---:|",
    ...micro.map(({ bench: b, group }) =>
      `| ${group} | ${b.name} | ${Math.round(b.hz).toLocaleString("en-US")} | ${(b.mean * 1000).toFixed(1)} | ` +
      `${(b.p99 * 1000).toFixed(1)} |`
    )
  ].join("\n")

const FLOWS = "decide 1000 flows, "

/** Decisions per second, from the benchmarks that decide 1,000 flows per iteration. */
const decisions = (micro: Micro) =>
  micro.filter(({ bench }) => bench.name.startsWith(FLOWS)).map(({ bench }) =>
    `- ${bench.name.slice(FLOWS.length)}: ${Math.round(bench.hz * 1000).toLocaleString("en-US")} decisions/s`
  ).join("\n")

const machine = () =>
  `${cpus().length} x ${cpus()[0]?.model.trim() ?? "unknown CPU"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ` +
  `Node ${process.version}, ${process.platform}/${process.arch}`

const micro = microBenchmarks()
const load = await Load.runLoad({ connections: [8, 64], seconds: Number(process.env.TENET_LOAD_SECONDS ?? 5) })
const loadText = Load.toMarkdown(load)
console.log(`\n${loadText}\n`)

/** Issue 34's target: every read endpoint at >= 50% of the HttpApi floor on its route, memory store. */
const readTargets = [
  "| read endpoint (memory store) | connections | of the floor (target >= 50%) |",
  "|---|---:|---:|",
  ...load.filter((r) => r.target === "tenet, memory store" && r.endpoint !== "POST /security-rules").map((r) =>
    `| ${r.endpoint} | ${r.connections} | ${r.ofFloor === null ? "" : `${Math.round(r.ofFloor * 100)}%`} |`
  )
].join("\n")
const writes = await Writes.runWrites({ seconds: Number(process.env.TENET_LOAD_SECONDS ?? 5) })
const floorPost = load.find((r) =>
  r.target === "Effect HttpApi, routes only" && r.endpoint === "POST /security-rules" && r.connections === 8
)?.rps
const writesText = Writes.toMarkdown(writes, floorPost)
console.log(`\n${writesText}\n`)
const peerText = Peer.available()
  ? Peer.toMarkdown(await Peer.runPeer(Number(process.env.TENET_LOAD_SECONDS ?? 5)), writes)
  : "No kube-apiserver (`.ci/kube-apiserver`) or etcd here: the peer's create is not measured."
console.log(`\n${peerText}\n`)
const createProfile = await Profile.runProfile(Number(process.env.TENET_LOAD_SECONDS ?? 5), Load.STORES)
console.log(`\n${createProfile}\n`)
const declarationsText = Declarations.toMarkdown(await Declarations.runDeclarations())
console.log(`\n${declarationsText}\n`)
const addressSetsText = AddressSets.toMarkdown(await AddressSets.runAddressSets())
console.log(`\n${addressSetsText}\n`)
const neighboursText = Neighbours.toMarkdown(
  await Neighbours.runNeighbours({ seconds: Number(process.env.TENET_LOAD_SECONDS ?? 5) * 3 })
)
console.log(`\n${neighboursText}\n`)
const pagesText = Pages.toMarkdown(await Pages.runPages())
console.log(`\n${pagesText}\n`)
const watchText = Watch.toMarkdown(await Watch.runWatch())
console.log(`\n${watchText}\n`)
const databaseServer = process.env.TENET_BENCH_DATABASE_URL ?? process.env.TENET_TEST_DATABASE_URL
const statementsText = databaseServer === undefined
  ? "No PostgreSQL server was named (TENET_BENCH_DATABASE_URL): not counted."
  : Statements.toMarkdown(await Statements.runStatements(databaseServer))
console.log(`\n${statementsText}\n`)
const scale = await Scale.runScale({ tenants: Number(process.env.TENET_SCALE_TENANTS ?? 10_000) })
const scaleText = Scale.toMarkdown(scale)
console.log(`\n${scaleText}\n`)
const informersText = Informers.available()
  ? Informers.toMarkdown(await Effect.runPromise(Informers.run()))
  : "No kube-apiserver (`.ci/kube-apiserver`), etcd or Kube-OVN CRDs here: not measured."
console.log(`\n${informersText}\n`)
const driftText = Drift.available()
  ? Drift.toMarkdown(await Effect.runPromise(Drift.run()))
  : "No kube-apiserver (`.ci/kube-apiserver`), etcd or Kube-OVN CRDs here: not measured."
console.log(`\n${driftText}\n`)
const packetsText = Packets.available()
  ? Packets.toMarkdown(await Effect.runPromise(Packets.run()))
  : "No OVN data plane here (openvswitch-switch, ovn-host, ethtool, root): not measured."
console.log(`\n${packetsText}\n`)
const failoverText = Failover.available()
  ? Failover.toMarkdown(await Failover.run())
  : "No PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) here: not measured."
console.log(`\n${failoverText}\n`)
const soak = await runSoak({ seconds: Number(process.env.TENET_SOAK_SECONDS ?? 60), tenants: 8 })
const soakText = toMarkdown(soak)
console.log(`\n${soakText}\n`)
// A program of its own (test/consumer/ColdStart.ts): it packs and installs the packages with npm.
const coldStartText = execFileSync(process.execPath, [
  "--conditions=@tenet/source",
  "--import",
  "tsx",
  "test/consumer/ColdStart.ts"
], {
  cwd: root,
  encoding: "utf8",
  stdio: ["ignore", "pipe", "inherit"]
}).trim()
console.log(`\n${coldStartText}\n`)

/**
 * Where a request's time goes where Tenet is furthest from the floor: from CPU profiles of the
 * load's server (`node --cpu-prof` on the built server, memory store, 8 connections), taken by
 * hand on 2026-11-25 and to be taken again when the code they describe changes.
 */
const profiles = [
  "### Where the time goes (CPU profiles of the server under this load, memory store)",
  "",
  "- `GET /pods` (issue 34): a pod's status is read from the cluster on every read (the spec's",
  "  live status). It was 17% of the floor: turning the list into JSON text and that text into",
  "  bytes took 36% of the server's CPU, the simulated cluster and the status comparison 22%, and",
  "  tsx's run-time naming of closures 12% (the bench ran the server from its TypeScript sources;",
  "  it now runs the built `tenet-server`). Now each view's JSON is kept as bytes, a list's while",
  "  its items are the same objects, and a pod's runtime is handed out again while unchanged: the",
  "  Effect runtime is 46% of the CPU, socket writes 12%, garbage collection 7%, Tenet's own code",
  "  under 5%.",
  "- `POST /security-rules/evaluate`: the Effect runtime is half of the CPU and garbage",
  "  collection 13% (a POST runs the platform's payload decoding, the security middleware and",
  "  the use case's traced `Effect.fn`, each some effects and allocations); Tenet's own code",
  "  (read model, matcher, encoding, the request path's middlewares) is about 5%. The floor",
  "  decodes its body as `Schema.Unknown` and runs no middleware: that is the gap.",
  "- `POST /security-rules`: \"Where a create's CPU goes\" below, profiled by `bench/Profile.ts`",
  "  on every run: the Effect runtime's own functions (fiber run loop, FiberRefs, contexts) are",
  "  most of the CPU by inclusive time and garbage collection the largest self time; Tenet's own",
  "  frames are thin (the pipeline's commit, the event's view, the body's guard, the plan)."
]

writeFileSync(
  `${root}BENCHMARKS.md`,
  [
    "# Benchmarks",
    "",
    `Written by \`pnpm bench\` on ${new Date().toISOString().slice(0, 10)}: ${machine()}.`,
    "Figures are from one run on that machine; compare runs on one machine, not across machines.",
    "",
    "## Rule engine (200-rule VPC, random flows)",
    "",
    decisions(micro),
    "",
    "## HTTP load (autocannon, keep-alive; each server in a process of its own; PostgreSQL when a server is named)",
    "",
    "Three servers answer the same bytes: a bare `node:http` server (`bench/Ceiling.ts`, the",
    "ceiling), an `@effect/platform` HttpApi server with Tenet's routes and nothing else",
    "(`bench/Floor.ts`: the floor of any HttpApi server on Node), and Tenet, as operators run it",
    "(the built `tenet-server`, plain JavaScript). \"of ceiling\" is req/s over the ceiling's, \"of",
    "floor\" over the floor's on the same route and connections; the gap between the ceiling and",
    "the floor is the framework's, the rest is Tenet's.",
    "",
    "p50 and p99 are the steady state's: each connection's first response is left out and its",
    "slowest is \"setup max\". A saturated Node server accepts one new connection per turn of its",
    "event loop (libuv 1.45+), so connections opened all at once into a busy server wait for",
    "seconds; that measures opening connections, not serving requests. With every connection",
    "waiting for its answer before it sends again, p50 is about connections / req/s (Little's",
    "law): a p99 under 20 ms at 64 connections needs more than 3,200 req/s.",
    "Each server runs on a CPU of its own and the load comes from another (where the machine has",
    "two), and every target is warmed up for 2 s per endpoint before it is measured.",
    "\"tracing on\" rows are a server of their own exporting every span over OTLP to a local sink",
    "(`OTEL_EXPORTER_OTLP_ENDPOINT`); the other Tenet rows have tracing off, the default, where no",
    "span is made at all.",
    "",
    loadText,
    "",
    readTargets,
    "",
    ...profiles,
    "",
    "## The write path (`bench/Writes.ts`)",
    "",
    "`POST /security-rules` at 8 connections, creates spread over 40 VPCs of the tenant, each",
    "store's server in a process of its own as above, 2 s of warm-up then the measured run: with",
    "about 100 rules in the tenant, with 5,000 more in 40 other VPCs, and with each request another",
    "of 8 tenants'. On PostgreSQL, pgbench then runs the statements a create makes (a read standing",
    "in for the authentication, BEGIN, the statement holding the VPC, the `WITH` statement of",
    "writes and the event, COMMIT) at 8 clients on the same database. \"of the floor's POST\" is",
    "against the Effect HttpApi floor's `POST /security-rules` at 8 connections in the table above.",
    "",
    writesText,
    "",
    "### The peer: kube-apiserver's create beside Tenet's (`bench/Peer.ts`)",
    "",
    peerText,
    "",
    "### Where a create's CPU goes (`bench/Profile.ts`)",
    "",
    createProfile,
    "",
    "The target tables above say which targets this run met. Where they are missed, why (the",
    "profile above; each try made, and what it did, in [docs/performance.md](docs/performance.md)):",
    "",
    "- The server is CPU-bound, not lock-bound: one tenant's creates do not wait for each other",
    "  (the tenant's revision row is held only by the one write statement), and no lock is held",
    "  across tenants (the change stream's events are numbered by its readers), so 8 tenants at",
    "  once run at the rate of one process's CPU. More tenants scale with more server processes",
    "  on the database.",
    "- That CPU goes to the Effect runtime running the create's effects (the counts above; the",
    "  floor's POST runs none): a third of them are the HTTP layer's (`HttpApi`'s router,",
    "  middlewares, schema decoding and encoding), which a Tenet change does not reach without",
    "  replacing the router. Fewer effects of Tenet's own did not buy CPU in proportion: the",
    "  memory store's commit went from 167 effects to 67 at the same CPU per create. It is also",
    "  why PostgreSQL reaches a fifth of what pgbench gets from the same statements: pgbench's",
    "  clients spend nothing between statements, Tenet's process spends its CPU there (fewer",
    "  statements per create did not move it).",
    "- The peer (kube-apiserver's create, issue 68): writes that arrive together are decided in",
    "  turn and committed together (ARCHITECTURE.md, \"Writes in batches\"), and a request's fixed",
    "  cost was cut (its middlewares, derived values kept per state); what is left between Tenet",
    "  and the peer is the same CPU per request on the server's one core, measured try by try in",
    "  docs/performance.md (issue 68).",
    "- Embedded runs PostgreSQL compiled to WebAssembly in the server's own process and thread:",
    "  its statements take the CPU the memory store leaves to Tenet, hence a quarter of memory.",
    "- p99 at 8 connections on PostgreSQL and embedded moves most between runs of one build (its",
    "  top 1% is a dozen or so answers of the measured seconds): read it over several runs, as",
    "  docs/performance.md does.",
    "- Reads on PostgreSQL are at about half of memory's, above it on some rows and below on",
    "  others: each read makes one statement, its authentication (which answers the tenant's",
    "  revision too), before it serves the cached state; the memory store answers the same in",
    "  process.",
    "",
    "## Rules as code and guardrails (`bench/Declarations.ts`, issue 35)",
    "",
    declarationsText,
    "",
    "## An address set's edit across VPCs (`bench/AddressSets.ts`, issue 50)",
    "",
    addressSetsText,
    "",
    "## A noisy neighbour (`bench/Neighbours.ts`, issue 63)",
    "",
    neighboursText,
    "",
    "## Pages (`bench/Pages.ts`, issue 36)",
    "",
    pagesText,
    "",
    "## The change stream (`bench/Watch.ts`, issue 36)",
    "",
    watchText,
    "",
    "## Statements per request on PostgreSQL",
    "",
    "Counted by the server itself (`bench/Statements.ts`: `@effect/sql`'s spans; a transaction is",
    "two, BEGIN and COMMIT), for the load's endpoints on the load's seed, after one warm-up call.",
    "",
    statementsText,
    "",
    "## Scale (memory store)",
    "",
    scaleText,
    "",
    "## The request path's size (issue 34)",
    "",
    "The modules a request passes through around the framework, between the socket and the",
    "handler, with the Node listener (`bench/RequestPath.ts` counts them):",
    "",
    RequestPath.toMarkdown(),
    "",
    "Where it misses: what is left is behaviour, not plumbing around the framework. The second",
    "router, the body pre-read and its size detection by message text, the compiled copy of",
    "`Schema.encode` and the `Proxy` over the handler builder are gone. What remains answers for",
    "the contract's error rules (every refusal JSON with `detail`, 405 with `Allow` as routes of the",
    "platform's router, a refused body worded field by field), for shutdown (draining, the answer",
    "of a request cut at the grace, connections closed without resetting a request on its way",
    "in, requests of a closed connection abandoned), for Node's own parser errors in JSON, and",
    "for the log line, metrics and audit entry of every request; about a quarter of the lines",
    "are comments saying why.",
    "",
    "## Informer caches (Kubernetes)",
    "",
    informersText,
    "",
    "## Drift repaired (Kubernetes)",
    "",
    driftText,
    "",
    "## A change in packets (OVN's data plane)",
    "",
    packetsText,
    "",
    "## Failover (`bench/Failover.ts`, issue 66)",
    "",
    failoverText,
    "",
    "## Micro-benchmarks",
    "",
    microTable(micro),
    "",
    "## Soak",
    "",
    soakText,
    "",
    "## Cold start (the installed `tenet-server`, spawn to the first 200 from /healthz)",
    "",
    "The packages packed and installed with npm as an operator installs them; PostgreSQL when",
    "TENET_BENCH_DATABASE_URL or TENET_TEST_DATABASE_URL names a server.",
    "",
    coldStartText,
    ""
  ].join("\n")
)
console.log("wrote BENCHMARKS.md")
if (soak.errors > 0) process.exitCode = 1
