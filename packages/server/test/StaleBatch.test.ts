/**
 * Batches seen from the use cases, with their commits held at chosen moments (`CommitGate`), so
 * the interleaving is the same on every run.
 *
 * A batch is committed only on the state it was decided on (`changes/Pipeline.ts`, "Writes in
 * batches"): a replica's write committed while the batch's own commit is on its way outdates it,
 * and each of its requests is then decided again on what that write left. Two processes on one
 * PostgreSQL database; the first's commits go through `CommitGate`, held at chosen moments so
 * the interleaving is the same on every run. The rules are a VPC's, read against its 200-rule
 * limit: a write that moves the VPC's version and not the tenant's scope, so nothing but the
 * VPCs the batch was decided on can find it outdated.
 */
import { describe, expect, it } from "@effect/vitest"
import { Audit, Audited, SecurityRule, SecurityRules, Vpc, Vpcs } from "@tenet/core"
import type { Principal } from "@tenet/core"
import { Deferred, Effect, Layer, Schema } from "effect"
import * as CommitGate from "./CommitGate.js"
import { httpsIn } from "./Harness.js"
import type { Process, Services } from "./Processes.js"
import { newTenant, onFresh, onFreshDatabases } from "./Processes.js"

const url = process.env.TENET_TEST_DATABASE_URL

/** A rule's fields by name, without its VPC (a declaration's items name none). */
const ruleOf = (name: string) => {
  const { vpc_id: _, ...fields } = httpsIn("")
  return { ...fields, name }
}

/** A held commit let go, whatever the test found: a failed check must not leave a process waiting. */
const released = (gate: { readonly release: Deferred.Deferred<void> }) =>
  Effect.zipRight(CommitGate.disarm, Deferred.succeed(gate.release, undefined))

const staleBatch = (processes: ReadonlyArray<Process>) =>
  Effect.gen(function*() {
    const [first, second] = processes as [Process, Process]
    const tenant = yield* newTenant(first)
    const as = <A>(on: Process, body: (caller: Principal.TenantPrincipal) => Effect.Effect<A, unknown, Services>) =>
      tenant.asTenant(on, body)
    const vpc = yield* as(first, (caller) =>
      Effect.flatMap(Vpcs.Vpcs, (v) =>
        v.create(
          caller,
          Schema.decodeUnknownSync(Vpc.VpcCreate)({ ...tenant.creds, name: "v", enable_internet: false })
        ))).pipe(Effect.flatten)
    // Three short of the limit.
    const declared = Array.from(
      { length: SecurityRule.MAX_RULES_PER_VPC - 3 },
      (_, i) => Schema.decodeUnknownSync(SecurityRule.RuleDeclaration)(ruleOf(`seed-${i}`))
    )
    yield* as(first, (caller) =>
      Effect.flatMap(SecurityRules.SecurityRules, (r) => r.replace(caller, vpc.id, declared, {})))
      .pipe(Effect.flatten)
    const rule = (on: Process, name: string) =>
      as(on, (caller) =>
        Effect.flatMap(SecurityRules.SecurityRules, (r) =>
          r.create(
            caller,
            Schema.decodeUnknownSync(SecurityRule.SecurityRuleCreate)({ ...ruleOf(name), vpc_id: vpc.id })
          )))

    // The opener's commit is held; two creates queue behind it on the same process.
    const opening = yield* CommitGate.arm(tenant.id)
    yield* Effect.addFinalizer(() =>
      released(opening)
    )
    const opener = yield* Effect.fork(rule(first, "opener"))
    yield* Deferred.await(opening.entered)
    const batch = yield* Effect.fork(
      Effect.all([rule(first, "batched-1"), rule(first, "batched-2")], { concurrency: "unbounded" })
    )
    yield* Effect.sleep("500 millis")
    // Armed again before the opener goes: the batch's own commit is held next.
    const batching = yield* CommitGate.arm(tenant.id)
    yield* Effect.addFinalizer(() => released(batching))
    yield* Deferred.succeed(opening.release, undefined)
    const held = yield* Deferred.await(batching.entered)
    expect(
      held.writes.filter((w) => w._tag === "Insert" && w.part === "rules"),
      "the held commit is the batch"
    )
      .toHaveLength(2)

    // Meanwhile the other replica commits a rule of the same VPC: one place is left.
    const replica = yield* rule(second, "replica")
    expect(replica._tag, String(replica)).toBe("Right")

    yield* CommitGate.disarm
    yield* Deferred.succeed(batching.release, undefined)
    expect((yield* opener.await.pipe(Effect.flatten))._tag).toBe("Right")
    // Decided again on the replica's rule: one of the two is made, the other refused at the limit.
    const outcomes = yield* batch.await.pipe(Effect.flatten)
    expect(outcomes.filter((o) => o._tag === "Right")).toHaveLength(1)
    const refused = outcomes.filter((o) => o._tag === "Left")
    expect(refused).toHaveLength(1)
    expect(String(refused[0]!.left)).toMatch(/already has 200 rules/)

    const rules = yield* as(second, (caller) =>
      Effect.flatMap(SecurityRules.SecurityRules, (r) => r.list(caller, vpc.id)))
      .pipe(Effect.flatten)
    expect(rules.list.rules.length).toBe(SecurityRule.MAX_RULES_PER_VPC)
  }).pipe(Effect.scoped)

/**
 * A batch's requests each keep their own audit entry: a write that has none (a convergence's
 * record, say) queued after an audited create does not record the create's a second time.
 */
const ownEntries = (processes: ReadonlyArray<Process>) =>
  Effect.gen(function*() {
    const [only] = processes as [Process]
    const tenant = yield* newTenant(only)
    const vpc = yield* tenant.asTenant(only, (caller) =>
      Effect.flatMap(Vpcs.Vpcs, (v) =>
        v.create(
          caller,
          Schema.decodeUnknownSync(Vpc.VpcCreate)({ ...tenant.creds, name: "v", enable_internet: false })
        ))).pipe(Effect.flatten)
    /** A rule create, as an audited request `id` makes it (with its entry), or as a background write (none). */
    const rule = (name: string, id?: string) =>
      tenant.asTenant(only, (caller) => {
        const create = Effect.flatMap(SecurityRules.SecurityRules, (r) =>
          r.create(
            caller,
            Schema.decodeUnknownSync(SecurityRule.SecurityRuleCreate)({ ...ruleOf(name), vpc_id: vpc.id })
          ))
        if (id === undefined) return create
        const entry = Audit.open("security_rules.create", Audited.made("security_rule"), id, () => ({}))!
        return Effect.zipRight(Audit.noteActor(caller), create).pipe(Effect.locally(Audit.CurrentEntry, entry))
      })

    const opening = yield* CommitGate.arm(tenant.id)
    yield* Effect.addFinalizer(() => released(opening))
    const opener = yield* Effect.fork(rule("opener", "opener-request"))
    yield* Deferred.await(opening.entered)
    const audited = yield* Effect.fork(rule("audited", "audited-request"))
    yield* Effect.sleep("200 millis")
    const background = yield* Effect.fork(rule("background"))
    yield* Effect.sleep("300 millis")
    const batching = yield* CommitGate.arm(tenant.id)
    yield* Effect.addFinalizer(() => released(batching))
    yield* Deferred.succeed(opening.release, undefined)
    const held = yield* Deferred.await(batching.entered)
    expect(held.writes.filter((w) => w._tag === "Insert" && w.part === "rules"), "the held commit is the batch")
      .toHaveLength(2)
    // One entry, the audited request's; the background write leaves none.
    expect(held.audit.map((e) => e.request_id)).toEqual(["audited-request"])
    yield* released(batching)
    for (const fiber of [opener, audited, background]) {
      expect((yield* fiber.await.pipe(Effect.flatten))._tag).toBe("Right")
    }
  }).pipe(Effect.scoped)

describe("batches, their commits held", () => {
  it.live(
    "memory: a background write batched after an audited create leaves no entry of its own, nor the create's again",
    () => onFresh([0], 1, () => Layer.empty, ownEntries, CommitGate.decorator),
    60_000
  )

  it.live.skipIf(url === undefined)(
    "PostgreSQL, two processes: a replica's rule lands while the batch's commit is held; the batch is decided again at the VPC's limit",
    () => onFreshDatabases(url!, "stale_batch", [0], staleBatch, CommitGate.decorator),
    120_000
  )
})
