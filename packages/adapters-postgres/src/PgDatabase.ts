/**
 * Connecting to PostgreSQL and bringing its schema up to date, as one Layer: a pool through
 * `@effect/sql-pg` whose connections go to the primary (`PgPrimary`), the numbered migrations
 * run at startup, and the Store and OperationsLog on top.
 */
import { Migrator, SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import * as Migrations from "./Migrations.js"
import * as PgPrimary from "./PgPrimary.js"
import * as PgStore from "./PgStore.js"

export interface Options extends PgStore.Options {
  /**
   * `postgres://user:password@host:port/database`, or with several hosts
   * (`postgres://user@db-1:5432,db-2:5432/database`): connections go to the one that accepts writes.
   */
  readonly url: Redacted.Redacted<string> | string
  /** 10 by default; at least 2 for `layer` (one is held while migrating, under a lock). */
  readonly maxConnections?: number
  readonly applicationName?: string
}

/** How long connecting may take, the first time (then the pool's connect timeout) and per host searched. */
const CONNECT_TIMEOUT_MS = 5_000

export const layerClient = (options: Options) =>
  PgClient.layerFromPool({
    applicationName: options.applicationName ?? "tenet",
    acquire: Effect.acquireRelease(
      Effect.gen(function*() {
        const url = typeof options.url === "string" ? options.url : Redacted.value(options.url)
        const parsed = PgPrimary.parseUrl(url)
        if ("invalid" in parsed) {
          return yield* new SqlError.SqlError({ cause: new Error(parsed.invalid), message: parsed.invalid })
        }
        const pool = PgPrimary.makePool(parsed.target, {
          max: options.maxConnections ?? 10,
          application_name: options.applicationName ?? "tenet",
          connectTimeoutMillis: CONNECT_TIMEOUT_MS
        })
        // An idle connection that breaks is dropped by the pool; the next one finds the primary.
        pool.on("error", () => {})
        yield* Effect.tryPromise({
          try: () => pool.query("SELECT 1"),
          catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
        }).pipe(Effect.onError(() => Effect.promise(() => pool.end())))
        return pool
      }),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    )
  })

/** Runs the migrations that have not run yet (no schema dumps, so no shell or files needed). */
export const layerMigrations = Layer.effectDiscard(Migrator.make({})({ loader: Migrations.loader }))

/**
 * A database a newer release has migrated: this server serves on (a release's migrations only
 * expand, so the one before reads and writes its rows; README, "Upgrading"), and says so once.
 */
const warnIfNewer = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ latest: number | null }>`SELECT max(migration_id) AS latest FROM effect_sql_migrations`
  const latest = row?.latest ?? 0
  if (latest > Migrations.LATEST) {
    yield* Effect.logWarning(
      `the database's schema is at migration ${latest}, newer than this server's ${Migrations.LATEST}: ` +
        "serving on it, as a rolling update of one release does; finish the update to the newer release"
    )
  }
})

/** The advisory lock replicas starting together take in turn to migrate (its two keys: "TNET", "MIGR"). */
const MIGRATION_LOCK = [1414417748, 1296648018] as const

/**
 * `layerMigrations` one process at a time: replicas starting together on a new database would
 * otherwise race to create the migrations' own table. The lock is a session's, on a connection
 * of its own (the migrator's `select ...::regclass` probe aborts a transaction it runs in, so the
 * lock cannot be a transaction's around it).
 */
const layerMigrationsInTurn = Layer.effectDiscard(Effect.scoped(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const held = yield* sql.reserve
  yield* Effect.acquireRelease(
    held.executeRaw("SELECT pg_advisory_lock($1, $2)", MIGRATION_LOCK),
    () =>
      Effect.ignore(
        held.executeRaw("SELECT pg_advisory_unlock($1, $2)", MIGRATION_LOCK).pipe(Effect.timeout("5 seconds"))
      )
  )
  yield* Migrator.make({})({ loader: Migrations.loader })
  yield* warnIfNewer
})))

/**
 * Store and OperationsLog on a migrated database, and the SqlClient they use; the pool lives
 * as long as the layer.
 */
export const layer = (options: Options) => {
  const client = layerClient(options)
  return PgStore.layer(options).pipe(
    // One process owns an embedded database, whose socket serves one connection at a time.
    Layer.provide((options.locks === "in-process" ? layerMigrations : layerMigrationsInTurn).pipe(
      Layer.provide(client)
    )),
    Layer.provideMerge(client)
  )
}
