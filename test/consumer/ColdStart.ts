/**
 * Cold start of the installed `tenet-server`, from spawning the process to the first 200 from
 * `/healthz`, on each store: memory, embedded (a new data directory, then the same one again)
 * and PostgreSQL (a new database, then the same one again; when TENET_BENCH_DATABASE_URL or
 * TENET_TEST_DATABASE_URL names a server and `psql` is at hand). The development path
 * (`pnpm start`: TypeScript through tsx) is measured beside it on memory. With each start, the
 * server's resident memory (RSS) once it answers, and its peak after a small workload (a tenant
 * and 100 VPCs created, 100 lists).
 *
 * A program: prints the results as a Markdown table, which `pnpm bench` puts in BENCHMARKS.md.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  ADMIN_PASSWORD,
  install,
  installLines,
  packAll,
  project,
  repo,
  run,
  startProcess,
  startServer
} from "./Installed.js"

interface Start {
  readonly millis: number
  /** MiB resident once it answers, and at its peak after the workload. */
  readonly rss: number
  readonly peak: number
}

interface ColdStartRow {
  readonly store: string
  readonly start: string
  readonly runs: ReadonlyArray<Start>
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const post = async (url: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })
  if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`)
  return await response.json() as Record<string, any>
}

/** What a small deployment does in its first minutes: one tenant, 100 VPCs, 100 lists. */
const workload = async (url: string) => {
  const admin = await post(url, "/admin/login", { username: "admin", password: ADMIN_PASSWORD })
  const name = `bench-${Math.random().toString(36).slice(2, 8)}`
  await post(url, "/tenants", { name, password: "bench-password" }, { "x-admin-token": admin.api_token })
  const session = await post(url, "/tenants/login", { name, password: "bench-password" })
  const headers = { "x-auth-token": session.api_token }
  for (let i = 0; i < 100; i++) {
    await post(
      url,
      "/vpcs",
      { token: session.api_token, tenant_id: session.id, name: `v${i}`, enable_internet: true },
      headers
    )
    await fetch(`${url}/vpcs`, { headers }).then((r) => r.arrayBuffer())
  }
}

const measured = async (server: Awaited<ReturnType<typeof startProcess>>): Promise<Start> => {
  const { rss } = server.memory()
  await workload(server.url)
  const { peak } = server.memory()
  await server.stop()
  return { millis: server.coldStartMillis, rss, peak }
}

const timeStart = async (cwd: string, env: Record<string, string>) => measured(await startServer(cwd, env))

/** `pnpm start` as a developer runs it: the sources through tsx, memory store. */
const timeDevelopmentStart = async () =>
  measured(
    await startProcess(
      process.execPath,
      ["--conditions=@tenet/source", "--import", "tsx", "packages/server/src/bin.ts"],
      repo,
      {
        TENET_STORE: "memory"
      }
    )
  )

const measure = async (): Promise<ReadonlyArray<ColdStartRow>> => {
  const work = mkdtempSync(join(tmpdir(), "tenet-coldstart-"))
  try {
    const packed = await packAll(join(work, "packs"))
    const dir = project(work, "operator")
    await install(dir, packed, installLines.operator)
    const rows: Array<ColdStartRow> = []
    const memory = []
    for (let i = 0; i < 3; i++) memory.push(await timeStart(dir, { TENET_STORE: "memory" }))
    rows.push({ store: "memory", start: "any", runs: memory })
    const dataDir = join(work, "data")
    rows.push({
      store: "embedded",
      start: "first (new data directory)",
      runs: [await timeStart(dir, { TENET_STORE: "embedded", TENET_DATA_DIR: dataDir })]
    })
    const again = []
    for (let i = 0; i < 3; i++) again.push(await timeStart(dir, { TENET_STORE: "embedded", TENET_DATA_DIR: dataDir }))
    rows.push({ store: "embedded", start: "later (same directory)", runs: again })
    const serverUrl = process.env.TENET_BENCH_DATABASE_URL ?? process.env.TENET_TEST_DATABASE_URL
    if (serverUrl !== undefined) {
      const database = `tenet_coldstart_${process.pid}`
      await run("psql", [serverUrl, "-qc", `CREATE DATABASE ${database}`])
      try {
        const url = new URL(serverUrl)
        url.pathname = `/${database}`
        const env = {
          TENET_STORE: "postgres",
          TENET_DATABASE_URL: url.toString(),
          TENET_ENCRYPTION_KEY: "0".repeat(64)
        }
        rows.push({ store: "postgres", start: "first (new database)", runs: [await timeStart(dir, env)] })
        const later = []
        for (let i = 0; i < 3; i++) later.push(await timeStart(dir, env))
        rows.push({ store: "postgres", start: "later (migrated database)", runs: later })
      } finally {
        await run("psql", [serverUrl, "-qc", `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`])
      }
    }
    const development = []
    for (let i = 0; i < 3; i++) development.push(await timeDevelopmentStart())
    rows.push({ store: "memory", start: "`pnpm start` (sources through tsx)", runs: development })
    return rows
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

const toMarkdown = (rows: ReadonlyArray<ColdStartRow>) =>
  [
    "| store | start | median to /healthz (ms) | runs (ms) | RSS once up (MiB) | peak RSS after the workload (MiB) |",
    "|---|---|---:|---|---:|---:|",
    ...rows.map((r) =>
      `| ${r.store} | ${r.start} | ${median(r.runs.map((s) => s.millis))} | ${
        r.runs.map((s) => s.millis).join(", ")
      } | ${median(r.runs.map((s) => s.rss))} | ${median(r.runs.map((s) => s.peak))} |`
    )
  ].join("\n")

console.log(toMarkdown(await measure()))
