/**
 * For tests: a Store on a database of its own, created on the given server and dropped when
 * the layer is released, so tests never write anywhere else.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import * as PgDatabase from "./PgDatabase.js"

export const layerFreshDatabase = (serverUrl: string, options: Omit<PgDatabase.Options, "url"> = {}) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const name = `tenet_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
    const admin = yield* Layer.build(PgDatabase.layerClient({ url: serverUrl, maxConnections: 1 }))
    const sql = yield* Effect.provide(SqlClient.SqlClient, admin)
    yield* sql.unsafe(`CREATE DATABASE ${name}`)
    // Registered after the admin pool, so it runs before the pool closes.
    yield* Effect.addFinalizer(() => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.orDie))
    const target = new URL(serverUrl)
    target.pathname = `/${name}`
    return PgDatabase.layer({ maxConnections: 4, ...options, url: target.toString() })
  })).pipe(Layer.orDie)
