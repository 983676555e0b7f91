/**
 * Cold start of the installed `tenet-server`, from spawning the process to the first 200 from
 * `/healthz`, on each store: memory, embedded (a new data directory, then the same one again)
 * and PostgreSQL (a new database, then the same one again; when TENET_BENCH_DATABASE_URL or
 * TENET_TEST_DATABASE_URL names a server and `psql` is at hand). The development path
 * (`pnpm start`: TypeScript through tsx) is measured beside it on memory.
 *
 * A program: prints the results as a Markdown table, which `pnpm bench` puts in BENCHMARKS.md.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { install, installLines, packAll, project, repo, run, startProcess, startServer } from "./Installed.js"

interface ColdStartRow {
  readonly store: string
  readonly start: string
  readonly millis: ReadonlyArray<number>
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const timeStart = async (cwd: string, env: Record<string, string>) => {
  const server = await startServer(cwd, env)
  await server.stop()
  return server.coldStartMillis
}

/** `pnpm start` as a developer runs it: the sources through tsx, memory store. */
const timeDevelopmentStart = async () => {
  const server = await startProcess(process.execPath, ["--import", "tsx", "packages/server/src/bin.ts"], repo, {
    TENET_STORE: "memory"
  })
  await server.stop()
  return server.coldStartMillis
}

const measure = async (): Promise<ReadonlyArray<ColdStartRow>> => {
  const work = mkdtempSync(join(tmpdir(), "tenet-coldstart-"))
  try {
    const packed = await packAll(join(work, "packs"))
    const dir = project(work, "operator")
    await install(dir, packed, installLines.operator)
    const rows: Array<ColdStartRow> = []
    const memory = []
    for (let i = 0; i < 3; i++) memory.push(await timeStart(dir, { TENET_STORE: "memory" }))
    rows.push({ store: "memory", start: "any", millis: memory })
    const dataDir = join(work, "data")
    rows.push({
      store: "embedded",
      start: "first (new data directory)",
      millis: [await timeStart(dir, { TENET_STORE: "embedded", TENET_DATA_DIR: dataDir })]
    })
    const again = []
    for (let i = 0; i < 3; i++) again.push(await timeStart(dir, { TENET_STORE: "embedded", TENET_DATA_DIR: dataDir }))
    rows.push({ store: "embedded", start: "later (same directory)", millis: again })
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
        rows.push({ store: "postgres", start: "first (new database)", millis: [await timeStart(dir, env)] })
        const later = []
        for (let i = 0; i < 3; i++) later.push(await timeStart(dir, env))
        rows.push({ store: "postgres", start: "later (migrated database)", millis: later })
      } finally {
        await run("psql", [serverUrl, "-qc", `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`])
      }
    }
    const development = []
    for (let i = 0; i < 3; i++) development.push(await timeDevelopmentStart())
    rows.push({ store: "memory", start: "`pnpm start` (sources through tsx)", millis: development })
    return rows
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

const toMarkdown = (rows: ReadonlyArray<ColdStartRow>) =>
  [
    "| store | start | median to /healthz (ms) | runs (ms) |",
    "|---|---|---:|---|",
    ...rows.map((r) => `| ${r.store} | ${r.start} | ${median(r.millis)} | ${r.millis.join(", ")} |`)
  ].join("\n")

console.log(toMarkdown(await measure()))
