/**
 * The change stream across replicas, on PostgreSQL: two `tenet-server` processes on one
 * database, 100 watchers (SSE connections) on the second, VPCs created one at a time on the
 * first. For each create, the time from its acknowledgement (the 200 read by the writer) to each
 * watcher reading its `ADDED` event (target: p99 under 1 s). Then 1,000 idle watchers on the
 * second replica and the resident memory they add, per watcher.
 *
 * Runs by itself too: `node --conditions=@tenet/source --import tsx packages/server/bench/Watch.ts`.
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as Load from "./Load.js"

export interface WatchReport {
  readonly watchers: number
  readonly events: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly idleWatchers: number
  readonly kbPerWatcher: number
}

const WATCHERS = 100
const CREATES = 50
const IDLE = 1000

/** A watcher: the time it read each VPC's ADDED event, by VPC id. */
const watcher = async (port: number, headers: Record<string, string>, seen: Map<string, number>) => {
  const controller = new AbortController()
  const response = await fetch(`http://127.0.0.1:${port}/watch`, { headers, signal: controller.signal })
  // A refused watch (a quota, say) fails the run rather than waiting for a bookmark never sent.
  if (response.status !== 200) throw new Error(`GET /watch answered ${response.status}: ${await response.text()}`)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  let ready: () => void = () => {}
  const started = new Promise<void>((resolve) => (ready = resolve))
  const pump = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        const at = performance.now()
        buffer += decoder.decode(value, { stream: true })
        let end: number
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const data = JSON.parse(buffer.slice(0, end).split("\n").find((l) => l.startsWith("data: "))!.slice(6))
          buffer = buffer.slice(end + 2)
          if (data.type === "BOOKMARK") ready()
          else if (data.type === "ADDED" && data.kind === "vpc") seen.set(data.id, at)
        }
      }
    } catch {
      // closed
    }
  })()
  await started
  return async () => {
    controller.abort()
    await pump
  }
}

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1])

export const runWatch = async (): Promise<WatchReport | undefined> => {
  if (Load.databaseServer === undefined) return undefined
  const writer = await Load.startTenet("postgres")
  const reader = await Load.startTenet("postgres", {}, writer.databaseUrl)
  try {
    const admin = {
      "x-admin-token":
        (await Load.must(writer.port, "POST", "/admin/login", {}, { username: "admin", password: Load.PASSWORD }))
          .body.api_token as string
    }
    const tenant = await Load.must(writer.port, "POST", "/tenants", admin, {
      name: "watched",
      password: "watched-password"
    })
    // Room for every watcher here, past the default watchers quota.
    await Load.must(writer.port, "PUT", `/tenants/${tenant.body.id}/quotas`, admin, {
      vpcs: null,
      subnets: null,
      pods: null,
      watchers: WATCHERS + IDLE
    })
    const session =
      (await Load.must(writer.port, "POST", "/tenants/login", {}, { name: "watched", password: "watched-password" }))
        .body
    const headers = { "x-auth-token": session.api_token as string }
    const seen = Array.from({ length: WATCHERS }, () => new Map<string, number>())
    const closes = await Promise.all(seen.map((s) => watcher(reader.port, headers, s)))
    const acknowledged = new Map<string, number>()
    for (let i = 0; i < CREATES; i++) {
      const made = await Load.must(writer.port, "POST", "/vpcs", headers, {
        token: session.api_token,
        tenant_id: session.id,
        name: `v${i}`,
        enable_internet: false
      })
      acknowledged.set(made.body.id, performance.now())
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline && !seen.every((s) => s.size >= CREATES)) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const latencies = seen.flatMap((s) =>
      [...acknowledged].map(([id, at]) => (s.get(id) ?? Number.POSITIVE_INFINITY) - at)
    ).sort((a, b) => a - b)
    await Promise.all(closes.map((close) => close()))

    // Idle watchers: the memory each one costs the replica serving it.
    await new Promise((resolve) => setTimeout(resolve, 500))
    const before = rssKb(reader.pid)
    const idle = await Promise.all(Array.from({ length: IDLE }, () => watcher(reader.port, headers, new Map())))
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const after = rssKb(reader.pid)
    await Promise.all(idle.map((close) => close()))
    return {
      watchers: WATCHERS,
      events: latencies.length,
      p50: latencies[Math.floor(latencies.length / 2)]!,
      p99: latencies[Math.floor(latencies.length * 0.99)]!,
      max: latencies[latencies.length - 1]!,
      idleWatchers: IDLE,
      kbPerWatcher: (after - before) / IDLE
    }
  } finally {
    await reader.stop()
    await writer.stop()
  }
}

export const toMarkdown = (report: WatchReport | undefined) =>
  report === undefined
    ? "No PostgreSQL server was named (TENET_BENCH_DATABASE_URL): not measured."
    : [
      `Two replicas on one PostgreSQL database; ${report.watchers} watchers on the second, ${CREATES} VPCs created ` +
      `one at a time on the first: ${report.events.toLocaleString("en-US")} deliveries. Time from the create's ` +
      "acknowledgement to each watcher reading its event (target: p99 under 1 s):",
      "",
      "| p50 (ms) | p99 (ms) | max (ms) |",
      "|---:|---:|---:|",
      `| ${report.p50.toFixed(1)} | ${report.p99.toFixed(1)} | ${report.max.toFixed(1)} |`,
      "",
      `${report.idleWatchers.toLocaleString("en-US")} idle watchers add ${report.kbPerWatcher.toFixed(1)} KB of ` +
      "resident memory each to the replica serving them."
    ].join("\n")

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(toMarkdown(await runWatch()))
}
