/**
 * The Store contract: what every Store implementation must do, as a vitest suite. Run it
 * with a factory that returns a fresh, empty store for each test.
 */
import { describe, expect } from "@effect/vitest"
import type { Layer } from "effect"
import { DateTime, Deferred, Effect, FastCheck, Fiber, Option } from "effect"
import type { NewEvent } from "../domain/ChangeEvent.js"
import type { IdempotencyKeyRecord } from "../domain/IdempotencyKey.js"
import type { TenantId, VpcId } from "../domain/Ids.js"
import type { TenantRecord } from "../domain/Tenant.js"
import * as Change from "../kinds/Change.js"
import { Constraints, KeyClaimed, StaleDecision, Store, UniqueViolation } from "../ports/Store.js"
import type { StoreUnavailable } from "../ports/Store.js"
import * as TenantState from "../readmodel/TenantState.js"
import * as Fixtures from "./Fixtures.js"
import { freshEach, freshEachLive } from "./Suite.js"

export const run = (name: string, makeStore: () => Layer.Layer<Store, StoreUnavailable>) =>
  describe(`Store contract: ${name}`, () => {
    const test = freshEach(makeStore)
    const live = freshEachLive(makeStore)

    /** Two fresh tenants, inserted in order. */
    /** The tenant's rows, as the read model loads them. */
    const rowsOf = (tenant: TenantId) =>
      Effect.map(Effect.flatMap(Store, (store) => store.snapshots.tenant(tenant)), Option.getOrThrow)

    const twoTenants = Effect.gen(function*() {
      const store = yield* Store
      const first = Fixtures.tenant()
      const second = Fixtures.tenant()
      yield* store.tenants.insert(first)
      yield* store.tenants.insert(second)
      return [first, second] as const
    })

    /** One commit of `writes` to the tenant's rows, decided on nothing. */
    const commitWrites = (tenant: TenantId, ...writes: ReadonlyArray<Change.Write>) =>
      Effect.flatMap(
        Store,
        (store) => store.commit({ tenant, decidedOn: [], writes, events: [], audit: [], claims: [] })
      )
    /** One commit of nothing but `events`. */
    const commitEvents = (tenant: TenantId, ...events: ReadonlyArray<NewEvent>) =>
      Effect.flatMap(
        Store,
        (store) => store.commit({ tenant, decidedOn: [], writes: [], events, audit: [], claims: [] })
      )
    const insert = (row: Change.Row) => commitWrites(row.record.tenant_id, Change.insert(row))
    const update = (row: Change.Row) => commitWrites(row.record.tenant_id, Change.update(row))
    /** A pod of the tenant's, in a subnet of a VPC of its own, committed. */
    const podOf = (tenant: TenantId) => {
      const vpc = Fixtures.vpc(tenant)
      const subnet = Fixtures.subnet(vpc)
      const pod = Fixtures.podRecord(subnet)
      return Effect.as(
        commitWrites(
          tenant,
          Change.insert({ part: "vpcs", record: vpc }),
          Change.insert({ part: "subnets", record: subnet }),
          Change.insert({ part: "pods", record: pod })
        ),
        { vpc, subnet, pod }
      )
    }

    const revisionOf = (id: TenantRecord["id"]) =>
      Effect.flatMap(Store, (store) => Effect.map(store.snapshots.tenant(id), (s) => Option.getOrThrow(s).revision))

    test(
      "a tenant's revision changes with every committed change to its rows, and with nothing else",
      Effect.gen(function*() {
        const store = yield* Store
        const [a, b] = yield* twoTenants
        const seen = new Set<string>()
        /** The revision now; `changed` says whether it must differ from every one seen before. */
        const expectRevision = (changed: boolean) =>
          Effect.gen(function*() {
            const revision = yield* revisionOf(a.id)
            // Read alone, it is the one the snapshot carries.
            expect((yield* store.snapshots.revisions(a.id)).tenant).toEqual(Option.some(revision))
            if (changed) expect(seen.has(revision), `a new revision after a change`).toBe(false)
            else expect(seen.has(revision), `the same revision without a change`).toBe(true)
            seen.add(revision)
          })
        yield* expectRevision(true)
        expect((yield* store.snapshots.revisions(Fixtures.tenant().id)).tenant).toEqual(Option.none())
        const vpc = Fixtures.vpc(a.id)
        yield* insert({ part: "vpcs", record: vpc })
        yield* expectRevision(true)
        yield* update({ part: "vpcs", record: { ...vpc, applied: false, apply_error: "the cluster said no" } })
        yield* expectRevision(true)
        const rule = Fixtures.rule(vpc, 1)
        yield* insert({ part: "rules", record: rule })
        yield* expectRevision(true)
        yield* update({ part: "rules", record: { ...rule, priority: 7 } })
        yield* expectRevision(true)
        const domain = Fixtures.domain(a.id)
        yield* insert({ part: "domains", record: domain })
        yield* expectRevision(true)
        // Another tenant's change, a read, a rolled-back transaction: the same revision.
        yield* insert({ part: "vpcs", record: Fixtures.vpc(b.id) })
        yield* store.snapshots.tenant(a.id)
        yield* Effect.either(store.transaction(
          Effect.zipRight(insert({ part: "vpcs", record: Fixtures.vpc(a.id) }), Effect.fail("rolled back"))
        ))
        expect(seen.has(yield* revisionOf(a.id))).toBe(true)
        yield* commitWrites(a.id, Change.remove("rules", rule.id, vpc.id))
        yield* expectRevision(true)
        // Back to no domain, as before the insert: still a revision not seen before.
        yield* commitWrites(a.id, Change.remove("domains", domain.id))
        yield* expectRevision(true)
        // Deleting the VPC cascades; the revision says so.
        yield* commitWrites(a.id, Change.remove("vpcs", vpc.id))
        yield* expectRevision(true)
      })
    )

    test(
      "guardrails, a VPC's and tenant-wide, are kept whole; a VPC's go with it, tenant-wide ones stay",
      Effect.gen(function*() {
        const store = yield* Store
        const [a] = yield* twoTenants
        const vpc = Fixtures.vpc(a.id)
        yield* insert({ part: "vpcs", record: vpc })
        const own = Fixtures.guardrail(vpc, {
          local: { pod_ids: [], subnet_ids: [Fixtures.network(a.id).subnet.subnet_id] }
        })
        const wide = Fixtures.guardrail(vpc, { vpc_id: null, require: "allow", ports: null, protocol: "icmp" })
        const before = yield* revisionOf(a.id)
        yield* commitWrites(
          a.id,
          Change.insert({ part: "guardrails", record: own }),
          Change.insert({ part: "guardrails", record: wide })
        )
        const snapshot = Option.getOrThrow(yield* store.snapshots.tenant(a.id))
        expect(snapshot.revision).not.toBe(before)
        expect(snapshot.rows.guardrails).toEqual([own, wide])
        // A touch steps the VPC's version and writes no row.
        yield* commitWrites(a.id, Change.touch(vpc.id))
        const touched = Option.getOrThrow(yield* store.snapshots.tenant(a.id))
        expect(touched.vpcVersions[vpc.id]).toBe(snapshot.vpcVersions[vpc.id]! + 1)
        expect({ ...touched, revision: "", vpcVersions: {} }).toEqual({ ...snapshot, revision: "", vpcVersions: {} })
        yield* commitWrites(a.id, Change.remove("vpcs", vpc.id))
        expect(Option.getOrThrow(yield* store.snapshots.tenant(a.id)).rows.guardrails).toEqual([wide])
      })
    )

    test(
      "address sets are kept whole, each name once per tenant, and go with their tenant",
      Effect.gen(function*() {
        const store = yield* Store
        const [a, b] = yield* twoTenants
        const offices = Fixtures.addressSet(a.id)
        const before = yield* revisionOf(a.id)
        yield* insert({ part: "addressSets", record: offices })
        const snapshot = Option.getOrThrow(yield* store.snapshots.tenant(a.id))
        expect(snapshot.revision).not.toBe(before)
        expect(snapshot.rows.addressSets).toEqual([offices])
        expect(Option.getOrThrow(yield* store.snapshots.tenant(b.id)).rows.addressSets).toEqual([])

        const clash = yield* Effect.flip(
          insert({ part: "addressSets", record: Fixtures.addressSet(a.id, { name: offices.name }) })
        )
        expect(clash).toEqual(new UniqueViolation({ constraint: Constraints.addressSetName }))
        yield* insert({ part: "addressSets", record: Fixtures.addressSet(b.id, { name: offices.name }) })

        const changed = { ...offices, entries: [], description: "none left" }
        yield* update({ part: "addressSets", record: changed })
        expect(Option.getOrThrow(yield* store.snapshots.tenant(a.id)).rows.addressSets).toEqual([changed])
        yield* commitWrites(a.id, Change.remove("addressSets", offices.id))
        expect(Option.getOrThrow(yield* store.snapshots.tenant(a.id)).rows.addressSets).toEqual([])

        yield* insert({ part: "addressSets", record: offices })
        yield* store.tenants.delete(a.id)
        yield* store.tenants.insert(a)
        expect(Option.getOrThrow(yield* store.snapshots.tenant(a.id)).rows.addressSets).toEqual([])
      })
    )

    test(
      "a VPC's lock answers its tenant's revision, and none for a VPC that is not there",
      Effect.gen(function*() {
        const store = yield* Store
        const [a] = yield* twoTenants
        const vpc = Fixtures.vpc(a.id)
        yield* insert({ part: "vpcs", record: vpc })
        const before = yield* revisionOf(a.id)
        expect(yield* store.transaction(store.vpcs.lock(vpc.id))).toEqual(Option.some(before))
        expect(yield* store.transaction(store.vpcs.lock(Fixtures.vpc(a.id).id))).toEqual(Option.none())
      })
    )

    test(
      "a state with the commits' writes made (TenantState.apply) is the state the store then holds",
      Effect.gen(function*() {
        const store = yield* Store
        // Random sequences of writes (fast-check's sample): each step picks a write by number.
        const runs = FastCheck.sample(FastCheck.array(FastCheck.nat(99), { minLength: 1, maxLength: 25 }), 12)
        for (const picks of runs) {
          const tenant = Fixtures.tenant()
          yield* store.tenants.insert(tenant)
          yield* insert({ part: "vpcs", record: Fixtures.vpc(tenant.id) })
          const before = Option.getOrThrow(yield* store.snapshots.tenant(tenant.id))
          const changes: Array<Change.Write> = []
          let seq = 0
          for (const pick of picks) {
            const now = Option.getOrThrow(yield* store.snapshots.tenant(tenant.id))
            const vpc = now.rows.vpcs[pick % Math.max(1, now.rows.vpcs.length)]
            const rule = now.rows.rules[pick % Math.max(1, now.rows.rules.length)]
            const domain = now.rows.domains[pick % Math.max(1, now.rows.domains.length)]
            const write = ((): Change.Write | undefined => {
              switch (pick % 8) {
                case 0:
                  return Change.insert({ part: "vpcs", record: Fixtures.vpc(tenant.id) })
                case 1:
                  return vpc === undefined ? undefined : Change.update({
                    part: "vpcs",
                    record: { ...vpc, applied: !vpc.applied, apply_error: vpc.applied ? "failed" : null }
                  })
                case 2:
                  return vpc === undefined || now.rows.vpcs.length < 2 ? undefined : Change.remove("vpcs", vpc.id)
                case 3:
                case 4:
                  return vpc === undefined
                    ? undefined
                    : Change.insert({ part: "rules", record: Fixtures.rule(vpc, ++seq + 1000) })
                case 5:
                  return rule === undefined
                    ? undefined
                    : Change.update({ part: "rules", record: { ...rule, priority: 1 + pick } })
                case 6:
                  return rule === undefined ? undefined : Change.remove("rules", rule.id, rule.vpc_id)
                default:
                  return domain !== undefined && pick % 2 === 0
                    ? Change.remove("domains", domain.id)
                    : Change.insert({ part: "domains", record: Fixtures.domain(tenant.id) })
              }
            })()
            if (write === undefined) continue
            yield* store.commit({
              tenant: tenant.id,
              decidedOn: [],
              writes: [write],
              events: [],
              audit: [],
              claims: []
            })
            changes.push(write)
          }
          const after = Option.getOrThrow(yield* store.snapshots.tenant(tenant.id))
          // One commit each: a VPC's version steps per commit that changed its contents.
          const made = changes.reduce(
            (state, write) => state.apply([write], state.revision),
            TenantState.TenantState.fromSnapshot(tenant.id, before)
          ).apply([], after.revision)
          expect(made.toSnapshot(), JSON.stringify(picks)).toEqual(
            TenantState.TenantState.fromSnapshot(tenant.id, after).toSnapshot()
          )
        }
      })
    )

    test(
      "a batch's commit: a VPC it makes starts at version 0 whatever else touches it; its keys are claimed all or none",
      Effect.gen(function*() {
        const store = yield* Store
        const [tenant] = yield* twoTenants
        const old = Fixtures.vpc(tenant.id)
        yield* insert({ part: "vpcs", record: old })
        const before = yield* rowsOf(tenant.id)
        // As a batch commits: one request made a VPC, a later one touched every VPC (a tenant-wide
        // guardrail) and another wrote into the new one.
        const made = Fixtures.vpc(tenant.id)
        const writes = [
          Change.insert({ part: "vpcs", record: made }),
          Change.touch(old.id),
          Change.touch(made.id),
          Change.insert({ part: "subnets", record: Fixtures.subnet(made) })
        ]
        const now = yield* DateTime.now
        const key = (name: string, created_at = now) => ({
          record: { scope: tenant.id, key: name, fingerprint: "f", resource_id: "r", created_at },
          liveSince: DateTime.subtract(now, { hours: 1 })
        })
        const step = yield* store.commit({
          tenant: tenant.id,
          decidedOn: [{ vpc: old.id, version: 0 }],
          writes,
          events: [],
          audit: [],
          claims: [key("a"), key("b")]
        })
        const after = yield* rowsOf(tenant.id)
        expect(after.vpcVersions).toEqual({ [old.id]: 1, [made.id]: 0 })
        expect(
          TenantState.TenantState.fromSnapshot(tenant.id, before).apply(writes, step.after).toSnapshot()
        ).toEqual(TenantState.TenantState.fromSnapshot(tenant.id, after).toSnapshot())
        expect(Option.isSome(yield* store.idempotencyKeys.find(tenant.id, "a"))).toBe(true)
        expect(Option.isSome(yield* store.idempotencyKeys.find(tenant.id, "b"))).toBe(true)
        // One key of a batch held by a live record: nothing of it is written, its other key neither.
        const refused = yield* Effect.flip(store.commit({
          tenant: tenant.id,
          decidedOn: [],
          writes: [Change.insert({ part: "vpcs", record: Fixtures.vpc(tenant.id) })],
          events: [],
          audit: [],
          claims: [key("c"), key("b")]
        }))
        expect(refused._tag).toBe("KeyClaimed")
        expect(Option.isNone(yield* store.idempotencyKeys.find(tenant.id, "c"))).toBe(true)
        expect((yield* rowsOf(tenant.id)).rows.vpcs).toHaveLength(2)
      })
    )

    test(
      "a commit writes its change whole: rows, version steps, key and audit entry, with the revision step; a stale decision or a held key writes nothing",
      Effect.gen(function*() {
        const store = yield* Store
        const [tenant] = yield* twoTenants
        const vpc = Fixtures.vpc(tenant.id)
        const other = Fixtures.vpc(tenant.id)
        yield* insert({ part: "vpcs", record: vpc })
        yield* insert({ part: "vpcs", record: other })
        const snapshotNow = Effect.map(store.snapshots.tenant(tenant.id), Option.getOrThrow)
        const before = yield* snapshotNow
        expect(before.vpcVersions).toEqual({ [vpc.id]: 0, [other.id]: 0 })
        const now = yield* DateTime.now
        const key = (name: string) => ({
          record: { scope: tenant.id, key: name, fingerprint: "f", resource_id: "r", created_at: now },
          liveSince: DateTime.subtract(now, { hours: 1 })
        })
        const entry = {
          at: now,
          request_id: "request",
          actor_type: "tenant" as const,
          actor: tenant.name,
          tenant_id: tenant.id,
          action: "securityRules.create",
          resource_kind: "security_rule" as const,
          resource_id: "r",
          outcome: "success"
        }
        const first = Fixtures.rule(vpc, 1)
        const writes = [Change.insert({ part: "rules", record: first })]
        const step = yield* store.commit({
          tenant: tenant.id,
          decidedOn: [{ vpc: vpc.id, version: 0 }],
          events: [],
          writes,
          audit: [entry],
          claims: [key("k1")]
        })
        expect(step.before).toBe(before.revision)
        const after = yield* snapshotNow
        expect(step.after).toBe(after.revision)
        expect(after.rows.rules).toEqual([first])
        expect(after.vpcVersions).toEqual({ [vpc.id]: 1, [other.id]: 0 })
        expect(TenantState.TenantState.fromSnapshot(tenant.id, before).apply(writes, after.revision).toSnapshot())
          .toEqual(TenantState.TenantState.fromSnapshot(tenant.id, after).toSnapshot())
        expect(Option.isSome(yield* store.idempotencyKeys.find(tenant.id, "k1"))).toBe(true)
        const trail = yield* store.audit.page({ tenant_id: tenant.id, limit: 10 })
        expect(trail.entries.map((e) => e.action)).toEqual(["securityRules.create"])

        // Decided on version 0, which the first commit stepped: refused, nothing written.
        const stale = yield* Effect.flip(store.commit({
          tenant: tenant.id,
          decidedOn: [{ vpc: vpc.id, version: 0 }],
          events: [],
          writes: [Change.insert({ part: "rules", record: Fixtures.rule(vpc, 2) })],
          audit: [entry],
          claims: [key("k2")]
        }))
        expect(stale).toEqual(new StaleDecision({ vpc_id: vpc.id }))
        const held = yield* Effect.flip(store.commit({
          tenant: tenant.id,
          decidedOn: [],
          events: [],
          writes: [Change.insert({ part: "rules", record: Fixtures.rule(other, 2) })],
          audit: [entry],
          claims: [key("k1")]
        }))
        expect(held).toEqual(new KeyClaimed())
        const unchanged = yield* snapshotNow
        expect(unchanged).toEqual(after)
        expect(Option.isNone(yield* store.idempotencyKeys.find(tenant.id, "k2"))).toBe(true)
        expect((yield* store.audit.page({ tenant_id: tenant.id, limit: 10 })).entries).toHaveLength(1)

        // A rule removed steps its VPC's version too.
        yield* store.commit({
          tenant: tenant.id,
          decidedOn: [{ vpc: vpc.id, version: 1 }],
          events: [],
          writes: [Change.remove("rules", first.id, vpc.id)],
          audit: [],
          claims: []
        })
        expect((yield* snapshotNow).vpcVersions).toEqual({ [vpc.id]: 2, [other.id]: 0 })

        // A VPC removed takes its contents; a duplicate name is the store's refusal.
        yield* store.commit({
          tenant: tenant.id,
          decidedOn: [],
          events: [],
          writes: [Change.remove("vpcs", vpc.id)],
          audit: [],
          claims: []
        })
        const removed = yield* snapshotNow
        expect(removed.rows.rules).toEqual([])
        expect(removed.vpcVersions).toEqual({ [other.id]: 0 })
        const duplicate = yield* Effect.flip(store.commit({
          tenant: tenant.id,
          decidedOn: [],
          events: [],
          writes: [Change.insert({ part: "vpcs", record: Fixtures.vpc(tenant.id, { name: other.name }) })],
          audit: [],
          claims: []
        }))
        expect(duplicate).toEqual(new UniqueViolation({ constraint: Constraints.vpcName }))
      })
    )

    test(
      "a snapshot holds what the tenant owns, in order, and authentication reads the same revisions",
      Effect.gen(function*() {
        const store = yield* Store
        const [a, b] = yield* twoTenants
        const vpc = Fixtures.vpc(a.id)
        const second = Fixtures.vpc(a.id)
        yield* insert({ part: "vpcs", record: vpc })
        yield* insert({ part: "vpcs", record: second })
        yield* insert({ part: "vpcs", record: Fixtures.vpc(b.id) })
        const rules = [Fixtures.rule(vpc, 2), Fixtures.rule(vpc, 1)]
        for (const rule of rules) yield* insert({ part: "rules", record: rule })
        const domain = Fixtures.domain(a.id)
        yield* insert({ part: "domains", record: domain })
        const snapshot = Option.getOrThrow(yield* store.snapshots.tenant(a.id))
        expect(snapshot.rows.vpcs).toEqual([vpc, second])
        expect(snapshot.rows.rules).toEqual([rules[1], rules[0]])
        expect(snapshot.rows.rules.map((r) => r.seq)).toEqual([1, 2])
        expect(snapshot.rows.subnets).toEqual([])
        expect(snapshot.rows.domains).toEqual([domain])
        expect(snapshot.rows.pods).toEqual([])
        expect(snapshot.rows.tunnels).toEqual([])
        expect(snapshot.rows.credentials).toEqual([])
        const authenticated = Option.getOrThrow(yield* store.snapshots.authenticate(a.token_hash))
        expect(authenticated.tenant).toEqual(a)
        expect(authenticated.revision).toBe(snapshot.revision)
        const config = yield* store.snapshots.providerConfig
        expect(authenticated.providerConfigRevision).toBe(config.revision)
        expect(yield* store.snapshots.revisions(a.id)).toEqual({
          tenant: Option.some(snapshot.revision),
          providerConfig: config.revision
        })
        expect(config.config).toEqual(Option.none())
        yield* store.providerConfig.put(Fixtures.providerConfig())
        const after = yield* store.snapshots.providerConfig
        expect(after.revision).not.toBe(config.revision)
        expect(after.config).toEqual(yield* store.providerConfig.get)
        // Read with any tenant's, or with none's.
        expect((yield* store.snapshots.revisions(a.id)).providerConfig).toBe(after.revision)
        expect((yield* store.snapshots.revisions(Fixtures.tenant().id)).providerConfig).toBe(after.revision)
        expect(yield* store.snapshots.authenticate("no such token")).toEqual(Option.none())
        expect(yield* store.snapshots.tenant(Fixtures.tenant().id)).toEqual(Option.none())
      })
    )

    test(
      "tenants are found by id, name and token hash, and listed oldest first",
      Effect.gen(function*() {
        const store = yield* Store
        const [a, b] = yield* twoTenants
        expect(yield* store.tenants.find(a.id)).toEqual(Option.some(a))
        expect(yield* store.tenants.findByName(b.name)).toEqual(Option.some(b))
        expect(yield* store.tenants.findByTokenHash(a.token_hash)).toEqual(Option.some(a))
        expect((yield* store.tenants.list).map((t) => t.id)).toEqual([a.id, b.id])
        expect(yield* store.tenants.findByName("nobody")).toEqual(Option.none())
      })
    )

    test(
      "records created in the same instant are listed in the order they were inserted",
      Effect.gen(function*() {
        const store = yield* Store
        const first = Fixtures.tenant()
        const rest = Array.from({ length: 5 }, () => Fixtures.tenant({ created_at: first.created_at }))
        for (const t of [first, ...rest]) yield* store.tenants.insert(t)
        expect((yield* store.tenants.list).map((t) => t.id)).toEqual([first, ...rest].map((t) => t.id))
      })
    )

    test(
      "tenant names are unique, also under concurrent inserts",
      Effect.gen(function*() {
        const store = yield* Store
        const name = Fixtures.label("same")
        const results = yield* Effect.all(
          Array.from({ length: 20 }, () => Effect.either(store.tenants.insert(Fixtures.tenant({ name })))),
          { concurrency: "unbounded" }
        )
        expect(results.filter((r) => r._tag === "Right").length).toBe(1)
        for (const r of results) {
          if (r._tag === "Left") {
            expect(r.left).toMatchObject({ _tag: "UniqueViolation", constraint: Constraints.tenantName })
          }
        }
      })
    )

    test(
      "a new token replaces the old one for lookups",
      Effect.gen(function*() {
        const store = yield* Store
        const t = Fixtures.tenant()
        yield* store.tenants.insert(t)
        expect(yield* store.tenants.setToken(t.id, "new-hash", "new-cipher")).toBe(true)
        expect(yield* store.tenants.findByTokenHash(t.token_hash)).toEqual(Option.none())
        expect(Option.map(yield* store.tenants.findByTokenHash("new-hash"), (x) => x.token_ciphertext))
          .toEqual(Option.some("new-cipher"))
        expect(yield* store.tenants.setToken(Fixtures.tenant().id, "h", "c")).toBe(false)
      })
    )

    test(
      "deleting a tenant cascades to its domains and frees its name",
      Effect.gen(function*() {
        const store = yield* Store
        const [t, other] = yield* twoTenants
        const mine = Fixtures.domain(t.id)
        const theirs = Fixtures.domain(other.id)
        yield* insert({ part: "domains", record: mine })
        yield* insert({ part: "domains", record: theirs })
        expect(Option.map(yield* store.tenants.delete(t.id), (deleted) => deleted.id)).toEqual(Option.some(t.id))
        expect(Option.isNone(yield* store.tenants.delete(t.id))).toBe(true)
        expect(yield* store.tenants.find(t.id)).toEqual(Option.none())
        expect(yield* store.tenants.findByTokenHash(t.token_hash)).toEqual(Option.none())
        expect(yield* store.domains.findByDomain(mine.domain)).toEqual(Option.none())
        expect(yield* store.domains.findByDomain(theirs.domain)).toEqual(Option.some(theirs))
        yield* store.tenants.insert(Fixtures.tenant({ name: t.name }))
        yield* insert({ part: "domains", record: Fixtures.domain(other.id, { domain: mine.domain }) })
      })
    )

    test(
      "a name is unique within its tenant however the row is written: inserted twice, or renamed onto another's",
      Effect.gen(function*() {
        const [a, b] = yield* twoTenants
        const credential = (tenant: TenantId) => ({
          tenant_id: tenant,
          name: Fixtures.label("registry"),
          server: "registry.example.com",
          username: "puller",
          password_ciphertext: "sealed",
          created_at: DateTime.unsafeMake(Date.now())
        })
        const first = credential(a.id)
        yield* insert({ part: "credentials", record: first })
        const again = yield* Effect.flip(
          insert({ part: "credentials", record: { ...credential(a.id), name: first.name } })
        )
        expect(again).toEqual(new UniqueViolation({ constraint: Constraints.registryCredentialName }))
        // Another tenant's name is its own.
        yield* insert({ part: "credentials", record: { ...credential(b.id), name: first.name } })
        expect((yield* rowsOf(a.id)).rows.credentials).toEqual([first])

        const one = Fixtures.vpc(a.id)
        const two = Fixtures.vpc(a.id)
        yield* commitWrites(
          a.id,
          Change.insert({ part: "vpcs", record: one }),
          Change.insert({ part: "vpcs", record: two })
        )
        const before = yield* rowsOf(a.id)
        const renamed = yield* Effect.flip(
          commitWrites(a.id, Change.update({ part: "vpcs", record: { ...two, name: one.name } }))
        )
        expect(renamed).toEqual(new UniqueViolation({ constraint: Constraints.vpcName }))
        expect(yield* rowsOf(a.id)).toEqual(before)
      })
    )

    test(
      "domains are unique across tenants and listed per tenant",
      Effect.gen(function*() {
        const store = yield* Store
        const [a, b] = yield* twoTenants
        const d1 = Fixtures.domain(a.id)
        const d2 = Fixtures.domain(a.id)
        yield* insert({ part: "domains", record: d1 })
        yield* insert({ part: "domains", record: d2 })
        const clash = yield* Effect.flip(
          insert({ part: "domains", record: Fixtures.domain(b.id, { domain: d1.domain }) })
        )
        expect(clash).toMatchObject({ _tag: "UniqueViolation", constraint: Constraints.domainName })
        expect((yield* store.domains.listByTenant(a.id)).map((d) => d.id)).toEqual([d1.id, d2.id])
        expect(yield* store.domains.listByTenant(b.id)).toEqual([])
        yield* commitWrites(a.id, Change.remove("domains", d1.id))
        expect(yield* store.domains.findByDomain(d1.domain)).toEqual(Option.none())
      })
    )

    test(
      "VPCs and rules are held per tenant and VPC, follow their apply state, and go with their VPC",
      Effect.gen(function*() {
        const store = yield* Store
        const [a, b] = yield* twoTenants
        const a1 = Fixtures.vpc(a.id)
        const a2 = Fixtures.vpc(a.id)
        const b1 = Fixtures.vpc(b.id, { name: a1.name })
        for (const vpc of [a1, a2, b1]) yield* insert({ part: "vpcs", record: vpc })
        const clash = yield* Effect.flip(insert({ part: "vpcs", record: Fixtures.vpc(a.id, { name: a1.name }) }))
        expect(clash).toMatchObject({ _tag: "UniqueViolation", constraint: Constraints.vpcName })
        expect((yield* rowsOf(a.id)).rows.vpcs.map((v) => v.id)).toEqual([a1.id, a2.id])
        expect((yield* rowsOf(b.id)).rows.vpcs.map((v) => v.id)).toEqual([b1.id])
        const rulesOf = (vpc: VpcId) =>
          Effect.map(rowsOf(a.id), (rows) => rows.rows.rules.filter((r) => r.vpc_id === vpc).map((r) => r.id))
        const naming = (vpc: VpcId) =>
          Effect.map(
            rowsOf(a.id),
            (rows) => rows.rows.rules.filter((r) => r.remote_vpc_id === vpc && r.vpc_id !== vpc).map((r) => r.id)
          )

        const r1 = Fixtures.rule(a1, 2)
        const r2 = Fixtures.rule(a1, 1, { remote_type: "vpc", remote_cidr: null, remote_vpc_id: a2.id })
        const r3 = Fixtures.rule(a2, 1)
        for (const rule of [r1, r2, r3]) yield* insert({ part: "rules", record: rule })
        expect(yield* rulesOf(a1.id)).toEqual([r2.id, r1.id])
        expect(yield* naming(a2.id)).toEqual([r2.id])
        yield* update({ part: "rules", record: { ...r2, remote_vpc_id: b1.id } })
        expect(yield* naming(a2.id)).toEqual([])

        expect(yield* store.vpcs.listUnapplied).toEqual([])
        yield* update({ part: "vpcs", record: { ...a2, applied: false, apply_error: "cluster unreachable" } })
        expect((yield* store.vpcs.listUnapplied).map((v) => [v.id, v.apply_error])).toEqual([
          [a2.id, "cluster unreachable"]
        ])
        yield* update({ part: "vpcs", record: { ...a2, applied: true, apply_error: null } })
        expect(yield* store.vpcs.listUnapplied).toEqual([])

        yield* commitWrites(a.id, Change.remove("vpcs", a1.id))
        expect(yield* rulesOf(a1.id)).toEqual([])
        expect((yield* rowsOf(a.id)).rows.rules.map((r) => r.id)).toEqual([r3.id])
        expect((yield* rowsOf(a.id)).rows.vpcs.map((v) => v.id)).toEqual([a2.id])
        // The name is free again.
        yield* insert({ part: "vpcs", record: Fixtures.vpc(a.id, { name: a1.name }) })
        expect(Option.isSome(yield* store.tenants.delete(b.id))).toBe(true)
        expect(yield* store.snapshots.tenant(b.id)).toEqual(Option.none())
      })
    )

    test(
      "the provider configuration is one document, replaced as a whole",
      Effect.gen(function*() {
        const store = yield* Store
        expect(yield* store.providerConfig.get).toEqual(Option.none())
        const first = Fixtures.providerConfig()
        yield* store.providerConfig.put(first)
        expect(yield* store.providerConfig.get).toEqual(Option.some(first))
        const second = Fixtures.providerConfig({ edge_domain: null, pod_dns_nameservers: [] })
        yield* store.providerConfig.put(second)
        expect(yield* store.providerConfig.get).toEqual(Option.some(second))
      })
    )

    test(
      "service tunnels: unique service and hostname, update and delete",
      Effect.gen(function*() {
        const store = yield* Store
        const t = Fixtures.serviceTunnel()
        yield* store.serviceTunnels.insert(t)
        expect(yield* Effect.flip(store.serviceTunnels.insert(Fixtures.serviceTunnel({ service: t.service }))))
          .toMatchObject({ constraint: Constraints.serviceTunnelService })
        expect(yield* Effect.flip(store.serviceTunnels.insert(Fixtures.serviceTunnel({ hostname: t.hostname }))))
          .toMatchObject({ constraint: Constraints.routedHostname })
        expect(yield* store.hostnames.holder(t.hostname)).toEqual(
          Option.some({ kind: "service", service_tunnel_id: t.id, service: t.service })
        )
        const failed = { ...t, status: "error" as const, error: "provider down" }
        expect(yield* store.serviceTunnels.update(failed)).toBe(true)
        expect(yield* store.serviceTunnels.find(t.id)).toEqual(Option.some(failed))
        expect(yield* store.serviceTunnels.list).toEqual([failed])
        expect(yield* store.serviceTunnels.delete(t.id)).toBe(true)
        expect(yield* store.serviceTunnels.update(failed)).toBe(false)
        expect(yield* store.serviceTunnels.list).toEqual([])
        // Deleted, it gives its hostname back.
        expect(yield* store.hostnames.holder(t.hostname)).toEqual(Option.none())
      })
    )

    test(
      "VPCs and pods marked deleting are listed for the reconciler until removed or taken back",
      Effect.gen(function*() {
        const store = yield* Store
        const [a] = yield* twoTenants
        const { pod, vpc } = yield* podOf(a.id)
        const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((r) => r.id)
        const listed = Effect.all([store.vpcs.listDeleting, store.pods.listDeleting])
        const before = yield* listed
        expect(ids(before[0])).not.toContain(vpc.id)
        expect(ids(before[1])).not.toContain(pod.id)
        const since = DateTime.unsafeMake("2026-01-02T03:04:05.678Z")
        yield* update({ part: "pods", record: { ...pod, lifecycle: "deleting", deleting_since: since } })
        yield* update({ part: "vpcs", record: { ...vpc, lifecycle: "deleting", deleting_since: since } })
        const marked = yield* listed
        expect(marked[0].find((v) => v.id === vpc.id)?.deleting_since).toEqual(since)
        expect(marked[1].find((p) => p.id === pod.id)?.deleting_since).toEqual(since)
        yield* update({ part: "vpcs", record: { ...vpc, lifecycle: "active" } })
        yield* commitWrites(a.id, Change.remove("pods", pod.id, vpc.id))
        const after = yield* listed
        expect(ids(after[0])).not.toContain(vpc.id)
        expect(ids(after[1])).not.toContain(pod.id)
      })
    )

    test(
      "one index of routed hostnames: a tenant's tunnel and a service tunnel never share one, whichever comes first or at once",
      Effect.gen(function*() {
        const store = yield* Store
        const [a, b] = yield* twoTenants
        const { pod } = yield* podOf(a.id)
        // The tenant's first: the service tunnel is refused, naming the holder.
        const tunnel = Fixtures.tunnel(pod)
        yield* insert({ part: "tunnels", record: tunnel })
        expect(yield* Effect.flip(store.serviceTunnels.insert(Fixtures.serviceTunnel({ hostname: tunnel.hostname }))))
          .toEqual(new UniqueViolation({ constraint: Constraints.routedHostname }))
        expect(yield* store.hostnames.holder(tunnel.hostname)).toEqual(Option.some({
          kind: "tunnel",
          tenant_id: a.id,
          tunnel_id: tunnel.id,
          tunnel_name: tunnel.tunnel_name
        }))
        // The service tunnel's first: the tenant's is refused.
        const service = Fixtures.serviceTunnel()
        yield* store.serviceTunnels.insert(service)
        expect(
          yield* Effect.flip(insert({ part: "tunnels", record: Fixtures.tunnel(pod, { hostname: service.hostname }) }))
        )
          .toEqual(new UniqueViolation({ constraint: Constraints.routedHostname }))
        // At once, one of each for a new hostname: exactly one takes it.
        const contested = `${Fixtures.label("contested")}.example.com` as typeof tunnel.hostname
        const { pod: bPod } = yield* podOf(b.id)
        const outcomes = yield* Effect.all([
          Effect.either(store.serviceTunnels.insert(Fixtures.serviceTunnel({ hostname: contested }))),
          Effect.either(insert({ part: "tunnels", record: Fixtures.tunnel(pod, { hostname: contested }) })),
          Effect.either(insert({ part: "tunnels", record: Fixtures.tunnel(bPod, { hostname: contested }) }))
        ], { concurrency: "unbounded" })
        expect(outcomes.filter((o) => o._tag === "Right")).toHaveLength(1)
        // A tenant's deletion gives its hostnames back.
        yield* store.tenants.delete(a.id)
        expect(yield* store.hostnames.holder(tunnel.hostname)).toEqual(Option.none())
        yield* store.serviceTunnels.insert(Fixtures.serviceTunnel({ hostname: tunnel.hostname }))
      })
    )

    test(
      "admins are replaced whole and found by token hash",
      Effect.gen(function*() {
        const store = yield* Store
        const a = Fixtures.admin()
        yield* store.admins.put(a)
        expect(yield* store.admins.find(a.username)).toEqual(Option.some(a))
        const rotated = { ...a, token_hash: "rotated", token_ciphertext: "rotated-cipher" }
        yield* store.admins.put(rotated)
        expect(yield* store.admins.findByTokenHash(a.token_hash)).toEqual(Option.none())
        expect(yield* store.admins.findByTokenHash("rotated")).toEqual(Option.some(rotated))
      })
    )

    test(
      "a failed transaction leaves nothing behind; a successful one keeps everything",
      Effect.gen(function*() {
        const store = yield* Store
        const kept = Fixtures.tenant()
        const lost = Fixtures.tenant()
        yield* store.transaction(store.tenants.insert(kept))
        const failure = yield* Effect.flip(store.transaction(Effect.gen(function*() {
          yield* store.tenants.insert(lost)
          yield* insert({ part: "domains", record: Fixtures.domain(lost.id) })
          return yield* Effect.fail("boom" as const)
        })))
        expect(failure).toBe("boom")
        expect(yield* store.tenants.find(lost.id)).toEqual(Option.none())
        expect(yield* store.tenants.find(kept.id)).toEqual(Option.some(kept))
        // A unique violation midway also rolls back the earlier writes of the transaction.
        const clash = yield* Effect.flip(store.transaction(Effect.zipRight(
          store.tenants.insert(lost),
          store.tenants.insert(Fixtures.tenant({ name: kept.name }))
        )))
        expect(clash).toMatchObject({ _tag: "UniqueViolation" })
        expect(yield* store.tenants.find(lost.id)).toEqual(Option.none())
      })
    )

    test(
      "nested transactions join the outer one",
      Effect.gen(function*() {
        const store = yield* Store
        const inner = Fixtures.tenant()
        yield* Effect.flip(store.transaction(Effect.gen(function*() {
          yield* store.transaction(store.tenants.insert(inner))
          return yield* Effect.fail("outer fails" as const)
        })))
        expect(yield* store.tenants.find(inner.id)).toEqual(Option.none())
      })
    )

    live(
      "exclusive work runs for one holder at a time; the others skip it",
      Effect.gen(function*() {
        const store = yield* Store
        const work = store.exclusive("contract.exclusive", Effect.as(Effect.sleep("100 millis"), "done"))
        const results = yield* Effect.all([work, work, work], { concurrency: "unbounded" })
        expect(results.filter(Option.isSome)).toHaveLength(1)
        // Released afterwards, even when the work fails.
        expect(yield* Effect.flip(store.exclusive("contract.exclusive", Effect.fail("boom" as const)))).toBe("boom")
        expect(yield* store.exclusive("contract.exclusive", Effect.succeed(1))).toEqual(Option.some(1))
      })
    )

    live(
      "a VPC lock holds the VPC's writers apart until their transaction ends",
      Effect.gen(function*() {
        const store = yield* Store
        const tenant = Fixtures.tenant()
        yield* store.tenants.insert(tenant)
        const vpc = Fixtures.vpc(tenant.id)
        yield* insert({ part: "vpcs", record: vpc })
        // Each writer counts, waits, then inserts below a limit of 5: only a lock keeps the count true.
        const writer = store.transaction(Effect.gen(function*() {
          yield* store.vpcs.lock(vpc.id)
          const rules = (yield* rowsOf(tenant.id)).rows.rules
          yield* Effect.sleep("20 millis")
          if (rules.length < 5) yield* insert({ part: "rules", record: Fixtures.rule(vpc, rules.length + 1) })
        }))
        yield* Effect.all(Array.from({ length: 12 }, () => writer), { concurrency: "unbounded" })
        expect((yield* rowsOf(tenant.id)).rows.rules).toHaveLength(5)
      })
    )

    const keyRecord = (scope: string, key: string, at: number, resource_id = "r1"): IdempotencyKeyRecord => ({
      scope,
      key,
      fingerprint: `fp-${resource_id}`,
      resource_id,
      created_at: DateTime.unsafeMake(at)
    })

    test(
      "an idempotency key is claimed once while live, replaced once expired, and purged by age",
      Effect.gen(function*() {
        const store = yield* Store
        const keys = store.idempotencyKeys
        const [a, b] = yield* twoTenants
        const since = DateTime.unsafeMake(1_000_000)
        expect(yield* keys.claim(keyRecord(a.id, "k", 1_000_000), since)).toBe(true)
        // Live: held, and left as it was.
        expect(yield* keys.claim(keyRecord(a.id, "k", 1_000_500, "r2"), since)).toBe(false)
        expect(yield* keys.find(a.id, "k")).toEqual(Option.some(keyRecord(a.id, "k", 1_000_000)))
        // Scopes never meet.
        expect(yield* keys.find(b.id, "k")).toEqual(Option.none())
        expect(yield* keys.claim(keyRecord(b.id, "k", 1_000_000, "r3"), since)).toBe(true)
        // Expired: replaced.
        const later = DateTime.unsafeMake(2_000_000)
        expect(yield* keys.claim(keyRecord(a.id, "k", 2_000_000, "r4"), later)).toBe(true)
        expect(yield* keys.find(a.id, "k")).toEqual(Option.some(keyRecord(a.id, "k", 2_000_000, "r4")))
        expect(yield* keys.purge(later)).toBe(1)
        expect(yield* keys.find(b.id, "k")).toEqual(Option.none())
        expect(yield* keys.find(a.id, "k")).not.toEqual(Option.none())
      })
    )

    test(
      "events: a commit's are given the next revisions in order, read by tenant or all, compacted behind a horizon",
      Effect.gen(function*() {
        const store = yield* Store
        const [a, b] = yield* twoTenants
        const start = (yield* store.events.after(Number.MAX_SAFE_INTEGER, null, 0)).latest
        const event = (tenant: string, id: string) =>
          ({ tenant_id: tenant, type: "ADDED", kind: "vpc", id, object: { id, name: id } }) as const
        yield* commitEvents(a.id, event(a.id, "a1"), event(a.id, "a2"))
        // Several commits at once: distinct revisions, increasing in the order they commit.
        yield* Effect.forEach(
          ["b1", "b2", "b3"],
          (id) => commitEvents(b.id, event(b.id, id)),
          { concurrency: "unbounded" }
        )
        const all = yield* store.events.after(start, null, 100)
        expect(all.events.map((e) => e.id).slice(0, 2)).toEqual(["a1", "a2"])
        expect(new Set(all.events.map((e) => e.id))).toEqual(new Set(["a1", "a2", "b1", "b2", "b3"]))
        const revisions = all.events.map((e) => e.revision)
        expect(revisions).toEqual([...revisions].sort((x, y) => x - y))
        expect(new Set(revisions).size).toBe(5)
        expect(all.latest).toBe(revisions[4])
        expect(all.events[0]).toEqual({ ...event(a.id, "a1"), revision: revisions[0] })
        const onlyB = yield* store.events.after(start, b.id, 100)
        expect(onlyB.events.map((e) => e.tenant_id)).toEqual([b.id, b.id, b.id])
        expect(onlyB.latest).toBe(all.latest)
        // A page, then the rest after it.
        const first = yield* store.events.after(start, null, 2)
        expect(first.events.map((e) => e.id)).toEqual(["a1", "a2"])
        expect((yield* store.events.after(first.events[1]!.revision, null, 100)).events).toHaveLength(3)
        // Compacted: forgotten, and the horizon says from where resuming is impossible.
        yield* store.events.compact(Number.MAX_SAFE_INTEGER)
        const after = yield* store.events.after(start, null, 100)
        expect(after.events).toEqual([])
        expect(after.horizon).toBe(all.latest)
        expect(after.latest).toBe(all.latest)
        // Revisions go on past the horizon, not from below it.
        yield* commitEvents(a.id, event(a.id, "a3"))
        const next = yield* store.events.after(all.latest, null, 100)
        expect(next.events.map((e) => [e.id, e.revision])).toEqual([["a3", next.latest]])
        expect(next.latest).toBeGreaterThan(all.latest)
      })
    )

    /**
     * A transaction of its own that runs `first`, stays open, and on `finish` runs `then` and
     * commits; begun once this answers. For stores of more than one session only.
     */
    const openTransaction = <E1, E2>(first: Effect.Effect<void, E1, Store>, then: Effect.Effect<void, E2, Store>) =>
      Effect.gen(function*() {
        const store = yield* Store
        const begun = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const open = yield* Effect.fork(store.transaction(Effect.gen(function*() {
          yield* first
          yield* Deferred.succeed(begun, undefined)
          yield* Deferred.await(release)
          yield* then
        })))
        yield* Deferred.await(begun)
        return { finish: Effect.zipRight(Deferred.succeed(release, undefined), Fiber.join(open)) }
      })
    const vpcEvent = (tenant: string, id: string) =>
      ({ tenant_id: tenant, type: "ADDED", kind: "vpc", id, object: { id } }) as const
    const latestRevision = Effect.flatMap(Store, (store) => store.events.after(Number.MAX_SAFE_INTEGER, null, 0))

    live(
      "events: a commit left open holds back no other tenant's; what it appended comes after, none skipped",
      Effect.gen(function*() {
        const store = yield* Store
        // One session: a transaction holds every other statement, by design.
        if (store.soleWriter) return
        const [a, b] = yield* twoTenants
        const start = (yield* latestRevision).latest
        const open = yield* openTransaction(store.events.append([vpcEvent(a.id, "slow")]), Effect.void)
        // Bounded only so that a commit that waits on the open one fails here rather than hangs.
        yield* commitEvents(b.id, vpcEvent(b.id, "fast")).pipe(
          Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => "waited on another tenant's commit" })
        )
        const before = yield* store.events.after(start, null, 100)
        expect(before.events.map((e) => e.id)).toEqual(["fast"])
        yield* open.finish
        // A reader that had everything up to the other's revision resumes and gets it.
        const after = yield* store.events.after(before.latest, null, 100)
        expect(after.events.map((e) => e.id)).toEqual(["slow"])
        expect(after.events[0]!.revision).toBeGreaterThan(before.latest)
      })
    )

    live(
      "events: a tenant's commits are numbered in the order they took effect, not the order they began",
      Effect.gen(function*() {
        const store = yield* Store
        // One session: no transaction begins while another is open.
        if (store.soleWriter) return
        const [a, b] = yield* twoTenants
        const start = (yield* latestRevision).latest
        // Begins first (its first event, another tenant's), commits tenant a's change last.
        const early = yield* openTransaction(
          commitEvents(b.id, vpcEvent(b.id, "early, b")),
          commitEvents(a.id, vpcEvent(a.id, "early, a"))
        )
        yield* commitEvents(a.id, vpcEvent(a.id, "late, a"))
        yield* early.finish
        // Both numbered in one batch, by this read.
        const ofA = (yield* store.events.after(start, a.id, 100)).events.map((e) => e.id)
        expect(ofA).toEqual(["late, a", "early, a"])
      })
    )

    test(
      "login attempts: counted concurrently up to the free ones, then made to wait, taken back by a success",
      Effect.gen(function*() {
        const attempts = (yield* Store).loginAttempts
        const policy = { free: 5, windowMillis: 60_000, baseMillis: 1_000, capMillis: 8_000 }
        const keys = [{ key: "pair:guessed|192.0.2.1", policy }, {
          key: "addr:192.0.2.1",
          policy: { ...policy, free: 50 }
        }]
        // Twenty attempts at once: five are counted, whatever their interleaving.
        const begun = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`),
          (attempt) => attempts.begin(attempt, keys, 1_000_000),
          { concurrency: "unbounded" }
        )
        expect(begun.filter((b) => b._tag === "Counted")).toHaveLength(5)
        // The fifth is the one whose failure starts the wait.
        expect(begun.filter((b) => b._tag === "Counted" && b.throttling.includes("pair:guessed|192.0.2.1")))
          .toHaveLength(1)
        const throttled = begun.find((b) => b._tag === "Throttled")
        expect(throttled).toEqual({ _tag: "Throttled", wait: 1_000, key: "pair:guessed|192.0.2.1" })
        // After the wait one more may try; its failure doubles the wait.
        const later = 1_000_000 + 1_000
        const next = yield* attempts.begin("00000000-0000-4000-8000-000000000100", keys, later)
        expect(next).toEqual({ _tag: "Counted", throttling: ["pair:guessed|192.0.2.1"] })
        expect(yield* attempts.begin("00000000-0000-4000-8000-000000000101", keys, later + 1_999)).toEqual({
          _tag: "Throttled",
          wait: 1,
          key: "pair:guessed|192.0.2.1"
        })
        // A success takes back its attempt and clears the keys named (not the address's count).
        yield* attempts.succeeded("00000000-0000-4000-8000-000000000100", ["pair:guessed|192.0.2.1"])
        for (let i = 0; i < 4; i++) {
          const again = yield* attempts.begin(`00000000-0000-4000-8000-00000000020${i}`, keys, later + 1)
          expect(again._tag).toBe("Counted")
        }
        // One row per attempt and key: the address kept its five, the four new ones have two each.
        expect(yield* attempts.purge(later + 2)).toBe(5 + 8)
      })
    )

    test(
      "a change of thousands of rows commits whole: a topology's 2,000 pods, with their events",
      Effect.gen(function*() {
        const store = yield* Store
        const [a] = yield* twoTenants
        const vpc = Fixtures.vpc(a.id)
        const subnets = Array.from({ length: 4 }, () => Fixtures.subnet(vpc))
        const pods = Array.from({ length: 2000 }, (_, i) => Fixtures.podRecord(subnets[i % subnets.length]!))
        const writes = [
          Change.insert({ part: "vpcs", record: vpc }),
          ...subnets.map((record) => Change.insert({ part: "subnets", record })),
          ...pods.map((record) => Change.insert({ part: "pods", record }))
        ]
        const events = pods.map((pod): NewEvent => ({
          tenant_id: a.id,
          type: "ADDED",
          kind: "pod",
          id: pod.id,
          object: { id: pod.id, name: pod.name }
        }))
        yield* store.commit({ tenant: a.id, decidedOn: [], writes, events, audit: [], claims: [] })
        const snapshot = Option.getOrThrow(yield* store.snapshots.tenant(a.id))
        expect(snapshot.rows.pods).toHaveLength(2000)
        expect(snapshot.rows.subnets).toHaveLength(4)
        expect((yield* store.events.after(0, a.id, 5000)).events).toHaveLength(2000)
      })
    )

    test(
      "sessions: found live with their principal's token, ended one by one or all of one principal, purged expired",
      Effect.gen(function*() {
        const store = yield* Store
        const [a, b] = yield* twoTenants
        yield* store.admins.put({
          username: "root",
          password_hash: "h",
          token_hash: "admin-token",
          token_ciphertext: "c"
        })
        const at = (ms: number) => DateTime.unsafeMake(ms)
        const session = (hash: string, owner: { tenant: TenantId } | { admin: string }, expires: number) =>
          store.sessions.insert({
            token_hash: hash,
            tenant_id: "tenant" in owner ? owner.tenant : null,
            admin_username: "admin" in owner ? owner.admin : null,
            created_at: at(1_000),
            expires_at: at(expires)
          })
        yield* session("s-a1", { tenant: a.id }, 10_000)
        yield* session("s-a2", { tenant: a.id }, 10_000)
        yield* session("s-b", { tenant: b.id }, 10_000)
        yield* session("s-admin", { admin: "root" }, 10_000)
        yield* session("s-old", { tenant: b.id }, 2_000)
        const found = yield* store.sessions.find("s-a1", 5_000)
        expect(Option.map(found, (f) => [f.session.tenant_id, f.principalTokenHash])).toEqual(
          Option.some([a.id, a.token_hash])
        )
        expect(Option.map(yield* store.sessions.find("s-admin", 5_000), (f) => f.principalTokenHash)).toEqual(
          Option.some("admin-token")
        )
        // Past its expiry a session is not found, though it is kept until purged.
        expect(yield* store.sessions.find("s-old", 5_000)).toEqual(Option.none())
        expect(yield* store.sessions.find("unknown", 5_000)).toEqual(Option.none())
        expect(yield* store.sessions.delete("s-a1")).toBe(true)
        expect(yield* store.sessions.delete("s-a1")).toBe(false)
        expect(yield* store.sessions.find("s-a1", 5_000)).toEqual(Option.none())
        expect(yield* store.sessions.deleteOf({ admin_username: "root" })).toBe(1)
        expect(yield* store.sessions.purge(5_000)).toBe(1)
        // A tenant's delete takes its sessions; another tenant's stay.
        expect(Option.isSome(yield* store.tenants.delete(a.id))).toBe(true)
        expect(yield* store.sessions.find("s-a2", 5_000)).toEqual(Option.none())
        expect(Option.isSome(yield* store.sessions.find("s-b", 5_000))).toBe(true)
        expect(yield* store.sessions.deleteOf({ tenant_id: b.id })).toBe(1)
      })
    )

    test(
      "an idempotency key claimed in a transaction that fails is not kept; a tenant's keys go with it",
      Effect.gen(function*() {
        const store = yield* Store
        const [a] = yield* twoTenants
        const since = DateTime.unsafeMake(0)
        yield* Effect.flip(store.transaction(
          Effect.zipRight(store.idempotencyKeys.claim(keyRecord(a.id, "lost", 1), since), Effect.fail("rolled back"))
        ))
        expect(yield* store.idempotencyKeys.find(a.id, "lost")).toEqual(Option.none())
        yield* store.idempotencyKeys.claim(keyRecord(a.id, "kept", 1), since)
        yield* store.idempotencyKeys.claim(keyRecord("admin", "kept", 1), since)
        expect(Option.isSome(yield* store.tenants.delete(a.id))).toBe(true)
        expect(yield* store.idempotencyKeys.find(a.id, "kept")).toEqual(Option.none())
        expect(yield* store.idempotencyKeys.find("admin", "kept")).not.toEqual(Option.none())
      })
    )

    live(
      "of concurrent claims of one key, one wins",
      Effect.gen(function*() {
        const store = yield* Store
        const [a] = yield* twoTenants
        const claim = (n: number) =>
          store.transaction(Effect.gen(function*() {
            const won = yield* store.idempotencyKeys.claim(keyRecord(a.id, "race", 1, `r${n}`), DateTime.unsafeMake(0))
            yield* Effect.sleep("20 millis")
            return won
          }))
        const results = yield* Effect.all(Array.from({ length: 8 }, (_, n) => claim(n)), { concurrency: "unbounded" })
        expect(results.filter((won) => won)).toHaveLength(1)
      })
    )

    test(
      "ping answers",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.ping
        expect(store.backend.length).toBeGreaterThan(0)
      })
    )
  })
