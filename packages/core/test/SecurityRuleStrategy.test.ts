import { describe, expect, it } from "@effect/vitest"
import type { SecurityRule } from "@tenet/core"
import { SecurityRuleStrategy, TenantState } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { Either, FastCheck as fc } from "effect"

const tenant = Fixtures.tenant()
const vpc = Fixtures.vpc(tenant.id)

/** The tenant's state with `count` rules in the VPC, their `seq`s ascending but not dense. */
const stateWith = (count: number) => {
  const rules = Array.from({ length: count }, (_, i) => Fixtures.rule(vpc, 2 * i + 1))
  return TenantState.TenantState.fromSnapshot(
    tenant.id,
    Fixtures.snapshot({
      revision: "1",
      vpcs: [vpc],
      rules,
      vpcVersions: { [vpc.id]: 0 }
    })
  )
}

const { seq: _, ...newRule } = Fixtures.rule(vpc, 0)

describe("security-rule strategy", () => {
  it.prop("a create goes last in its VPC's order, decided on the VPC, and is refused at 200 rules", [
    fc.integer({ min: 0, max: 205 })
  ], ([count]) => {
    const decided = SecurityRuleStrategy.create(newRule, null)(stateWith(count))
    if (count >= 200) {
      expect(Either.isLeft(decided) && decided.left._tag).toBe("Conflict")
      return
    }
    const decision = Either.getOrThrow(decided)
    expect(decision.decidedOn).toEqual([vpc.id])
    expect(decision.writes).toHaveLength(1)
    expect(decision.result.record.seq).toBe(count === 0 ? 1 : 2 * count)
    expect(decision.result.rules.at(-1)).toBe(decision.result.record)
    expect(decision.made).toBe(newRule.id)
  })

  it.prop("a reorder of every rule once numbers them 10, 20, ... in the order asked; anything else is refused", [
    fc.integer({ min: 1, max: 12 }).chain((count) =>
      fc.tuple(fc.constant(count), fc.shuffledSubarray(Array.from({ length: count }, (_, i) => i)), fc.boolean())
    )
  ], ([[count, order, duplicate]]) => {
    const state = stateWith(count)
    const rules = state.rulesOf(vpc.id)
    const asked = order.map((i) => rules[i]!.id)
    if (duplicate && asked.length > 0) asked.push(asked[0]!)
    const decided = SecurityRuleStrategy.reorder(vpc.id, asked, rules[0]!.updated_at)(state)
    if (order.length !== count || duplicate) {
      expect(Either.isLeft(decided) && decided.left._tag).toBe("RuleValidation")
      return
    }
    const next = Either.getOrThrow(decided).result.next as ReadonlyArray<SecurityRule.SecurityRuleRecord>
    const priority = new Map(next.map((r) => [r.id, r.priority]))
    expect(asked.map((id) => priority.get(id))).toEqual(asked.map((_, i) => 10 * (i + 1)))
  })

  it("what a rule names is read from the state it is decided on: a subnet gone since is refused", () => {
    const subnet = Fixtures.subnet(vpc)
    const naming = { ...newRule, target_type: "subnet" as const, target_subnet_id: subnet.id }
    const withSubnet = stateWith(0).apply([{ _tag: "Insert", part: "subnets", record: subnet }], "2")
    expect(Either.isRight(SecurityRuleStrategy.create(naming, null)(withSubnet))).toBe(true)
    const refused = SecurityRuleStrategy.create(naming, null)(stateWith(0))
    expect(Either.isLeft(refused) && refused.left).toMatchObject({ _tag: "RuleValidation", field: "target_subnet_id" })
    const rule = Fixtures.rule(vpc, 1)
    const patched = SecurityRuleStrategy.update(
      rule.id,
      vpc.id,
      { target_type: "subnet", target_subnet_id: subnet.id },
      null,
      rule.updated_at
    )
    const withRule = stateWith(0).apply([{ _tag: "Insert", part: "rules", record: rule }], "2")
    expect(Either.isLeft(patched(withRule))).toBe(true)
    expect(Either.isRight(patched(withRule.apply([{ _tag: "Insert", part: "subnets", record: subnet }], "3")))).toBe(
      true
    )
  })

  it("a rule of another VPC or none is not found, for patches and deletes alike", () => {
    const state = stateWith(3)
    const unknown = Fixtures.rule(Fixtures.vpc(tenant.id), 1).id
    expect(Either.isLeft(SecurityRuleStrategy.remove(unknown, vpc.id)(state))).toBe(true)
    const patched = SecurityRuleStrategy.update(unknown, vpc.id, {}, null, vpc.created_at)(state)
    expect(Either.isLeft(patched) && patched.left._tag).toBe("NotFound")
  })
})
