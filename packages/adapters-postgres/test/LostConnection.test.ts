/**
 * A connection lost inside a transaction (PostgreSQL restarted, a network cut): the ROLLBACK
 * cannot run either, and @effect/sql reports that as a defect. The store must report it as
 * `StoreUnavailable` (a 503 upstream), never as a defect (a 500).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { PgTesting } from "@tenet/adapters-postgres"
import { Store } from "@tenet/core"
import { Effect, Exit } from "effect"

const url = process.env.TENET_TEST_DATABASE_URL

if (url === undefined) {
  describe("a connection lost inside a transaction", () => {
    it.skip("set TENET_TEST_DATABASE_URL to run it on PostgreSQL", () => {})
  })
} else {
  describe("a connection lost inside a transaction", () => {
    layer(PgTesting.layerFreshDatabase(url))((it) => {
      it.effect("is StoreUnavailable, not a defect", () =>
        Effect.gen(function*() {
          const store = yield* Store.Store
          const sql = yield* SqlClient.SqlClient
          const exit = yield* store.transaction(
            Effect.zipRight(store.ping, sql`SELECT pg_terminate_backend(pg_backend_pid())`)
          ).pipe(Effect.exit)
          expect(Exit.isFailure(exit) && !Exit.isInterrupted(exit)).toBe(true)
          if (Exit.isFailure(exit)) {
            expect(exit.cause._tag, String(exit.cause)).toBe("Fail")
            expect((exit.cause as { error: { _tag: string } }).error._tag).toBe("StoreUnavailable")
          }
          // The pool replaces the lost connection.
          yield* store.ping
        }))
    })
  })
}
