/**
 * HTTP load against the server as operators run it (`tenet-server` in a child process, so the
 * load generator does not share its event loop), on the memory and embedded stores (and on
 * PostgreSQL when TENET_BENCH_DATABASE_URL or TENET_TEST_DATABASE_URL names a server: a fresh
 * database there, dropped afterwards), and the
 * same load against a bare `node:http` server answering the same bytes (`Ceiling.ts`, also in
 * a process of its own): the ceiling Tenet's throughput is reported against. Load comes from
 * autocannon over keep-alive connections.
 *
 * Latency is the steady state's: each connection's first response is left out of p50/p99 and
 * reported on its own ("setup max"). A saturated Node server accepts one connection per turn
 * of its event loop (libuv since 1.45), and each turn serves every connection that has a
 * request ready, so 64 connections opened at once wait up to 64 turns to be accepted: seconds,
 * on a server that is busy for tens of milliseconds per turn. That is the cost of opening
 * connections into a saturated server, not of serving requests on them.
 */
import autocannon from "autocannon"
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { call, freePort } from "../test/Loopback.js"

export interface LoadRow {
  readonly target: string
  readonly endpoint: string
  readonly connections: number
  readonly rps: number
  /** Steady state: each connection's first response left out. */
  readonly p50: number
  readonly p99: number
  /** The slowest first response of a connection: opening it into the loaded server included. */
  readonly setupMax: number
  readonly errors: number
  /** Tenet's throughput over the bare server's on the same bytes; null for the ceiling itself. */
  readonly ofCeiling: number | null
  /** Tenet's throughput over the HttpApi floor's on the same route; null for the ceiling and the floor. */
  readonly ofFloor: number | null
}

/**
 * The server as operators run it: the built `tenet-server` (plain JavaScript, as npm installs
 * it), built once per run. Run from its TypeScript sources instead, through tsx, every closure
 * it makes is named by tsx's helper at run time: 12% of the CPU of GET /pods, measured.
 */
const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url))
let built = false
const build = () => {
  if (built) return
  execFileSync("pnpm", ["-s", "build"], { cwd: fileURLToPath(new URL("../../..", import.meta.url)), stdio: "inherit" })
  built = true
}
export const PASSWORD = "load-admin-password"

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON answers

/** The CPU the servers run on and the one the load comes from, when they can be kept apart. */
export const cpus = (() => {
  if (availableParallelism() < 2) return null
  try {
    execFileSync("taskset", ["-V"], { stdio: "ignore" })
    return { server: String(availableParallelism() - 1), load: "0" }
  } catch {
    return null
  }
})()

/** Pins this process's every thread (the load generator's) to `cpu`, or to all CPUs. */
export const pinSelf = (cpu: string) => execFileSync("taskset", ["-apc", cpu, String(process.pid)], { stdio: "ignore" })

/** A request the setup needs to succeed. */
export const must = async (
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown
) => {
  const response = await call(port, method, path, body, headers)
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response
}

/**
 * Runs an entry point (JavaScript, or TypeScript through tsx) in its own process with a fresh
 * temporary directory, waits until `probe` answers 200, and stops it (SIGTERM) and removes
 * the directory on `stop`.
 */
const startChild = async (
  entry: string,
  env: (port: number, dir: string) => Record<string, string>,
  probe: string,
  nodeArgs: ReadonlyArray<string> = []
) => {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), "tenet-load-"))
  const command = entry.endsWith(".ts")
    ? [process.execPath, ...nodeArgs, "--conditions=@tenet/source", "--import", "tsx", entry]
    : [process.execPath, ...nodeArgs, entry]
  const pinned = cpus === null ? command : ["taskset", "-c", cpus.server, ...command]
  const child = spawn(pinned[0]!, pinned.slice(1), {
    env: { ...process.env, ...env(port, dir) },
    stdio: ["ignore", "ignore", "inherit"]
  })
  for (let i = 0; i < 600; i++) {
    const up = await fetch(`http://127.0.0.1:${port}${probe}`).then((r) => r.ok, () => false)
    if (up) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    port,
    pid: child.pid!,
    stop: async () => {
      // A child that already exited (it crashed) would never emit "exit" again.
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.on("exit", resolve))
        child.kill("SIGTERM")
        await exited
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

export type StoreKind = "memory" | "embedded" | "postgres"

export const databaseServer = process.env.TENET_BENCH_DATABASE_URL ?? process.env.TENET_TEST_DATABASE_URL

/** The stores a benchmark runs on: memory and embedded, and PostgreSQL when a server is named. */
export const STORES: ReadonlyArray<StoreKind> = [
  "memory",
  "embedded",
  ...(databaseServer === undefined ? [] : ["postgres" as const])
]

/** A database of its own on `databaseServer`, and how to drop it. */
const freshDatabase = (server: string) => {
  const name = `tenet_load_${process.pid}`
  execFileSync("psql", [server, "-qc", `CREATE DATABASE ${name}`])
  const url = new URL(server)
  url.pathname = `/${name}`
  return {
    env: { TENET_DATABASE_URL: url.toString(), TENET_ENCRYPTION_KEY: "0".repeat(64) },
    drop: () => execFileSync("psql", [server, "-qc", `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`])
  }
}

/**
 * `tenet-server` on the given store, with extra settings; on PostgreSQL a fresh database, or
 * `joining` another server's (a second replica: the first one drops it).
 */
export const startTenet = async (
  store: StoreKind,
  settings: Record<string, string> = {},
  joining?: string,
  /** Node's own flags for the server's process (`--cpu-prof`, say). */
  nodeArgs: ReadonlyArray<string> = []
) => {
  const database = store !== "postgres"
    ? undefined
    : joining === undefined
    ? freshDatabase(databaseServer!)
    : { env: { TENET_DATABASE_URL: joining, TENET_ENCRYPTION_KEY: "0".repeat(64) }, drop: () => {} }
  build()
  const child = await startChild(
    bin,
    (port, dir) => ({
      TENET_STORE: store,
      TENET_PORT: String(port),
      TENET_DATA_DIR: dir,
      TENET_ADMIN_PASSWORD: PASSWORD,
      TENET_LOG_LEVEL: "warn",
      ...database?.env,
      ...settings
    }),
    "/healthz",
    nodeArgs
  )
  return {
    port: child.port,
    pid: child.pid,
    /** The database it runs on, on PostgreSQL. */
    databaseUrl: database?.env.TENET_DATABASE_URL,
    stop: async () => {
      await child.stop()
      database?.drop()
    }
  }
}

/** A tenant with 100 VPCs, 100 pods, a VPC of 200 rules, and 100 VPCs to POST rules into. */
export const seed = async (port: number) => {
  const admin = (await must(port, "POST", "/admin/login", {}, { username: "admin", password: PASSWORD })).body
  const adminHeaders = { "x-admin-token": admin.api_token }
  await must(port, "POST", "/tenants", adminHeaders, { name: "load", password: "load-password" })
  const session = (await must(port, "POST", "/tenants/login", {}, { name: "load", password: "load-password" })).body
  const headers = { "x-auth-token": session.api_token as string }
  const creds = { token: session.api_token, tenant_id: session.id }
  const vpcs: Array<Json> = []
  for (let i = 0; i < 100; i++) {
    vpcs.push((await must(port, "POST", "/vpcs", headers, { ...creds, name: `v${i}`, enable_internet: false })).body)
  }
  const subnet = (await must(port, "POST", "/subnets", headers, {
    ...creds,
    vpc_id: vpcs[0]!.id,
    name: "apps",
    cidr: "10.0.0.0/16",
    gateway_ip: "10.0.0.1"
  })).body
  for (let i = 0; i < 100; i++) {
    await must(port, "POST", "/pods", headers, {
      ...creds,
      vpc_id: vpcs[0]!.id,
      subnet_id: subnet.id,
      name: `p${i}`,
      container_image: "nginx:1.27"
    })
  }
  // 199 rules besides the one every VPC starts with.
  for (let i = 0; i < 199; i++) {
    await must(port, "POST", "/security-rules", headers, rule(vpcs[0]!.id, i))
  }
  return {
    headers,
    adminHeaders,
    creds,
    subnet: subnet.id as string,
    ruleVpc: vpcs[0]!.id as string,
    postVpcs: vpcs.slice(1).map((v) => v.id as string)
  }
}

export const rule = (vpcId: string, i: number) => ({
  vpc_id: vpcId,
  name: `r${i}`,
  direction: i % 2 === 0 ? "ingress" : "egress",
  action: i % 3 === 0 ? "deny" : "allow",
  priority: 1 + (i % 2000),
  protocol: "tcp",
  ports: String(1 + (i % 60000)),
  remote_type: "cidr",
  remote_cidr: `10.${i % 256}.0.0/16`
})

export interface Endpoint {
  readonly name: string
  readonly method: "GET" | "POST"
  readonly path: string
  /** For POSTs: the body of the n-th request. */
  readonly body?: (n: number) => string
  /** Headers of the n-th request, over the load's (another tenant's token, say). */
  readonly headers?: (n: number) => Record<string, string>
}

export const endpoints = (seeded: Awaited<ReturnType<typeof seed>>): ReadonlyArray<Endpoint> => [
  { name: "GET /security-rules?vpc_id= (200 rules)", method: "GET", path: `/security-rules?vpc_id=${seeded.ruleVpc}` },
  { name: "GET /vpcs (100 VPCs)", method: "GET", path: "/vpcs" },
  { name: "GET /pods (100 pods)", method: "GET", path: "/pods" },
  {
    name: "POST /security-rules/evaluate (200 rules)",
    method: "POST",
    path: "/security-rules/evaluate",
    body: (n) =>
      JSON.stringify({
        vpc_id: seeded.ruleVpc,
        direction: n % 2 === 0 ? "ingress" : "egress",
        protocol: "tcp",
        port: 1 + (n % 250),
        remote_ip: `10.${n % 256}.1.2`
      })
  },
  {
    name: "POST /security-rules",
    method: "POST",
    path: "/security-rules",
    // Spread over 99 VPCs, so the 200-rule limit is far away.
    body: (n) => JSON.stringify(rule(seeded.postVpcs[n % seeded.postVpcs.length]!, 1000 + n))
  }
]

/** The value at quantile `q` of ascending `sorted`. */
const quantile = (sorted: ReadonlyArray<number>, q: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

export const load = (
  port: number,
  endpoint: Endpoint,
  headers: Record<string, string>,
  connections: number,
  seconds: number
) =>
  new Promise<Omit<LoadRow, "target" | "endpoint" | "connections" | "ofCeiling" | "ofFloor">>((resolve, reject) => {
    let n = 0
    const answered = new Set<unknown>()
    const steady: Array<number> = []
    let setupMax = 0
    const instance = autocannon({
      url: `http://127.0.0.1:${port}`,
      connections,
      duration: seconds,
      requests: [{
        method: endpoint.method,
        path: endpoint.path,
        headers: { ...headers, "content-type": "application/json" },
        ...(endpoint.body === undefined ? {} : {
          setupRequest: (request) => {
            const i = n++
            const more = endpoint.headers?.(i)
            return { ...request, body: endpoint.body!(i), ...(more && { headers: { ...request.headers, ...more } }) }
          }
        })
      }]
    }, (error, result) => {
      if (error) return reject(error)
      steady.sort((a, b) => a - b)
      resolve({
        rps: result.requests.average,
        p50: round(quantile(steady, 0.5)),
        p99: round(quantile(steady, 0.99)),
        setupMax: round(setupMax),
        errors: result.errors + result.timeouts + result.non2xx
      })
    })
    instance.on("response", (client: unknown, _status: number, _bytes: number, ms: number) => {
      if (answered.has(client)) return void steady.push(ms)
      answered.add(client)
      setupMax = Math.max(setupMax, ms)
    })
  })

/**
 * Each endpoint under load for a moment, unmeasured: the first seconds of a fresh process run
 * code the JIT has not optimised yet (measured: a first run of GET /vpcs at two thirds of the
 * second's rate).
 */
export const warmUp = async (port: number, targets: ReadonlyArray<Endpoint>, headers: Record<string, string>) => {
  for (const e of targets) await load(port, e, headers, 8, 2)
}

const round = (ms: number) => Math.round(ms * 10) / 10

/**
 * A program that answers each request with the bytes Tenet answered it with (Floor.ts or
 * Ceiling.ts), in its own process: TENET_REPLAY_PORT and TENET_REPLAY_ANSWERS (a JSON file
 * mapping "METHOD path" to the body) configure it.
 */
const startReplay = (program: string, answers: ReadonlyMap<string, string>) =>
  startChild(fileURLToPath(new URL(program, import.meta.url)), (port, dir) => {
    const file = join(dir, "answers.json")
    writeFileSync(file, JSON.stringify(Object.fromEntries(answers)))
    return { TENET_REPLAY_PORT: String(port), TENET_REPLAY_ANSWERS: file }
  }, "/vpcs")

export const runLoad = async (options: {
  readonly connections: ReadonlyArray<number>
  readonly seconds: number
}): Promise<ReadonlyArray<LoadRow>> => {
  if (cpus !== null) pinSelf(cpus.load)
  try {
    return await loadAll(options)
  } finally {
    if (cpus !== null) pinSelf(`0-${availableParallelism() - 1}`)
  }
}

/** An OTLP/HTTP receiver that reads and drops what it is sent: where a traced server exports. */
const startTraceSink = async () => {
  const sink = createServer((request, response) => {
    request.resume()
    request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end("{}"))
  })
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve))
  const address = sink.address()
  return {
    url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`,
    close: () => new Promise((resolve) => sink.close(resolve))
  }
}

/** TENET_LOAD_STORES=memory,postgres: those stores only (the memory store always comes first: it seeds the ceiling). */
const only = process.env.TENET_LOAD_STORES?.split(",") as ReadonlyArray<StoreKind> | undefined

/** What tracing costs: these endpoints again, with the server exporting every span. */
const TRACED = new Set(["GET /vpcs (100 VPCs)", "POST /security-rules"])

const loadAll = async (options: {
  readonly connections: ReadonlyArray<number>
  readonly seconds: number
}): Promise<ReadonlyArray<LoadRow>> => {
  const rows: Array<LoadRow> = []
  const ceilings = new Map<string, number>()
  const floors = new Map<string, number>()
  const stores = only ?? STORES
  for (const store of stores) {
    const tenet = await startTenet(store)
    try {
      const seeded = await seed(tenet.port)
      const targets = endpoints(seeded)
      if (store === "memory") {
        // The ceiling answers with exactly the bytes Tenet answers with.
        const answers = new Map<string, string>()
        for (const e of targets) {
          const answer = await must(tenet.port, e.method, e.path, seeded.headers, e.body && JSON.parse(e.body(10_000)))
          answers.set(`${e.method} ${e.path}`, answer.text)
        }
        const ceiling = await startReplay("./Ceiling.ts", answers)
        try {
          await warmUp(ceiling.port, targets, {})
          for (const e of targets) {
            for (const connections of options.connections) {
              const result = await load(ceiling.port, e, {}, connections, options.seconds)
              ceilings.set(`${e.name}@${connections}`, result.rps)
              rows.push({
                target: "node:http ceiling",
                endpoint: e.name,
                connections,
                ...result,
                ofCeiling: null,
                ofFloor: null
              })
            }
          }
        } finally {
          await ceiling.stop()
        }
        const floor = await startReplay("./Floor.ts", answers)
        try {
          await warmUp(floor.port, targets, {})
          for (const e of targets) {
            for (const connections of options.connections) {
              const result = await load(floor.port, e, {}, connections, options.seconds)
              floors.set(`${e.name}@${connections}`, result.rps)
              rows.push({
                target: "Effect HttpApi, routes only",
                endpoint: e.name,
                connections,
                ...result,
                ofCeiling: result.rps / ceilings.get(`${e.name}@${connections}`)!,
                ofFloor: null
              })
            }
          }
        } finally {
          await floor.stop()
        }
      }
      await warmUp(tenet.port, targets, seeded.headers)
      for (const e of targets) {
        for (const connections of options.connections) {
          const result = await load(tenet.port, e, seeded.headers, connections, options.seconds)
          const ceiling = ceilings.get(`${e.name}@${connections}`)
          const floor = floors.get(`${e.name}@${connections}`)
          rows.push({
            target: `tenet, ${store} store`,
            endpoint: e.name,
            connections,
            ...result,
            ofCeiling: ceiling === undefined ? null : result.rps / ceiling,
            ofFloor: floor === undefined ? null : result.rps / floor
          })
        }
      }
    } finally {
      await tenet.stop()
    }
    if (process.env.TENET_LOAD_TRACED !== "0") rows.push(...await loadTraced(store, options.seconds))
  }
  return rows
}

/** The traced endpoints at 8 connections on a server with OTLP export on (to a local sink). */
const loadTraced = async (store: StoreKind, seconds: number): Promise<ReadonlyArray<LoadRow>> => {
  const sink = await startTraceSink()
  const tenet = await startTenet(store, { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url })
  try {
    const seeded = await seed(tenet.port)
    const targets = endpoints(seeded).filter((e) => TRACED.has(e.name))
    await warmUp(tenet.port, targets, seeded.headers)
    const rows: Array<LoadRow> = []
    for (const e of targets) {
      const result = await load(tenet.port, e, seeded.headers, 8, seconds)
      rows.push({
        target: `tenet, ${store} store, tracing on`,
        endpoint: e.name,
        connections: 8,
        ...result,
        ofCeiling: null,
        ofFloor: null
      })
    }
    return rows
  } finally {
    await tenet.stop()
    await sink.close()
  }
}

const percent = (ratio: number | null) => ratio === null ? "" : `${Math.round(ratio * 100)}%`

export const toMarkdown = (rows: ReadonlyArray<LoadRow>) =>
  [
    "| target | endpoint | connections | req/s | p50 (ms) | p99 (ms) | setup max (ms) | errors | of ceiling | of floor |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map((r) =>
      `| ${r.target} | ${r.endpoint} | ${r.connections} | ${
        Math.round(r.rps).toLocaleString("en-US")
      } | ${r.p50} | ${r.p99} | ${r.setupMax} | ${r.errors} | ` +
      `${percent(r.ofCeiling)} | ${percent(r.ofFloor)} |`
    )
  ].join("\n")

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(toMarkdown(await runLoad({ connections: [8, 64], seconds: Number(process.env.TENET_LOAD_SECONDS ?? 5) })))
}
