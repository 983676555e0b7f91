/**
 * A state's lists are in the store's order however it was reached: a state advanced commit by
 * commit (its sorted lists carried over from the state before, where they were read; several
 * writes in a commit, a VPC's removal taking its rules along) lists exactly what a state loaded
 * afresh from the same rows lists.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Change, Ids, SecurityRule, Vpc } from "@tenet/core"
import { TenantState } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { DateTime, FastCheck as fc } from "effect"

const tenant = Fixtures.tenant()
const vpcs = [0, 1, 2].map(() => Fixtures.vpc(tenant.id, { created_at: DateTime.unsafeMake(1_000) }))
const ruleId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}` as Ids.SecurityRuleId

const shape = fc.record({
  vpc: fc.integer({ min: 0, max: 2 }),
  // Few values, so that equal ranks (broken by insertion order) are common.
  seq: fc.integer({ min: 1, max: 6 }),
  remote: fc.option(fc.integer({ min: 0, max: 2 }), { nil: null })
})

const write = fc.oneof(
  fc.record({ insert: shape }),
  fc.record({ update: fc.tuple(fc.nat(), shape) }),
  fc.record({ remove: fc.nat() }),
  fc.record({ created: fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 3 })) }),
  // A VPC removed (its rules with it) or put back.
  fc.record({ vpc: fc.integer({ min: 0, max: 2 }) })
)

/** Writes made in one commit, and whether the state's lists are read after it (a carry needs a list read before). */
const step = fc.record({ writes: fc.array(write, { minLength: 1, maxLength: 3 }), read: fc.boolean() })

type Shape = typeof shape extends fc.Arbitrary<infer S> ? S : never

const ruleOf = (id: Ids.SecurityRuleId, s: Shape): SecurityRule.SecurityRuleRecord =>
  Fixtures.rule(vpcs[s.vpc]!, s.seq, {
    id,
    ...(s.remote === null
      ? {}
      : { remote_type: "vpc", remote_cidr: null, remote_vpc_id: vpcs[s.remote]!.id })
  })

/** Every list a state answers, in its order. */
const listsOf = (state: TenantState.TenantState) => ({
  vpcs: state.vpcs.map((v) => v.id),
  rules: state.list("rules").map((r) => r.id),
  ...Object.fromEntries(vpcs.flatMap((v) => [
    [`rulesOf ${v.id}`, state.rulesOf(v.id).map((r) => r.id)],
    [`rulesNaming ${v.id}`, state.rulesNaming(v.id).map((r) => r.id)]
  ]))
})

describe("TenantState", () => {
  it.prop(
    "a state advanced commit by commit lists what a state loaded from its rows lists",
    [fc.array(step, { maxLength: 40 })],
    ([steps]) => {
      // The rows, in the order they were first inserted (an update keeps its place, a removal loses it).
      const vpcRows = new Map<string, Vpc.VpcRecord>(vpcs.map((v) => [v.id, v]))
      const ruleRows = new Map<string, SecurityRule.SecurityRuleRecord>()
      const snapshotOf = (revision: string) =>
        Fixtures.snapshot({
          revision,
          vpcs: [...vpcRows.values()],
          rules: [...ruleRows.values()],
          vpcVersions: Object.fromEntries([...vpcRows.keys()].map((id) => [id, 0]))
        })
      let state = TenantState.TenantState.fromSnapshot(tenant.id, snapshotOf("0"))
      let made = 0
      /** The write the step's `w` makes of the rows now, made on the model too. */
      const writeOf = (w: typeof write extends fc.Arbitrary<infer W> ? W : never): Change.Write | null => {
        const existing = [...ruleRows.keys()]
        if ("insert" in w) {
          const rule = ruleOf(ruleId(++made), w.insert)
          ruleRows.set(rule.id, rule)
          return { _tag: "Insert", part: "rules", record: rule }
        }
        if ("update" in w) {
          if (existing.length === 0) return null
          const rule = ruleOf(existing[w.update[0] % existing.length] as Ids.SecurityRuleId, w.update[1])
          ruleRows.set(rule.id, rule)
          return { _tag: "Update", part: "rules", record: rule }
        }
        if ("remove" in w) {
          if (existing.length === 0) return null
          const key = existing[w.remove % existing.length]!
          ruleRows.delete(key)
          return { _tag: "Remove", part: "rules", key }
        }
        if ("created" in w) {
          const [which, at] = w.created
          const found = vpcRows.get(vpcs[which]!.id)
          if (found === undefined) return null
          const vpc = { ...found, created_at: DateTime.unsafeMake(1_000 + at) }
          vpcRows.set(vpc.id, vpc)
          return { _tag: "Update", part: "vpcs", record: vpc }
        }
        const vpc = vpcs[w.vpc]!
        if (!vpcRows.has(vpc.id)) {
          vpcRows.set(vpc.id, vpc)
          return { _tag: "Insert", part: "vpcs", record: vpc }
        }
        vpcRows.delete(vpc.id)
        for (const [id, rule] of ruleRows) if (rule.vpc_id === vpc.id) ruleRows.delete(id)
        return { _tag: "Remove", part: "vpcs", key: vpc.id }
      }
      steps.forEach(({ read, writes }, i) => {
        const revision = String(i + 1)
        state = state.apply(writes.flatMap((w) => writeOf(w) ?? []), revision)
        if (read || i === steps.length - 1) {
          expect(listsOf(state)).toEqual(listsOf(TenantState.TenantState.fromSnapshot(tenant.id, snapshotOf(revision))))
        }
      })
    },
    { fastCheck: { numRuns: 300 } }
  )
})
