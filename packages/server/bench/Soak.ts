/**
 * A bounded soak: the real server on the memory platform, on loopback, and several tenants
 * running a mixed workload against it over keep-alive connections for a fixed time. Reports,
 * per time window, requests, errors and latency percentiles, and the heap before and after;
 * fails when any request got a 5xx or an answer the workload did not expect.
 *
 * Run alone: `node --expose-gc --conditions=@tenet/source --import tsx packages/server/bench/Soak.ts` (TENET_SOAK_SECONDS,
 * default 60); `pnpm bench` runs it after the benchmarks.
 */
import { HttpServer } from "@effect/platform"
import { Effect, ManagedRuntime } from "effect"
import { TestServer } from "../src/index.js"

export interface Window {
  readonly second: number
  readonly requests: number
  readonly errors: number
  readonly p50: number
  readonly p99: number
}

export interface SoakReport {
  readonly seconds: number
  readonly tenants: number
  readonly requests: number
  readonly errors: number
  readonly unexpected: ReadonlyArray<string>
  readonly windows: ReadonlyArray<Window>
  readonly heapBeforeMb: number
  readonly heapAfterMb: number
  readonly rssAfterMb: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** Heap in use after a collection (run node with --expose-gc for it to collect). */
export const heapMb = () => {
  ;(globalThis as { gc?: () => void }).gc?.()
  return process.memoryUsage().heapUsed / 2 ** 20
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON answers, read field by field
type Json = Record<string, any>

export const runSoak = async (options: { readonly seconds: number; readonly tenants: number }): Promise<SoakReport> => {
  const runtime = ManagedRuntime.make(TestServer.layer())
  const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (s) => s.address))
  if (address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  const base = `http://127.0.0.1:${address.port}`

  const samples: Array<{ readonly at: number; readonly ms: number; readonly error: boolean }> = []
  const unexpected: Array<string> = []
  const call = async (
    method: string,
    path: string,
    expected: ReadonlyArray<number>,
    headers: Record<string, string> = {},
    body?: unknown
  ): Promise<Json> => {
    const started = performance.now()
    const response = await fetch(base + path, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    const ms = performance.now() - started
    const error = !expected.includes(response.status)
    samples.push({ at: started, ms, error })
    if (error && unexpected.length < 20) {
      unexpected.push(`${method} ${path} -> ${response.status} ${text.slice(0, 200)}`)
    }
    return text === "" ? {} : JSON.parse(text) as Json
  }

  const admin = await call("POST", "/admin/login", [200], {}, {
    username: TestServer.ADMIN_USERNAME,
    password: TestServer.ADMIN_PASSWORD
  })
  const adminHeaders = { "x-admin-token": admin.api_token as string }

  const tenant = async (n: number) => {
    const name = `soak-${n}`
    await call("POST", "/tenants", [201], adminHeaders, { name, password: "soak-password" })
    const session = await call("POST", "/tenants/login", [200], {}, { name, password: "soak-password" })
    const headers = { "x-auth-token": session.api_token as string }
    const creds = { token: session.api_token, tenant_id: session.id }
    const vpc = await call("POST", "/vpcs", [200], headers, { ...creds, name: "main", enable_internet: true })
    const subnet = await call("POST", "/subnets", [200], headers, {
      ...creds,
      vpc_id: vpc.id,
      name: "apps",
      cidr: "10.0.1.0/24",
      gateway_ip: "10.0.1.1"
    })
    return { headers, creds, vpc, subnet }
  }

  const work = async (t: Awaited<ReturnType<typeof tenant>>, until: number) => {
    for (let round = 0; performance.now() < until; round++) {
      await call("GET", "/vpcs", [200], t.headers)
      const created = await call("POST", "/security-rules", [201], t.headers, {
        vpc_id: t.vpc.id,
        name: `r${round}`,
        direction: "ingress",
        action: round % 2 === 0 ? "allow" : "deny",
        priority: 1 + (round % 2000),
        protocol: "tcp",
        ports: String(1 + (round % 60000)),
        remote_type: "cidr",
        remote_cidr: "10.0.0.0/8"
      })
      await call("PATCH", `/security-rules/${created.rule.id}`, [200], t.headers, { description: `round ${round}` })
      await call("POST", "/security-rules/evaluate", [200], t.headers, {
        vpc_id: t.vpc.id,
        direction: "ingress",
        protocol: "tcp",
        port: 1 + (round % 60000),
        remote_ip: "10.1.2.3"
      })
      await call("GET", `/security-rules?vpc_id=${t.vpc.id}`, [200], t.headers)
      await call("DELETE", `/security-rules/${created.rule.id}`, [200], t.headers)
      if (round % 5 === 0) {
        const pod = await call("POST", "/pods", [200], t.headers, {
          ...t.creds,
          vpc_id: t.vpc.id,
          subnet_id: t.subnet.id,
          name: `p${round}`,
          container_image: "nginx:1.27",
          env_vars: { ROUND: String(round) }
        })
        await call("GET", "/pods", [200], t.headers)
        await call("DELETE", `/pods/${pod.id}`, [204], t.headers)
      }
    }
  }

  try {
    const tenants = await Promise.all(Array.from({ length: options.tenants }, (_, n) => tenant(n)))
    const heapBeforeMb = heapMb()
    const start = performance.now()
    samples.length = 0
    await Promise.all(tenants.map((t) => work(t, start + options.seconds * 1000)))
    const heapAfterMb = heapMb()

    const windowSeconds = Math.max(1, Math.round(options.seconds / 12))
    const windows: Array<Window> = []
    for (let from = 0; from < options.seconds; from += windowSeconds) {
      const inWindow = samples.filter((s) =>
        s.at - start >= from * 1000 && s.at - start < (from + windowSeconds) * 1000
      )
      const sorted = inWindow.map((s) => s.ms).sort((a, b) => a - b)
      windows.push({
        second: from,
        requests: inWindow.length,
        errors: inWindow.filter((s) => s.error).length,
        p50: percentile(sorted, 0.5),
        p99: percentile(sorted, 0.99)
      })
    }
    return {
      seconds: options.seconds,
      tenants: options.tenants,
      requests: samples.length,
      errors: samples.filter((s) => s.error).length,
      unexpected,
      windows,
      heapBeforeMb,
      heapAfterMb,
      rssAfterMb: process.memoryUsage().rss / 2 ** 20
    }
  } finally {
    await runtime.dispose()
  }
}

/** The report as Markdown, for the terminal and BENCHMARKS.md. */
export const toMarkdown = (report: SoakReport) =>
  [
    `Soak: ${report.tenants} tenants for ${report.seconds} s on the memory store: ${report.requests} requests, ` +
    `${report.errors} errors (${((report.errors / Math.max(1, report.requests)) * 100).toFixed(3)}%), ` +
    `heap ${report.heapBeforeMb.toFixed(1)} MB -> ${report.heapAfterMb.toFixed(1)} MB after GC ` +
    `(RSS ${report.rssAfterMb.toFixed(0)} MB).`,
    "",
    "| from (s) | requests | errors | p50 (ms) | p99 (ms) |",
    "|---:|---:|---:|---:|---:|",
    ...report.windows.map((w) =>
      `| ${w.second} | ${w.requests} | ${w.errors} | ${w.p50.toFixed(2)} | ${w.p99.toFixed(2)} |`
    ),
    ...(report.unexpected.length === 0 ? [] : ["", "Unexpected answers:", ...report.unexpected.map((u) => `- ${u}`)])
  ].join("\n")

if (import.meta.url === `file://${process.argv[1]}`) {
  const report = await runSoak({ seconds: Number(process.env.TENET_SOAK_SECONDS ?? 60), tenants: 8 })
  console.log(toMarkdown(report))
  process.exitCode = report.errors === 0 ? 0 : 1
}
