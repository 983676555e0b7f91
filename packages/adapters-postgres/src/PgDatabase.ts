/**
 * Connecting to PostgreSQL and bringing its schema up to date, as one Layer: a pool through
 * `@effect/sql-pg`, the numbered migrations run at startup, and the Store and OperationsLog
 * on top.
 */
import { Migrator } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Layer, Redacted } from "effect"
import * as Migrations from "./Migrations.js"
import * as PgStore from "./PgStore.js"

export interface Options extends PgStore.Options {
  /** `postgres://user:password@host:port/database` */
  readonly url: Redacted.Redacted<string> | string
  readonly maxConnections?: number
  readonly applicationName?: string
}

export const layerClient = (options: Options) =>
  PgClient.layer({
    url: typeof options.url === "string" ? Redacted.make(options.url) : options.url,
    maxConnections: options.maxConnections ?? 10,
    applicationName: options.applicationName ?? "tenet"
  })

/** Runs the migrations that have not run yet (no schema dumps, so no shell or files needed). */
export const layerMigrations = Layer.effectDiscard(Migrator.make({})({ loader: Migrations.loader }))

/**
 * Store and OperationsLog on a migrated database, and the SqlClient they use; the pool lives
 * as long as the layer.
 */
export const layer = (options: Options) => {
  const client = layerClient(options)
  return PgStore.layer(options).pipe(
    Layer.provide(layerMigrations.pipe(Layer.provide(client))),
    Layer.provideMerge(client)
  )
}
