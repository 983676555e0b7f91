/**
 * PostgreSQL embedded in the process: PGlite (PostgreSQL compiled to WebAssembly) behind
 * pglite-socket, so the very same `@effect/sql-pg` code path serves it as a real server. Data
 * lives in `dataDir` (in memory when none is given), which one process holds at a time
 * (`DataDirectoryLock`).
 *
 * PGlite is one session: the socket server queues statements from all connections, and a
 * transaction holds the others until it ends. Tenet never waits on a second connection from
 * inside a transaction (which would deadlock here), so one pooled connection serves it.
 */
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Effect, Layer } from "effect"
import { mkdirSync } from "node:fs"
import * as DataDirectoryLock from "./DataDirectoryLock.js"
import * as PgPlatform from "./PgPlatform.js"

export interface Options {
  /** Where the database files live; omitted, the database lives in memory. */
  readonly dataDir?: string
  /**
   * The pool size, 1 by default: PGlite runs one statement at a time whatever the pool, and
   * with several connections concurrent results were seen to cross between them.
   */
  readonly maxConnections?: number
}

export const layer = (options: Options = {}) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const pool = options.maxConnections ?? 1
    if (options.dataDir !== undefined) {
      mkdirSync(options.dataDir, { recursive: true })
      yield* DataDirectoryLock.hold(options.dataDir)
    }
    const db = yield* Effect.acquireRelease(
      Effect.promise(() => PGlite.create(options.dataDir ?? "memory://")),
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
    return PgPlatform.layer({
      url: `postgres://postgres@${server.getServerConn()}/postgres`,
      maxConnections: pool,
      backend: "embedded",
      locks: "in-process"
    })
  }))
