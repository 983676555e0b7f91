/**
 * Tenet as its users get it: the packages packed as `pnpm publish` packs them, installed with
 * plain npm into a project outside the workspace, and `tenet-server` started from there. Shared
 * by the consumer test and the cold-start benchmark.
 */
import { execFile, spawn } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import type { Manifest } from "./Tarballs.js"

export const run = promisify(execFile)
export const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..")

/**
 * Every install line of the docs, run as written but for `@tenet/*`, which come from the
 * tarballs. The consumer test holds the docs to exactly these.
 */
export const installLines = {
  embedder: "npm i @tenet/core @tenet/adapters-memory effect@^3.22.4 @effect/platform@^0.97.2",
  tenant:
    "npm i -D @tenet/server @tenet/adapters-memory @tenet/client effect@^3.22.4 @effect/platform@^0.97.2 @effect/vitest@^0.30.0 vitest@^3.2.4",
  operator: "npm i @tenet/server",
  client: "npm i @tenet/client effect@^3.22.4 @effect/platform@^0.97.2",
  promiseClient: "npm i @tenet/client",
  memory: "npm i @tenet/adapters-memory @tenet/core effect@^3.22.4 @effect/platform@^0.97.2",
  postgres:
    "npm i @tenet/adapters-postgres @tenet/core effect@^3.22.4 @effect/platform@^0.97.2 @effect/sql@^0.52.1 @effect/sql-pg@^0.53.0 @effect/experimental@^0.61.1",
  kubernetes: "npm i @tenet/adapters-k8s @tenet/core effect@^3.22.4 @effect/platform@^0.97.2",
  cli: "npm i @tenet/cli"
}

export interface Packed {
  readonly manifest: Manifest & { readonly dependencies?: Record<string, string> }
  readonly file: string
  readonly files: ReadonlyArray<string>
}

const tar = async (...args: Array<string>) => (await run("tar", args, { maxBuffer: 64 << 20 })).stdout

const readPacked = async (file: string): Promise<Packed> => ({
  file,
  manifest: JSON.parse(await tar("-xzOf", file, "package/package.json")),
  files: (await tar("-tzf", file)).split("\n").filter((f) => f !== "").map((f) => f.replace(/^package\//, ""))
})

/** Packs every public package into `destination`; `pnpm pack` runs each prepack (its build) and applies publishConfig. */
export const packAll = async (destination: string): Promise<ReadonlyArray<Packed>> => {
  await run("pnpm", ["-r", "pack", "--pack-destination", destination], { cwd: repo, maxBuffer: 64 << 20 })
  return Promise.all(readdirSync(destination).map((f) => readPacked(join(destination, f))))
}

/** A project of its own in `parent`, outside the workspace. */
export const project = (parent: string, name: string) => {
  const dir = join(parent, name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }, null, 2))
  return dir
}

/**
 * The tarballs a line needs, as the README says to give them: each `@tenet/*` package it names
 * and every `@tenet/*` package those depend on, all in the one `npm i` (npm fetches from the
 * registry any dependency not given on the command line, and `@tenet/*` is not there yet).
 */
export const tarballsFor = (packed: ReadonlyArray<Packed>, named: ReadonlyArray<string>): ReadonlyArray<string> => {
  const byName = new Map(packed.map((p) => [p.manifest.name, p]))
  const needed = new Set<string>()
  const visit = (name: string) => {
    const found = byName.get(name)
    if (found === undefined || needed.has(name)) return
    needed.add(name)
    Object.keys(found.manifest.dependencies ?? {}).forEach(visit)
  }
  named.forEach(visit)
  return [...needed].map((name) => byName.get(name)!.file)
}

export const npm = (cwd: string, args: ReadonlyArray<string>) =>
  run("npm", ["--no-audit", "--no-fund", "--loglevel=error", ...args], { cwd, maxBuffer: 64 << 20 })

/**
 * Runs a README install line in `cwd` from the tarballs, as the README says to: the
 * `@tenet/*` names replaced by the tarballs of them and of the `@tenet/*` packages they need.
 */
export const install = (cwd: string, packed: ReadonlyArray<Packed>, line: string) => {
  const [command, ...args] = line.split(" ")
  if (command !== "npm") throw new Error(`not an npm line: ${line}`)
  const tenet = new Set(packed.map((p) => p.manifest.name))
  const others = args.filter((a) => !tenet.has(a))
  return npm(cwd, [...others, ...tarballsFor(packed, args.filter((a) => tenet.has(a)))])
}

export const freePort = () =>
  new Promise<number>((done) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => done(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

export const ADMIN_PASSWORD = "consumer-admin-password"

/**
 * Runs `command` as a Tenet server on a free port; resolves once `/healthz` answers 200, with
 * the time from spawning the process to that answer, and a `stop` that sends SIGTERM and waits.
 */
export const startProcess = async (
  command: string,
  args: ReadonlyArray<string>,
  cwd: string,
  env: Record<string, string>
) => {
  const port = await freePort()
  const started = performance.now()
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, TENET_PORT: String(port), TENET_ADMIN_PASSWORD: ADMIN_PASSWORD, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk) => (output += chunk))
  child.stderr.on("data", (chunk) => (output += chunk))
  const url = `http://127.0.0.1:${port}`
  for (let attempt = 0; attempt < 1200; attempt++) {
    if (child.exitCode !== null) throw new Error(`${command} exited ${child.exitCode}:\n${output}`)
    const ok = await fetch(`${url}/healthz`).then((r) => r.status === 200, () => false)
    if (ok) {
      const stop = () =>
        new Promise<void>((done) => {
          child.once("exit", () => done())
          child.kill("SIGTERM")
        })
      return { url, coldStartMillis: Math.round(performance.now() - started), stop, memory: () => memoryOf(child.pid!) }
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  child.kill("SIGKILL")
  throw new Error(`${command} did not answer /healthz within 60 s:\n${output}`)
}

/** A process's resident memory now and at its peak, in MiB (Linux: from /proc). */
export const memoryOf = (pid: number): { readonly rss: number; readonly peak: number } => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)![1])
  return { rss: Math.round(kib("VmRSS") / 1024), peak: Math.round(kib("VmHWM") / 1024) }
}

/** The `tenet-server` installed in `cwd`, started as `startProcess` starts it. */
export const startServer = (cwd: string, env: Record<string, string>) =>
  startProcess(join(cwd, "node_modules/.bin/tenet-server"), [], cwd, env)
