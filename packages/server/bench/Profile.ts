/**
 * Where a create's CPU goes (issue "Writes at the speed of the database"), kept so that every
 * change to the write path can be measured against it:
 *
 * - **Effects per request**: the server in this process (`TestServer`, memory store) under a
 *   supervisor that counts every effect the runtime runs (op supervision) and every fiber it
 *   starts, while plain `fetch` calls (no Effect on the client's side) make `count` requests of
 *   each kind one after another. Background work in the window (the change stream's poll, the
 *   convergence a create asks for) is counted with the requests: it is part of what they cost.
 * - **CPU per create and the profile**: the built `tenet-server` on each store, in a process of
 *   its own under `node --cpu-prof`, `POST /security-rules` at 8 connections into 40 VPCs; the
 *   process's CPU time (user and system, from /proc) over the measured run divided by the
 *   creates answered, and the top frames of the whole profile by self and by inclusive time.
 *
 *   node --conditions=@tenet/source --import tsx packages/server/bench/Profile.ts
 */
import { HttpServer } from "@effect/platform"
import { Effect, Layer, ManagedRuntime, RuntimeFlags, Supervisor } from "effect"
import type { Context, Fiber, Option } from "effect"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TestServer } from "../src/index.js"
import * as Load from "./Load.js"
import * as Writes from "./Writes.js"

/** Counts what the runtime runs in the fibers it supervises, and under which span. */
class Counter extends Supervisor.AbstractSupervisor<void> {
  effects = 0
  fibers = 0
  readonly bySpan = new Map<string, number>()
  get value() {
    return Effect.void
  }
  override onStart<A, E, R>(
    _context: Context.Context<R>,
    _effect: Effect.Effect<A, E, R>,
    _parent: Option.Option<Fiber.RuntimeFiber<unknown, unknown>>,
    _fiber: Fiber.RuntimeFiber<A, E>
  ) {
    this.fibers++
  }
  override onEffect<A, E>(fiber: Fiber.RuntimeFiber<A, E>, _effect: Effect.Effect<unknown, unknown, unknown>) {
    this.effects++
    const span = fiber.currentSpan
    const name = span?._tag === "Span" ? span.name : "(no span)"
    this.bySpan.set(name, (this.bySpan.get(name) ?? 0) + 1)
  }
}

export interface EffectsRow {
  readonly request: string
  readonly effects: number
  readonly fibers: number
  /** Per request, by the innermost span they ran under, most first. */
  readonly bySpan: ReadonlyArray<readonly [span: string, effects: number]>
}

/**
 * Effects and fibers per request, `count` of each, in this process: `traced`, with spans recorded
 * (as when an OTLP endpoint is configured); else as the binary runs by default, tracing off.
 */
export const effectsPerRequest = async (count: number, traced: boolean): Promise<ReadonlyArray<EffectsRow>> => {
  const counter = new Counter()
  const runtime = ManagedRuntime.make(
    TestServer.layer().pipe(
      Layer.provide(Layer.mergeAll(
        RuntimeFlags.enableOpSupervision,
        Supervisor.addSupervisor(counter),
        Layer.setTracerEnabled(traced)
      ))
    )
  )
  try {
    const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (s) => s.address))
    if (address._tag !== "TcpAddress") throw new Error("the test server listens on TCP")
    const port = address.port
    const admin = {
      "x-admin-token": (await Load.must(port, "POST", "/admin/login", {}, {
        username: TestServer.ADMIN_USERNAME,
        password: TestServer.ADMIN_PASSWORD
      })).body.api_token
    }
    const writer = await Writes.newTenant(port, admin, "profiled")
    const vpcs = await Writes.vpcsOf(port, writer, "v", Writes.VPCS)
    await Writes.fill(port, writer, vpcs, 100)
    const kinds: ReadonlyArray<{ readonly request: string; readonly send: (i: number) => Promise<unknown> }> = [
      { request: "GET /healthz", send: () => Load.must(port, "GET", "/healthz", {}) },
      { request: "GET /vpcs (40)", send: () => Load.must(port, "GET", "/vpcs", writer.headers) },
      {
        request: "POST /security-rules/evaluate",
        send: (i) =>
          Load.must(port, "POST", "/security-rules/evaluate", writer.headers, {
            vpc_id: vpcs[i % vpcs.length],
            direction: "ingress",
            protocol: "tcp",
            port: 443,
            remote_ip: "10.1.2.3"
          })
      },
      {
        request: "POST /security-rules",
        send: (i) =>
          Load.must(port, "POST", "/security-rules", writer.headers, Load.rule(vpcs[i % vpcs.length]!, 10_000 + i))
      }
    ]
    const rows: Array<EffectsRow> = []
    for (const kind of kinds) {
      for (let i = 0; i < 20; i++) await kind.send(i)
      const [effects, fibers, bySpan] = [counter.effects, counter.fibers, new Map(counter.bySpan)]
      for (let i = 0; i < count; i++) await kind.send(100 + i)
      rows.push({
        request: kind.request,
        effects: Math.round((counter.effects - effects) / count),
        fibers: Math.round(((counter.fibers - fibers) / count) * 10) / 10,
        bySpan: [...counter.bySpan].map(([span, n]) =>
          [span, Math.round((n - (bySpan.get(span) ?? 0)) / count)] as const
        )
          .filter(([, n]) => n > 0)
          .sort((a, b) => b[1] - a[1])
      })
    }
    return rows
  } finally {
    await runtime.dispose()
  }
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: {
    readonly functionName: string
    readonly url: string
    readonly lineNumber: number
  }
  readonly children?: ReadonlyArray<number>
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  /** Microseconds on the monotonic clock `process.hrtime` reads too (CLOCK_MONOTONIC). */
  readonly startTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** Microseconds on the profiler's clock. */
const now = () => Number(process.hrtime.bigint() / 1000n)

export interface Frame {
  readonly frame: string
  /** Share of the sampled time, in percent. */
  readonly share: number
}

/** A frame as a reader finds it: the function, and where it is (package or Tenet's file). */
const frameName = (node: ProfileNode) => {
  const { functionName, lineNumber, url } = node.callFrame
  if (url === "") return functionName === "" ? "(anonymous)" : functionName
  const pkg = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url)
  const where = pkg !== null
    ? `${pkg[1]}/${pkg[2]!.split("/").at(-1)}`
    : url.replace(/^.*\/packages\//, "").replace(/^file:\/\//, "")
  return `${functionName === "" ? "(anonymous)" : functionName} ${where}:${lineNumber + 1}`
}

const IDLE = new Set(["(idle)", "(program)"])

/** Tenet's own code (not a dependency's, not Node's). */
const ours = (frame: string) => / (core|server|adapters-[a-z]+|client)\/(dist|src)\//.test(frame)

/**
 * The top `n` frames sampled within `[from, to]` (µs): by self time, by inclusive time (each
 * frame once per sample), and Tenet's own by inclusive time.
 */
export const topFrames = (profile: CpuProfile, n: number, from: number, to: number) => {
  const parent = new Map<number, number>()
  const byId = new Map<number, ProfileNode>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  const self = new Map<string, number>()
  const inclusive = new Map<string, number>()
  let total = 0
  let at = profile.startTime
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0
    at += dt
    if (at < from || at > to) return
    const leaf = byId.get(id)!
    const name = frameName(leaf)
    if (IDLE.has(name)) return
    total += dt
    self.set(name, (self.get(name) ?? 0) + dt)
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = frameName(byId.get(at)!)
      if (frame === "(root)" || seen.has(frame)) continue
      seen.add(frame)
      inclusive.set(frame, (inclusive.get(frame) ?? 0) + dt)
    }
  })
  const top = (m: Map<string, number>): ReadonlyArray<Frame> =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([frame, t]) => ({
      frame,
      share: Math.round((t / total) * 1000) / 10
    }))
  return {
    self: top(self),
    inclusive: top(inclusive),
    tenet: top(new Map([...inclusive].filter(([frame]) => ours(frame))))
  }
}

/** A process's CPU time so far (user and system), in ms. */
const cpuMillis = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  // utime and stime, fields 14 and 15 of the whole line, in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10
}

export interface StoreProfile {
  readonly store: Load.StoreKind
  readonly creates: number
  readonly cpuPerCreate: number
  readonly self: ReadonlyArray<Frame>
  readonly inclusive: ReadonlyArray<Frame>
  readonly tenet: ReadonlyArray<Frame>
}

/** The built server on `store` under the create load for `seconds`, profiled. */
export const profileStore = async (store: Load.StoreKind, seconds: number): Promise<StoreProfile> => {
  const dir = mkdtempSync(join(tmpdir(), "tenet-profile-"))
  try {
    const tenet = await Load.startTenet(store, {}, undefined, ["--cpu-prof", `--cpu-prof-dir=${dir}`])
    let creates = 0
    let cpu = 0
    let from = 0
    let to = 0
    try {
      const port = tenet.port
      const admin = {
        "x-admin-token": (await Load.must(port, "POST", "/admin/login", {}, {
          username: "admin",
          password: Load.PASSWORD
        })).body.api_token
      }
      const writer = await Writes.newTenant(port, admin, "profiled")
      const vpcs = await Writes.vpcsOf(port, writer, "v", Writes.VPCS)
      await Writes.fill(port, writer, vpcs, 100)
      const shape = Writes.creating(Writes.ONE_TENANT, [{ writer, vpcs }])
      await Load.load(port, shape, writer.headers, Writes.CONNECTIONS, 2)
      const before = cpuMillis(tenet.pid)
      from = now()
      const result = await Load.load(port, shape, writer.headers, Writes.CONNECTIONS, seconds)
      to = now()
      cpu = cpuMillis(tenet.pid) - before
      creates = Math.round(result.rps * seconds)
    } finally {
      await tenet.stop()
    }
    const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
    if (file === undefined) throw new Error("the server wrote no CPU profile")
    const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile
    return {
      store,
      creates,
      cpuPerCreate: Math.round((cpu / creates) * 100) / 100,
      ...topFrames(profile, 20, from, to)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The issue "Writes at the speed of the database"'s bound on a create's CPU, memory store. */
const CPU_TARGET_MS = 0.6

const cell = (f: Frame | undefined) => f === undefined ? " | " : `\`${f.frame}\` | ${f.share}`

export const toMarkdown = (
  effects: { readonly untraced: ReadonlyArray<EffectsRow>; readonly traced: ReadonlyArray<EffectsRow> },
  profiles: ReadonlyArray<StoreProfile>
) =>
  [
    "Effects the runtime runs per request (in process, memory store, one request at a time; tracing off",
    "as the binary runs by default, and on as with an OTLP endpoint):",
    "",
    "| request | effects | fibers started | effects, traced | fibers, traced |",
    "|---|---:|---:|---:|---:|",
    ...effects.untraced.map((r, i) => {
      const traced = effects.traced[i]!
      return `| ${r.request} | ${r.effects.toLocaleString("en-US")} | ${r.fibers} | ${
        traced.effects.toLocaleString("en-US")
      } | ${traced.fibers} |`
    }),
    "",
    "The effects of a create by the innermost span they ran under (tracing on):",
    "",
    "| span | effects per create |",
    "|---|---:|",
    ...(effects.traced.find((r) => r.request === "POST /security-rules")?.bySpan ?? []).slice(0, 15).map((
      [span, n]
    ) => `| \`${span}\` | ${n} |`),
    "",
    "CPU per create (the built server's process, user and system, over the measured run):",
    "",
    "| store | creates | CPU per create (ms) |",
    "|---|---:|---:|",
    ...profiles.map((p) => `| ${p.store} | ${p.creates.toLocaleString("en-US")} | ${p.cpuPerCreate} |`),
    ...profiles.filter((p) => p.store === "memory").flatMap((p) => [
      "",
      "| target | measured | met |",
      "|---|---|---|",
      `| memory CPU per create <= ${CPU_TARGET_MS} ms | ${p.cpuPerCreate} ms | ${
        p.cpuPerCreate <= CPU_TARGET_MS ? "yes" : "no"
      } |`
    ]),
    ...profiles.flatMap((p) => [
      "",
      `Top frames, ${p.store} (share of the CPU time sampled during the measured run):`,
      "",
      "| # | by self time | % | by inclusive time | % | Tenet's own, by inclusive time | % |",
      "|---:|---|---:|---|---:|---|---:|",
      ...p.self.map((s, i) => `| ${i + 1} | ${cell(s)} | ${cell(p.inclusive[i])} | ${cell(p.tenet[i])} |`)
    ])
  ].join("\n")

/** The whole profile: effects per request in process, then each store's built server profiled. */
export const runProfile = async (seconds: number, stores: ReadonlyArray<Load.StoreKind>) => {
  const effects = { untraced: await effectsPerRequest(200, false), traced: await effectsPerRequest(200, true) }
  const profiles: Array<StoreProfile> = []
  for (const store of stores) profiles.push(await profileStore(store, seconds))
  return toMarkdown(effects, profiles)
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const stores: ReadonlyArray<Load.StoreKind> = (process.env.TENET_BENCH_STORES?.split(",") as
    | ReadonlyArray<Load.StoreKind>
    | undefined) ?? Load.STORES
  console.log(await runProfile(Number(process.env.TENET_LOAD_SECONDS ?? 5), stores))
}
