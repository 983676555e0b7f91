/**
 * What PostgreSQL holds for a kind's row is what its migration says, whichever way the row's schema
 * is made (`PgStore` derives it from the kind's entry): a null is SQL NULL, a structure kept as
 * JSON text is JSON text, an instant is a `timestamptz`. Other readers of the database (an export,
 * a later migration, an operator's query) see the columns as the migrations made them.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { PgTesting } from "@tenet/adapters-postgres"
import type { Change } from "@tenet/core"
import { Store } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { Effect } from "effect"

const url = process.env.TENET_TEST_DATABASE_URL

if (url === undefined) {
  describe("rows as PostgreSQL holds them", () => {
    it.skip("set TENET_TEST_DATABASE_URL to run it", () => {})
  })
} else {
  const server = url
  describe("rows as PostgreSQL holds them", () => {
    it.effect("a null is SQL NULL and JSON text is JSON text, for a guardrail, an address set and a VPC", () =>
      Effect.gen(function*() {
        const store = yield* Store.Store
        const sql = yield* SqlClient.SqlClient
        const tenant = Fixtures.tenant()
        yield* store.tenants.insert(tenant)
        const vpc = Fixtures.vpc(tenant.id)
        const tenantWide = { ...Fixtures.guardrail(vpc), vpc_id: null, local: null }
        const scoped = Fixtures.guardrail(vpc, { local: { pod_ids: [], subnet_ids: [] } })
        const set = Fixtures.addressSet(tenant.id)
        const writes: ReadonlyArray<Change.Write> = [
          { _tag: "Insert", part: "vpcs", record: vpc },
          { _tag: "Insert", part: "guardrails", record: tenantWide },
          { _tag: "Insert", part: "guardrails", record: scoped },
          { _tag: "Insert", part: "addressSets", record: set }
        ]
        yield* store.commit({ tenant: tenant.id, decidedOn: [], writes, audit: [], events: [], claims: [] })

        const guardrails = yield* sql<{ id: string; local_is_null: boolean; local: string | null }>`
          SELECT id::text, local IS NULL AS local_is_null, local FROM guardrails ORDER BY created_at, seq`
        expect(guardrails).toEqual([
          { id: tenantWide.id, local_is_null: true, local: null },
          { id: scoped.id, local_is_null: false, local: JSON.stringify(scoped.local) }
        ])
        const [entries] = yield* sql<{ entries: string }>`SELECT entries FROM address_sets`
        expect(JSON.parse(entries!.entries)).toEqual(set.entries)
        const [row] = yield* sql<{ deleting_since_is_null: boolean; created_at: Date }>`
          SELECT deleting_since IS NULL AS deleting_since_is_null, created_at FROM vpcs`
        expect(row).toEqual({ deleting_since_is_null: true, created_at: new Date(vpc.created_at.epochMillis) })
      }).pipe(Effect.provide(PgTesting.layerFreshDatabase(server))))
  })
}
