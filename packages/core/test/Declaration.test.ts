import { describe, expect, it } from "@effect/vitest"
import type { Ids, Net, SecurityRule } from "@tenet/core"
import { Declaration } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { Either, FastCheck as fc } from "effect"

const tenant = Fixtures.tenant()
const vpc = Fixtures.vpc(tenant.id)
const references = {
  vpcs: new Set([vpc.id]),
  addressSets: new Set<Ids.AddressSetId>(),
  subnets: new Set<Ids.SubnetId>(),
  pods: new Set<Ids.PodId>()
}

/** A valid declared rule, its name from a small pool so that names meet existing rules. */
const item: fc.Arbitrary<SecurityRule.RuleDeclaration> = fc.record({
  name: fc.constantFrom("a", "b", "c", "d", "e", "f"),
  description: fc.constantFrom(null, "why"),
  direction: fc.constantFrom("ingress" as const, "egress" as const),
  action: fc.constantFrom("allow" as const, "deny" as const),
  priority: fc.integer({ min: 1, max: 2000 }),
  protocol: fc.constant("tcp" as const),
  ports: fc.constantFrom(null, "22", "80,443"),
  remote_type: fc.constant("cidr" as const),
  remote_cidr: fc.constantFrom("0.0.0.0/0", "10.0.0.0/8").map((cidr) => cidr as Net.Ipv4Network),
  remote_vpc_id: fc.constant(null),
  remote_address_set_id: fc.constant(null),
  target_type: fc.constant("vpc" as const),
  target_subnet_id: fc.constant(null),
  target_pod_ids: fc.constant(null),
  enabled: fc.boolean()
})

/** Items with names unique among themselves. */
const items = fc.uniqueArray(item, { selector: (i) => i.name, maxLength: 6 })

let counter = 0
const making: Declaration.Making = {
  newId: () => Fixtures.rule(vpc, ++counter).id,
  stamp: (fields) => ({ ...Fixtures.rule(vpc, fields.seq), ...fields }),
  touch: (record) => record
}

/** The existing rules a declaration meets: distinct names, as the first declaration left them. */
const existing = items.map((declared) => Either.getOrThrow(Declaration.plan([], declared, references, making)).next)

const fieldsOf = (r: SecurityRule.RuleDeclaration | SecurityRule.SecurityRuleRecord) => ({
  name: r.name,
  description: r.description,
  direction: r.direction,
  action: r.action,
  priority: r.priority,
  protocol: r.protocol,
  ports: r.ports,
  remote_type: r.remote_type,
  remote_cidr: r.remote_cidr,
  remote_vpc_id: r.remote_vpc_id,
  target_type: r.target_type,
  target_subnet_id: r.target_subnet_id,
  target_pod_ids: r.target_pod_ids,
  enabled: r.enabled
})
const sorted = <A extends { readonly name: string }>(xs: ReadonlyArray<A>) =>
  [...xs].sort((a, b) => a.name.localeCompare(b.name))

describe("declarations", () => {
  it.prop("the rules become exactly the declared list; declaring it again changes nothing", [existing, items], ([
    before,
    declared
  ]) => {
    const outcome = Either.getOrThrow(Declaration.plan(before, declared, references, making))
    expect(sorted(outcome.next).map(fieldsOf)).toEqual(sorted(declared).map(fieldsOf))
    // A rule of a declared name keeps its id; every other existing rule is deleted.
    const names = new Set(declared.map((d) => d.name))
    for (const rule of before) {
      if (names.has(rule.name)) expect(outcome.next.map((r) => r.id)).toContain(rule.id)
      else expect(outcome.deleted).toContain(rule)
    }
    expect(outcome.created.length + outcome.updated.length + outcome.unchanged.length).toBe(declared.length)
    const again = Either.getOrThrow(Declaration.plan(outcome.next, declared, references, making))
    expect(Declaration.changes(again)).toBe(false)
    expect(again.next).toEqual(outcome.next)
    expect(Declaration.etagOf(again.next)).toBe(Declaration.etagOf(outcome.next))
  })

  it.prop("the ETag changes with any declared field of any rule", [existing.filter((r) => r.length > 0), fc.nat()], ([
    rules,
    pick
  ]) => {
    const i = pick % rules.length
    const changed = rules.map((r, j) => j === i ? { ...r, priority: r.priority === 1 ? 2 : 1 } : r)
    expect(Declaration.etagOf(changed)).not.toBe(Declaration.etagOf(rules))
  })

  it("names that do not say which rule is meant are refused, each item named", () => {
    const [a, b] = [fc.sample(item, 1)[0]!, fc.sample(item, 1)[0]!]
    const twice = Declaration.plan([], [{ ...a, name: "x" }, { ...b, name: "x" }], references, making)
    expect(Either.isLeft(twice) && twice.left.map((p) => p.field)).toEqual(["rules[0].name", "rules[1].name"])
    const rules = Either.getOrThrow(
      Declaration.plan([], [{ ...a, name: "x" }, { ...b, name: "y" }], references, making)
    )
      .next.map((r) => ({ ...r, name: "x" }))
    const ambiguous = Declaration.plan(rules, [{ ...a, name: "x" }], references, making)
    expect(Either.isLeft(ambiguous) && ambiguous.left[0]!.message).toContain("names 2 rules")
    const byId = Declaration.plan(rules, [{ ...a, name: "x", id: rules[1]!.id }], references, making)
    expect(Either.getOrThrow(byId).deleted).toEqual([rules[0]])
  })
})
