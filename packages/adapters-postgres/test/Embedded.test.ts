import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { PgEmbedded } from "@tenet/adapters-postgres"
import { Store } from "@tenet/core"
import { OperationsLogContract, StoreContract } from "@tenet/core/testing"
import { Effect, Fiber, Layer, Option } from "effect"

// A fresh in-memory PGlite per test: slower to start (~3 s) than a database on a server.
StoreContract.run("embedded", () => PgEmbedded.layer().pipe(Layer.orDie))
OperationsLogContract.run("embedded", () => PgEmbedded.layer().pipe(Layer.orDie))

describe("embedded store", () => {
  // Clients leave in the middle of writes (the server then interrupts the request). The
  // interrupted transaction once held PGlite's one session while its statement's cancel
  // waited for that same session, and every request after it waited 5 seconds.
  it.live(
    "a transaction interrupted in the middle of a statement ends, and the store answers at once",
    () =>
      Effect.gen(function*() {
        const store = yield* Store.Store
        const sql = yield* SqlClient.SqlClient
        const writer = yield* Effect.fork(store.transaction(sql`SELECT pg_sleep(0.3)`))
        yield* Effect.sleep("50 millis")
        const answer = yield* Fiber.interrupt(writer).pipe(
          Effect.zipRight(store.tenants.findByName("nobody")),
          Effect.timeout("2 seconds"),
          Effect.option
        )
        expect(answer).toEqual(Option.some(Option.none()))
      }).pipe(Effect.provide(PgEmbedded.layer().pipe(Layer.orDie))),
    30_000
  )
})
