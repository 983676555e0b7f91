/**
 * A database a newer release has migrated (a rolling update under way): the server starts and
 * serves on it, saying once, in a warning, that the schema is newer than it knows.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Migrations, PgDatabase } from "@tenet/adapters-postgres"
import { Store } from "@tenet/core"
import { Effect, Layer, Logger } from "effect"

const url = process.env.TENET_TEST_DATABASE_URL

describe.skipIf(url === undefined)("a schema newer than this release", () => {
  it.scoped("is served on, with one warning naming both migrations", () =>
    Effect.gen(function*() {
      const name = `tenet_test_newer_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
      const admin = yield* Effect.provide(
        SqlClient.SqlClient,
        yield* Layer.build(PgDatabase.layerClient({ url: url!, maxConnections: 1 }))
      )
      yield* admin.unsafe(`CREATE DATABASE ${name}`)
      yield* Effect.addFinalizer(() => admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.orDie))
      const target = new URL(url!)
      target.pathname = `/${name}`
      const layer = PgDatabase.layer({ url: target.toString(), maxConnections: 2 })

      const newer = Migrations.LATEST + 1
      yield* Effect.scoped(Effect.gen(function*() {
        const sql = yield* Effect.provide(SqlClient.SqlClient, yield* Layer.build(layer))
        yield* sql`INSERT INTO effect_sql_migrations (migration_id, name) VALUES (${newer}, 'from_a_newer_release')`
      }))

      const warnings: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => {
          if (logLevel._tag === "Warning") warnings.push(String(message))
        })
      )
      const store = yield* Effect.provide(Store.Store, yield* Layer.build(Layer.provide(layer, capture)))
      yield* store.ping
      expect(warnings).toEqual([
        `the database's schema is at migration ${newer}, newer than this server's ${Migrations.LATEST}: ` +
        "serving on it, as a rolling update of one release does; finish the update to the newer release"
      ])
    }))
})
