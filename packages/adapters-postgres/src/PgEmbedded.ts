/**
 * PostgreSQL embedded in the process: PGlite (PostgreSQL compiled to WebAssembly) behind
 * pglite-socket, so the very same `@effect/sql-pg` code path serves it as a real server. Data
 * lives in `dataDir` (in memory when none is given), which one process holds at a time
 * (`DataDirectoryLock`).
 *
 * PGlite is one session: the socket server queues statements from all connections, and a
 * transaction holds the others until it ends. Tenet never waits on a second connection from
 * inside a transaction (which would deadlock here), so one pooled connection serves it.
 *
 * Memory (measured with PGlite 0.5): a process that ran initdb keeps ~800 MB resident, which it
 * never gives back to the OS even once that instance is closed, so a new data directory is
 * created by a short-lived process of its own. PostgreSQL's default 128 MB of shared buffers
 * live in the WebAssembly heap; Tenet's data is small and the OS caches its files anyway, so
 * `SHARED_BUFFERS` is smaller. Together: ~200 MB instead of 300-800 MB. An in-memory database
 * starts from a copy of a fresh one's files, made once per process: initdb runs once (about 1 s
 * to start from the copy against 2-9 s for initdb, on 2 busy vCPUs).
 */
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { existsSync, mkdirSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import * as DataDirectoryLock from "./DataDirectoryLock.js"
import * as Disk from "./Disk.js"
import * as PgDatabase from "./PgDatabase.js"

export interface Options {
  /** Where the database files live; omitted, the database lives in memory. */
  readonly dataDir?: string
  /**
   * The pool size, 1 by default: PGlite runs one statement at a time whatever the pool, and
   * with several connections concurrent results were seen to cross between them.
   */
  readonly maxConnections?: number
}

/** PostgreSQL's buffer cache inside the WebAssembly heap. */
export const SHARED_BUFFERS = "16MB"

const settings = { postgresqlconf: `shared_buffers = ${SHARED_BUFFERS}` }

const pglite = createRequire(import.meta.url).resolve("@electric-sql/pglite")

/**
 * A fresh database's files, made once per process: each in-memory database starts from a copy
 * of them instead of running initdb, which costs seconds of CPU (a test suite makes hundreds).
 */
let freshFiles: Promise<File | Blob> | undefined
const fresh = () =>
  freshFiles ??= PGlite.create("memory://", settings).then(async (db) => {
    try {
      return await db.dumpDataDir("none")
    } finally {
      await db.close()
    }
  }).catch((error) => {
    freshFiles = undefined
    throw error
  })

/** An in-memory database from the fresh files, or one on disk in `dataDir`. */
const open = async (dataDir: string | undefined) =>
  dataDir === undefined
    ? PGlite.create("memory://", { ...settings, loadDataDir: await fresh() })
    : PGlite.create(dataDir, settings)

/** Runs initdb for a new data directory in a child process, whose memory goes when it exits. */
const initialize = (dataDir: string) =>
  Effect.async<void, Disk.EmbeddedStoreError>((resume) => {
    const script = `require(${JSON.stringify(pglite)}).PGlite.create(process.argv[1], ${
      JSON.stringify(settings)
    }).then((db) => db.close())`
    const child = execFile(process.execPath, ["-e", script, dataDir], (error, _stdout, stderr) =>
      resume(
        error === null ? Effect.void : Effect.fail(
          new Disk.EmbeddedStoreError({
            message: `the embedded database in ${dataDir} could not be created: ${
              Disk.fullDiskProblem(dataDir) ?? (stderr.trim() || error.message)
            }`
          })
        )
      ))
    return Effect.sync(() => child.kill())
  })

export const layer = (options: Options = {}) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const pool = options.maxConnections ?? 1
    const dataDir = options.dataDir
    if (dataDir !== undefined) {
      mkdirSync(dataDir, { recursive: true })
      // Checked first: on a full disk even the lock file cannot be written.
      const full = Disk.fullDiskProblem(dataDir)
      if (full !== undefined) return yield* new Disk.EmbeddedStoreError({ message: `cannot start: ${full}` })
      yield* DataDirectoryLock.hold(dataDir)
      if (!existsSync(join(dataDir, "PG_VERSION"))) {
        // Seconds of silence on a first start would look like a hang.
        yield* Effect.logInfo(`creating the embedded database in ${dataDir} (first start only; takes a few seconds)`)
        const started = Date.now()
        yield* initialize(dataDir)
        yield* Effect.logInfo(`created the embedded database in ${((Date.now() - started) / 1000).toFixed(1)} s`)
      }
    }
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => open(dataDir),
        catch: (e) =>
          new Disk.EmbeddedStoreError({
            message: `the embedded database in ${dataDir ?? "memory"} could not be opened: ${
              (dataDir === undefined ? undefined : Disk.fullDiskProblem(dataDir)) ??
                (e instanceof Error ? e.message : String(e))
            }`
          })
      }),
      (db) => Effect.promise(() => db.close())
    )
    const server = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        // The socket server serves one connection by default; the pool needs more.
        const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: pool + 2 })
        await server.start()
        return server
      }),
      (server) => Effect.promise(() => server.stop())
    )
    return PgDatabase.layer({
      url: `postgres://postgres@${server.getServerConn()}/postgres`,
      maxConnections: pool,
      backend: "embedded",
      locks: "in-process",
      ...(dataDir === undefined ? {} : { dataDir })
    })
  }))
