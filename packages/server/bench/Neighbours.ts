/**
 * A noisy neighbour (issue "No tenant can hurt another"): one tenant runs a VPC of 2,000 pods in
 * 8 subnets and asks, from several connections at once, for its most expensive answers (every
 * pod's reachability, a page after another; the subnets' summary; explain between two subnets;
 * the analysis; its topology), while another tenant polls `GET /vpcs`. What the other tenant
 * sees (its p50, p99 and slowest answer, quiet and then beside the neighbour) is the figure; the
 * neighbour's own answers (their time and bytes, and how many were told to wait, 429) say what
 * bounded them. On every store, the server in a process of its own.
 */
import { Worker } from "node:worker_threads"
import * as Load from "./Load.js"
import { newTenant } from "./Writes.js"

export const PODS = 2000
export const SUBNETS = 8
/** Connections the neighbour asks on at once. */
export const NOISY_CONNECTIONS = 4

export interface ExpensiveRow {
  readonly request: string
  readonly count: number
  readonly throttled: number
  readonly p50: number
  readonly max: number
  readonly bytes: number
}

export interface NeighbourRow {
  readonly store: Load.StoreKind
  /** What the neighbour asks for: its reachability alone (the target's case), or every expensive answer. */
  readonly asking: string
  readonly quiet: { readonly p50: number; readonly p99: number; readonly max: number }
  readonly loaded: { readonly p50: number; readonly p99: number; readonly max: number; readonly count: number }
  readonly expensive: ReadonlyArray<ExpensiveRow>
}

/**
 * The neighbour's connections, each asking for the expensive answers in turn (following each
 * answer's `Link` to its next page), until told to stop; then what each path got, by path.
 */
const NOISE = `
const { parentPort, workerData } = require("node:worker_threads")
const { connections, headers, paths, port } = workerData
const seen = paths.map(() => ({ count: 0, throttled: 0, bytes: 0, times: [] }))
let running = true
parentPort.once("message", () => { running = false })
const ask = async (connection) => {
  const next = new Map()
  for (let i = connection; running; i++) {
    const at = i % paths.length
    const started = performance.now()
    const answer = await fetch("http://127.0.0.1:" + port + (next.get(at) ?? paths[at]), { headers })
    const text = await answer.text()
    const row = seen[at]
    if (answer.status === 429) { row.throttled++; continue }
    if (answer.status !== 200) throw new Error(paths[at] + ": " + answer.status + " " + text.slice(0, 300))
    row.times.push(performance.now() - started)
    row.count++
    row.bytes = Math.max(row.bytes, text.length)
    const link = /<([^>]+)>; rel="next"/.exec(answer.headers.get("link") ?? "")
    next.set(at, link === null ? paths[at] : link[1])
  }
}
Promise.all(Array.from({ length: connections }, (_, c) => ask(c))).then(() => parentPort.postMessage(seen))
`

const quantile = (sorted: ReadonlyArray<number>, q: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

const summary = (times: ReadonlyArray<number>) => {
  const sorted = [...times].sort((a, b) => a - b)
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] ?? 0 }
}

/** A GET, timed to its last byte: its status, body and `Link` to the next page. */
const timed = async (port: number, path: string, headers: Record<string, string>) => {
  const started = performance.now()
  const answer = await fetch(`http://127.0.0.1:${port}${path}`, { headers })
  const text = await answer.text()
  return {
    millis: performance.now() - started,
    response: { status: answer.status, text, link: answer.headers.get("link") ?? "" }
  }
}

/** `GET /vpcs` every 20 ms for `seconds`: each answer's time. */
const poll = async (port: number, headers: Record<string, string>, seconds: number) => {
  const times: Array<number> = []
  const until = performance.now() + seconds * 1000
  while (performance.now() < until) {
    const { millis, response } = await timed(port, "/vpcs", headers)
    if (response.status !== 200) throw new Error(`GET /vpcs: ${response.status} ${response.text}`)
    times.push(millis)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return times
}

export const runNeighbours = async (options: {
  readonly seconds: number
  readonly stores?: ReadonlyArray<Load.StoreKind>
  /** Node's own flags for the server (`--cpu-prof`, to see where a run's time went). */
  readonly nodeArgs?: ReadonlyArray<string>
}): Promise<Array<NeighbourRow>> => {
  const rows: Array<NeighbourRow> = []
  // The server on a CPU of its own, the tenants on the other (`Load.cpus`), where they can be kept apart.
  if (Load.cpus !== null) Load.pinSelf(Load.cpus.load)
  for (const store of options.stores ?? Load.STORES) {
    const server = await Load.startTenet(store, {}, undefined, options.nodeArgs)
    try {
      const { port } = server
      const admin = (await Load.must(port, "POST", "/admin/login", {}, { username: "admin", password: Load.PASSWORD }))
        .body
      const adminHeaders = { "x-admin-token": admin.api_token as string }
      const noisy = await newTenant(port, adminHeaders, "noisy")
      const quiet = await newTenant(port, adminHeaders, "quiet")
      await Load.must(port, "POST", "/vpcs", quiet.headers, { ...quiet.creds, name: "own", enable_internet: false })
      const subnets = Array.from({ length: SUBNETS }, (_, i) => ({
        name: `s${i}`,
        vpc_name: "big",
        cidr: `10.0.${i}.0/24`,
        gateway_ip: `10.0.${i}.1`
      }))
      await Load.must(port, "POST", `/tenants/${noisy.creds.tenant_id}/topology`, noisy.headers, {
        token: noisy.creds.token,
        vpcs: [{ name: "big", enable_internet: true }],
        subnets,
        pods: Array.from({ length: PODS }, (_, i) => ({
          name: `p${i}`,
          vpc_name: "big",
          subnet_name: `s${i % SUBNETS}`,
          container_image: "nginx:1.27"
        }))
      })
      const vpcs = (await Load.must(port, "GET", "/vpcs", noisy.headers)).body as Array<{ id: string }>
      const vpc = vpcs[0]!.id
      const listed = (await Load.must(port, "GET", "/subnets", noisy.headers)).body as Array<{ id: string }>
      const rule = (i: number, target: Record<string, unknown>) =>
        Load.must(port, "POST", "/security-rules", noisy.headers, {
          vpc_id: vpc,
          name: `r${i}`,
          direction: i % 2 === 0 ? "ingress" : "egress",
          action: i % 3 === 0 ? "deny" : "allow",
          priority: 100 + i,
          protocol: "tcp",
          ports: `${1000 + i * 10}-${1005 + i * 10}`,
          remote_type: "cidr",
          remote_cidr: `10.${i % 200}.0.0/16`,
          ...target
        })
      for (let i = 0; i < 20; i++) {
        await rule(i, i % 2 === 0 ? { target_type: "subnet", target_subnet_id: listed[i % SUBNETS]!.id } : {})
      }

      const quietTimes = await poll(port, quiet.headers, 3)
      const reachability = [`/vpcs/${vpc}/reachability?detail=pods`, `/vpcs/${vpc}/reachability`]
      const phases = [
        { asking: "its reachability (every pod's, a page after another, and the summary)", expensive: reachability },
        {
          asking: "every expensive answer (reachability, explain, the analysis, its topology)",
          expensive: [
            ...reachability,
            `/vpcs/${vpc}/explain?from=${listed[0]!.id}&to=${listed[1]!.id}&protocol=tcp&port=1040`,
            `/security-rules/analysis?vpc_id=${vpc}`,
            `/tenants/${noisy.creds.tenant_id}/topology`
          ]
        }
      ]
      for (const { asking, expensive } of phases) {
        const stopped = new Promise<Array<{ count: number; throttled: number; bytes: number; times: Array<number> }>>(
          (resolve, reject) => {
            // The neighbour asks from a thread of its own: reading its answers (megabytes of them)
            // must not delay the other tenant's poll, which this thread times.
            const worker = new Worker(NOISE, {
              eval: true,
              workerData: { port, headers: noisy.headers, paths: expensive, connections: NOISY_CONNECTIONS }
            })
            worker.once("message", resolve)
            worker.once("error", reject)
            setTimeout(() => worker.postMessage("stop"), options.seconds * 1000)
          }
        )
        const loadedTimes = await poll(port, quiet.headers, options.seconds)
        const seen = await stopped
        rows.push({
          store,
          asking,
          quiet: summary(quietTimes),
          loaded: { ...summary(loadedTimes), count: loadedTimes.length },
          expensive: expensive.map((path, i) => {
            const row = seen[i]!
            return {
              request: path.replace(vpc, "{vpc}").replace(noisy.creds.tenant_id, "{tenant}").replace(
                /from=[^&]+&to=[^&]+/,
                "from={subnet}&to={subnet}"
              ),
              count: row.times.length,
              throttled: row.throttled,
              p50: summary(row.times).p50,
              max: summary(row.times).max,
              bytes: row.bytes
            }
          })
        })
      }
    } finally {
      await server.stop()
    }
  }
  if (Load.cpus !== null) Load.pinSelf(`0-${Load.cpus.server}`)
  return rows
}

const ms = (n: number) => `${n.toFixed(1)} ms`

export const toMarkdown = (rows: ReadonlyArray<NeighbourRow>) =>
  [
    `Another tenant's \`GET /vpcs\` (every 20 ms, one connection), quiet and then while a neighbour with a VPC of ${PODS}`,
    `pods in ${SUBNETS} subnets asks for its most expensive answers on ${NOISY_CONNECTIONS} connections at once. Target: p99 under 50 ms.`,
    "",
    "| store | the neighbour asks for | quiet p50 / p99 / max | beside the neighbour p50 / p99 / max (answers) | p99 < 50 ms |",
    "|---|---|---|---|---|",
    ...rows.map((r) =>
      `| ${r.store} | ${r.asking} | ${ms(r.quiet.p50)} / ${ms(r.quiet.p99)} / ${ms(r.quiet.max)} | ${
        ms(r.loaded.p50)
      } / ${ms(r.loaded.p99)} / ${ms(r.loaded.max)} (${r.loaded.count}) | ${r.loaded.p99 < 50 ? "met" : "not met"} |`
    ),
    "",
    "The neighbour's answers while it asked for every expensive answer (429: told to wait its turn):",
    "",
    "| store | request | answers | 429 | p50 | max | largest body |",
    "|---|---|---:|---:|---:|---:|---:|",
    // The second run's: it asked for every kind.
    ...rows.filter((_, i) => i % 2 === 1).flatMap((r) =>
      r.expensive.map((e) =>
        `| ${r.store} | \`${e.request}\` | ${e.count} | ${e.throttled} | ${ms(e.p50)} | ${ms(e.max)} | ${
          (e.bytes / 1024).toFixed(0)
        } KiB |`
      )
    )
  ].join("\n")
