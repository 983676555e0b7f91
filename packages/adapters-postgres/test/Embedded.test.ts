import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import { PgEmbedded } from "@tenet/adapters-postgres"
import { Store } from "@tenet/core"
import { OperationsLogContract, StoreContract } from "@tenet/core/testing"
import { Effect, Fiber, Layer, Option } from "effect"
import { expect } from "vitest"

// A fresh in-memory PGlite per test: slower to start (~3 s) than a database on a server.
StoreContract.run("embedded", () => PgEmbedded.layer().pipe(Layer.orDie))
OperationsLogContract.run("embedded", () => PgEmbedded.layer().pipe(Layer.orDie))

it.layer(PgEmbedded.layer().pipe(Layer.orDie), { timeout: 30_000, excludeTestServices: true })(
  "embedded store",
  (it) => {
    // Clients leave in the middle of writes (the server then interrupts the request). The
    // interrupted transaction once held PGlite's one session while its statement's cancel
    // waited for that same session, and every request after it waited 5 seconds.
    it.effect("a transaction interrupted in the middle of a statement ends, and the store answers at once", () =>
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
      }))
  }
)
