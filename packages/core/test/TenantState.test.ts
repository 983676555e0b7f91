/**
 * A state's lists are in the store's order however it was reached: a state advanced write by
 * write (its sorted lists carried over from the state before, where they were read) lists
 * exactly what a state loaded afresh from the same rows lists.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Ids, SecurityRule, Vpc } from "@tenet/core"
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

const operation = fc.oneof(
  fc.record({ insert: shape }),
  fc.record({ update: fc.tuple(fc.nat(), shape) }),
  fc.record({ remove: fc.nat() }),
  fc.record({ created: fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 3 })) }),
  fc.record({ read: fc.constant(true) })
)

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
    "a state advanced write by write lists what a state loaded from its rows lists",
    [fc.array(operation, { maxLength: 50 })],
    ([operations]) => {
      // The rows, in the order they were first inserted (an update keeps its place, a removal loses it).
      const vpcRows = new Map<string, Vpc.VpcRecord>(vpcs.map((v) => [v.id, v]))
      const ruleRows = new Map<string, SecurityRule.SecurityRuleRecord>()
      const snapshotOf = (revision: string) => ({
        revision,
        vpcs: [...vpcRows.values()],
        subnets: [],
        securityRules: [...ruleRows.values()],
        pods: [],
        tunnels: [],
        registryCredentials: [],
        domains: [],
        guardrails: [],
        vpcVersions: Object.fromEntries(vpcs.map((v) => [v.id, 0])),
        scopeVersion: 0
      })
      let state = TenantState.TenantState.fromSnapshot(tenant.id, snapshotOf("0"))
      let made = 0
      operations.forEach((op, i) => {
        const revision = String(i + 1)
        const existing = [...ruleRows.keys()]
        if ("read" in op) {
          listsOf(state)
          return
        }
        if ("insert" in op) {
          const rule = ruleOf(ruleId(++made), op.insert)
          ruleRows.set(rule.id, rule)
          state = state.apply([{ _tag: "Insert", part: "rules", record: rule }], revision)
        } else if ("update" in op) {
          if (existing.length === 0) return
          const rule = ruleOf(existing[op.update[0] % existing.length] as Ids.SecurityRuleId, op.update[1])
          ruleRows.set(rule.id, rule)
          state = state.apply([{ _tag: "Update", part: "rules", record: rule }], revision)
        } else if ("remove" in op) {
          if (existing.length === 0) return
          const key = existing[op.remove % existing.length]!
          ruleRows.delete(key)
          state = state.apply([{ _tag: "Remove", part: "rules", key }], revision)
        } else {
          const [which, at] = op.created
          const vpc = { ...vpcRows.get(vpcs[which]!.id)!, created_at: DateTime.unsafeMake(1_000 + at) }
          vpcRows.set(vpc.id, vpc)
          state = state.apply([{ _tag: "Update", part: "vpcs", record: vpc }], revision)
        }
        expect(listsOf(state)).toEqual(listsOf(TenantState.TenantState.fromSnapshot(tenant.id, snapshotOf(revision))))
      })
    },
    { fastCheck: { numRuns: 300 } }
  )
})
