/**
 * A kind that exists only in this test, to show what the registry promises: a kind is its entry.
 * A gadget (a domain schema, an entry made with `Kind.define`, a strategy deciding its writes) is
 * owned by a VPC; both stores, made over `Kind.KINDS` plus the gadget and with no other code of
 * its, snapshot it, keep its uniqueness rule, take it along when its VPC or tenant goes, step the
 * tenant's revision when it changes and append its events to the change stream. On PostgreSQL its
 * table is what a migration would create.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { MemoryStore } from "@tenet/adapters-memory"
import { PgTesting } from "@tenet/adapters-postgres"
import type { Change, ChangeEvent } from "@tenet/core"
import { Common, Ids, Kind, Store } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { DateTime, Effect, Either, Layer, Option, Schema } from "effect"

/** The domain schema: a VPC's named gadget, with a structured value kept as `jsonb` and one as JSON text. */
const GadgetRecord = Schema.Struct({
  id: Schema.String,
  tenant_id: Ids.TenantId,
  vpc_id: Ids.VpcId,
  name: Schema.String,
  settings: Schema.Struct({ color: Schema.String, size: Schema.Number }),
  labels: Schema.Array(Schema.String),
  notes: Schema.NullOr(Schema.Struct({ text: Schema.String })),
  retired_at: Schema.NullOr(Common.Timestamp),
  created_at: Common.Timestamp
})
type Gadget = typeof GadgetRecord.Type

const NAME_TAKEN = "gadgets_vpc_id_name_key"

/** The registry entry. */
const gadgets = Kind.define(GadgetRecord)({
  noun: (id) => `gadget ${id}`,
  event: "gadget",
  keyField: "id",
  owners: ["vpc_id"],
  contents: true,
  versioned: false,
  counted: false,
  movesScope: () => false,
  indexes: { vpc: (g) => g.vpc_id },
  order: "created",
  storage: {
    table: "gadgets",
    fixed: ["tenant_id", "vpc_id", "created_at"],
    jsonText: ["labels", "notes"],
    unique: [{ constraint: NAME_TAKEN, key: (g) => `${g.vpc_id}/${g.name}` }]
  },
  view: (record) => Schema.encodeSync(GadgetRecord)(record)
})

const REGISTRY: Kind.Registry = { ...Kind.KINDS, gadgets }

/** What the migration adding gadgets would run. */
const MIGRATION = `
  CREATE TABLE gadgets (
    id text PRIMARY KEY,
    seq bigserial NOT NULL,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vpc_id uuid NOT NULL REFERENCES vpcs (id) ON DELETE CASCADE,
    name text NOT NULL,
    settings jsonb NOT NULL,
    labels text NOT NULL,
    notes text,
    retired_at timestamptz,
    created_at timestamptz NOT NULL,
    CONSTRAINT ${NAME_TAKEN} UNIQUE (vpc_id, name)
  )`

/**
 * The strategy: a VPC holds at most three gadgets. Its writes name a part outside `Kind.KINDS`,
 * which `Change.Write`'s type cannot: a store takes any part of its registry.
 */
const decideCreate = (
  held: ReadonlyArray<Gadget>,
  gadget: Gadget
): Either.Either<ReadonlyArray<Change.Write>, string> => {
  if (held.filter((g) => g.vpc_id === gadget.vpc_id).length >= 3) return Either.left("a VPC holds three gadgets")
  const write: any = { _tag: "Insert", part: "gadgets", record: gadget }
  return Either.right([write])
}

const replaced = (gadget: Gadget): Change.Write => {
  const write: any = { _tag: "Update", part: "gadgets", record: gadget }
  return write
}

/** The stream's name for gadget events: not one of the API's (`ChangeEvent.EventKind`). */
const gadgetEvent = (type: ChangeEvent.EventType, gadget: Gadget): ChangeEvent.NewEvent => {
  const kind: any = gadgets.event
  return { tenant_id: gadget.tenant_id, type, kind, id: gadget.id, object: gadgets.view(gadget, noContext) }
}

/** A gadget's view reads nothing of its state. */
const noContext: Kind.ViewContext = {
  vpcContext: () => {
    throw new Error("a gadget's view reads no VPC")
  }
}

const gadgetOf = (vpc: { readonly id: Ids.VpcId; readonly tenant_id: Ids.TenantId }, name: string): Gadget => ({
  id: crypto.randomUUID(),
  tenant_id: vpc.tenant_id,
  vpc_id: vpc.id,
  name,
  settings: { color: "teal", size: 3 },
  labels: ["test", name],
  notes: null,
  retired_at: null,
  // Whole milliseconds: what every store keeps.
  created_at: DateTime.unsafeMake(Math.floor(Date.now()))
})

const commit = (
  tenant: Ids.TenantId,
  writes: ReadonlyArray<Change.Write>,
  events: ReadonlyArray<ChangeEvent.NewEvent>
) =>
  Effect.flatMap(
    Store.Store,
    (store) => store.commit({ tenant, decidedOn: [], writes, audit: [], events, claims: [] })
  )

const snapshotOf = (tenant: Ids.TenantId) =>
  Effect.flatMap(Store.Store, (store) => Effect.map(store.snapshots.tenant(tenant), Option.getOrThrow))

/** The gadgets of a snapshot: a part outside `Kind.Rows`' type, which the snapshot holds all the same. */
const gadgetsIn = (snapshot: Store.TenantSnapshot): ReadonlyArray<Gadget> => {
  const rows: Readonly<Record<string, ReadonlyArray<unknown>>> = snapshot.rows
  const held = rows.gadgets ?? []
  const found = held.filter(Schema.is(GadgetRecord))
  expect(found).toHaveLength(held.length)
  return found
}

const promises = (name: string, store: () => Layer.Layer<Store.Store, unknown>) =>
  describe(`a kind only this test has, on ${name}`, () => {
    it.effect("is snapshot, kept unique, revised, streamed and taken along with its VPC and tenant", () =>
      Effect.gen(function*() {
        const store = yield* Store.Store
        const tenant = Fixtures.tenant()
        const other = Fixtures.tenant()
        yield* store.tenants.insert(tenant)
        yield* store.tenants.insert(other)
        const vpc = Fixtures.vpc(tenant.id)
        const kept = Fixtures.vpc(tenant.id)
        yield* commit(tenant.id, [{ _tag: "Insert", part: "vpcs", record: vpc }, {
          _tag: "Insert",
          part: "vpcs",
          record: kept
        }], [])
        const empty = yield* snapshotOf(tenant.id)
        expect(gadgetsIn(empty)).toEqual([])

        // Created through the strategy: in the snapshot as written, its instants and JSON intact.
        const first = gadgetOf(vpc, "alpha")
        const second = { ...gadgetOf(kept, "beta"), retired_at: DateTime.unsafeMake(Date.now() + 1000) }
        for (const gadget of [first, second]) {
          const writes = Either.getOrThrow(decideCreate(gadgetsIn(yield* snapshotOf(tenant.id)), gadget))
          yield* commit(tenant.id, writes, [gadgetEvent("ADDED", gadget)])
        }
        const created = yield* snapshotOf(tenant.id)
        expect(gadgetsIn(created)).toEqual([first, second])
        expect(created.revision).not.toEqual(empty.revision)
        expect(gadgetsIn(yield* snapshotOf(other.id))).toEqual([])

        // Its uniqueness rule, under the constraint's name; nothing written.
        const clash = yield* Effect.flip(
          commit(tenant.id, Either.getOrThrow(decideCreate([], gadgetOf(vpc, "alpha"))), [])
        )
        expect(clash).toEqual(new Store.UniqueViolation({ constraint: NAME_TAKEN }))
        expect((yield* snapshotOf(tenant.id)).revision).toEqual(created.revision)

        // Replaced: the revision steps.
        const repainted = { ...first, settings: { color: "amber", size: 5 }, labels: [], notes: { text: "repainted" } }
        yield* commit(tenant.id, [replaced(repainted)], [gadgetEvent("MODIFIED", repainted)])
        const updated = yield* snapshotOf(tenant.id)
        expect(gadgetsIn(updated)).toEqual([repainted, second])
        expect(updated.revision).not.toEqual(created.revision)

        // Removing its VPC takes it along, and only it.
        yield* commit(tenant.id, [{ _tag: "Remove", part: "vpcs", key: vpc.id }], [])
        expect(gadgetsIn(yield* snapshotOf(tenant.id))).toEqual([second])

        // The stream has its events, in commit order, under its own name.
        const { events } = yield* store.events.after(0, tenant.id, 100)
        expect(events.map((e) => [e.type, e.kind, e.id])).toEqual([
          ["ADDED", "gadget", first.id],
          ["ADDED", "gadget", second.id],
          ["MODIFIED", "gadget", first.id]
        ])
        expect(events[2]!.object).toEqual(Schema.encodeSync(GadgetRecord)(repainted))

        // Deleting the tenant takes the rest.
        yield* store.tenants.delete(tenant.id)
        expect(yield* store.snapshots.tenant(tenant.id)).toEqual(Option.none())
        const again = Fixtures.tenant({ id: tenant.id, name: Fixtures.label("again"), token_hash: "again" })
        yield* store.tenants.insert(again)
        expect(gadgetsIn(yield* snapshotOf(tenant.id))).toEqual([])
      }).pipe(Effect.provide(store())))
  })

promises("memory", () => Layer.effect(Store.Store, Effect.map(MemoryStore.makeWith(REGISTRY), ({ store }) => store)))

const url = process.env.TENET_TEST_DATABASE_URL
if (url === undefined) {
  describe("a kind only this test has, on postgres", () => {
    it.skip("set TENET_TEST_DATABASE_URL to run it on PostgreSQL", () => {})
  })
} else {
  const server = url
  const migrated = () =>
    Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(MIGRATION))).pipe(
      Layer.provideMerge(PgTesting.layerFreshDatabase(server, { kinds: REGISTRY }))
    )
  promises("postgres", migrated)

  describe("a kind only this test has, as PostgreSQL holds it", () => {
    it.effect("its columns are what its migration says: SQL NULL, JSON text, jsonb, timestamptz", () =>
      Effect.gen(function*() {
        const store = yield* Store.Store
        const sql = yield* SqlClient.SqlClient
        const tenant = Fixtures.tenant()
        yield* store.tenants.insert(tenant)
        const vpc = Fixtures.vpc(tenant.id)
        const plain = gadgetOf(vpc, "plain")
        const noted = { ...gadgetOf(vpc, "noted"), notes: { text: "hello" } }
        yield* commit(tenant.id, [
          { _tag: "Insert", part: "vpcs", record: vpc },
          ...Either.getOrThrow(decideCreate([], plain)),
          ...Either.getOrThrow(decideCreate([], noted))
        ], [])
        const rows = yield* sql<
          { name: string; notes: string | null; labels: string; color: string; created_at: Date }
        >`
          SELECT name, notes, labels, settings->>'color' AS color, created_at FROM gadgets ORDER BY seq`
        expect(rows).toEqual([
          {
            name: "plain",
            notes: null,
            labels: "[\"test\",\"plain\"]",
            color: "teal",
            created_at: new Date(plain.created_at.epochMillis)
          },
          {
            name: "noted",
            notes: "{\"text\":\"hello\"}",
            labels: "[\"test\",\"noted\"]",
            color: "teal",
            created_at: new Date(noted.created_at.epochMillis)
          }
        ])
      }).pipe(Effect.provide(migrated())))
  })
}
