import { describe, expect, it } from "@effect/vitest"
import type { Ids } from "@tenet/core"
import { Analysis, Evaluate, Net, Plan, Reorder, RuleSet } from "@tenet/core"
import { Reference } from "@tenet/core/testing"
import { Either, FastCheck as fc } from "effect"

import { context, flow, id, ipFlow, rules } from "./World.js"

const referenceVerdict = (all: ReadonlyArray<RuleSet.Rule>, f: RuleSet.Flow) => Reference.verdict(all, context, f)

describe("security-rule engine", () => {
  it.prop("evaluate agrees with the reference interpreter", [rules, flow], ([rs, f]) => {
    expect(Evaluate.evaluate(rs, context, f)).toEqual(referenceVerdict(rs, f))
  }, { fastCheck: { numRuns: 2000 } })

  it.prop("disabled and unresolvable rules never decide: dropping them changes nothing", [rules, flow], ([rs, f]) => {
    const verdict = Evaluate.evaluate(rs, context, f)
    if (verdict.decided_by.kind === "rule") {
      const decisive = rs.find((r) => r.id === (verdict.decided_by as { rule_id: string }).rule_id)!
      // A rule naming a VPC nothing peers is enforced as written: no packet of that VPC's arrives.
      expect(["active", "remote_vpc_unreachable"]).toContain(RuleSet.statusOf(decisive, context))
    }
    const enforced = rs.filter((r) => ["active", "remote_vpc_unreachable"].includes(RuleSet.statusOf(r, context)))
    expect(Evaluate.evaluate(enforced, context, f)).toEqual(verdict)
  })

  it.prop("the compiled plan decides every packet flow as evaluate does", [rules, ipFlow], ([rs, f]) => {
    const plan = Plan.compile(rs, context)
    expect(Plan.decide(plan, context, f)).toEqual(Evaluate.evaluate(rs, context, f))
  }, { fastCheck: { numRuns: 2000 } })

  it.prop("the plan holds exactly the active rules, ranked 1..n without ties, in evaluation order", [rules], ([rs]) => {
    const plan = Plan.compile(rs, context)
    expect(plan.entries.map((e) => e.rank)).toEqual(plan.entries.map((_, i) => i + 1))
    expect(plan.entries.map((e) => e.rule_id)).toEqual(RuleSet.enforced(rs, context).map((r) => r.id))
  })

  it.prop("evaluation order ignores the order rules are given in", [
    rules.chain((rs) => fc.tuple(fc.constant(rs), fc.shuffledSubarray(rs, { minLength: rs.length })))
  ], ([[rs, shuffled]]) => {
    expect(RuleSet.sort(shuffled).map((r) => r.id)).toEqual(RuleSet.sort(rs).map((r) => r.id))
  })

  it.prop("core network traffic is allowed whatever the rules say", [rules, ipFlow], ([rs, f]) => {
    const infra = { ...f, remote: { kind: "ip" as const, ip: Net.ipv4Of("100.64.7.7") } }
    expect(Evaluate.evaluate(rs, context, infra)).toEqual({
      action: "allow",
      decided_by: { kind: "implied", key: "implied-allow-infrastructure" }
    })
  })

  it("with no rules, ingress is denied and egress allowed", () => {
    const f = {
      direction: "ingress" as const,
      protocol: "tcp" as const,
      port: 80,
      remote: { kind: "ip" as const, ip: Net.ipv4Of("8.8.8.8") },
      local: {}
    }
    expect(Evaluate.evaluate([], context, f).decided_by).toEqual({ kind: "implied", key: "implied-deny-ingress" })
    expect(Evaluate.evaluate([], context, { ...f, direction: "egress" }).decided_by).toEqual({
      kind: "implied",
      key: "implied-allow-egress"
    })
  })
})

describe("reorder", () => {
  const idsArb = fc.uniqueArray(fc.integer({ min: 1, max: 10_000 }), { minLength: 1, maxLength: 200 })
    .map((ns) => ns.map((n) => id<Ids.SecurityRuleId>(n)))

  it.prop("a permutation of every rule gets 10, 20, 30, ... in the order given", [
    idsArb.chain((ids) => fc.tuple(fc.constant(ids), fc.shuffledSubarray(ids, { minLength: ids.length })))
  ], ([[ids, order]]) => {
    const priorities = Either.getOrThrow(Reorder.reorder(ids, order))
    expect([...priorities.keys()].sort()).toEqual([...ids].sort())
    expect(order.map((rid) => priorities.get(rid))).toEqual(order.map((_, i) => (i + 1) * 10))
  })

  it.prop("leaving a rule out, repeating one or naming a stranger is refused", [
    idsArb.filter((ids) => ids.length >= 2)
  ], ([ids]) => {
    expect(Either.getLeft(Reorder.reorder(ids, ids.slice(1)))).toEqual(
      expect.objectContaining({ value: { _tag: "MissingRules", rule_ids: [ids[0]] } })
    )
    expect(Either.getLeft(Reorder.reorder(ids, [...ids, ids[0]!]))).toEqual(
      expect.objectContaining({ value: { _tag: "DuplicateRule", rule_id: ids[0] } })
    )
    const stranger = id<Ids.SecurityRuleId>(99_999)
    expect(Either.getLeft(Reorder.reorder(ids, [...ids, stranger]))).toEqual(
      expect.objectContaining({ value: { _tag: "UnknownRule", rule_id: stranger } })
    )
  })
})

/** Flows at the corners of a box: its extreme ports and addresses, for every local endpoint. */
const corners = (box: Analysis.Box, direction: RuleSet.Flow["direction"]): Array<RuleSet.Flow> => {
  const base = Analysis.witness(box, direction)
  return [...box.locals].flatMap((local) => {
    const at = Analysis.witness({ ...box, locals: new Set([local]) }, direction).local
    return [box.ports[0], box.ports[1]].flatMap((port) =>
      [box.remote[0], box.remote[1]].map((ip) => ({
        ...base,
        local: at,
        port: box.protocol === "icmp" ? null : port,
        remote: { kind: "ip" as const, ip }
      }))
    )
  })
}

describe("rule analysis", () => {
  it.prop(
    "every corner of the traffic a rule decides is decided by it; shadowed rules decide nothing",
    [rules],
    ([rs]) => {
      const decided = Analysis.decided(rs, context)
      const shadowed = new Set(Analysis.analyze(rs, context).filter((f) => f.kind === "shadowed").map((f) => f.rule_id))
      const matcher = Evaluate.matcher(rs, context)
      for (const rule of RuleSet.enforced(rs, context)) {
        const boxes = decided.get(rule.id)!
        expect(boxes.length === 0).toBe(shadowed.has(rule.id))
        for (const box of boxes) {
          for (const flow of corners(box, rule.direction)) {
            expect(matcher.decide(flow).decided_by).toEqual({ kind: "rule", rule_id: rule.id })
          }
        }
      }
    },
    { fastCheck: { numRuns: 300 }, timeout: 30_000 }
  )

  it.prop("a shadowed rule decides none of its own traffic", [rules], ([rs]) => {
    const matcher = Evaluate.matcher(rs, context)
    for (const finding of Analysis.analyze(rs, context).filter((f) => f.kind === "shadowed")) {
      const rule = rs.find((r) => r.id === finding.rule_id)!
      for (const box of Analysis.boxesOf(rule, context)) {
        for (const flow of corners(box, rule.direction)) {
          expect(matcher.decide(flow).decided_by).not.toEqual({ kind: "rule", rule_id: rule.id })
        }
      }
    }
  }, { fastCheck: { numRuns: 300 }, timeout: 30_000 })

  it.prop(
    "removing a redundant rule changes no verdict's action",
    [rules, fc.array(ipFlow, { maxLength: 30 })],
    ([rs, flows]) => {
      const decided = Analysis.decided(rs, context)
      const matcher = Evaluate.matcher(rs, context)
      for (const finding of Analysis.analyze(rs, context).filter((f) => f.kind === "redundant")) {
        const rule = rs.find((r) => r.id === finding.rule_id)!
        const without = Evaluate.matcher(rs.filter((r) => r.id !== rule.id), context)
        const probes = [...flows, ...decided.get(rule.id)!.flatMap((b) => corners(b, rule.direction))]
        for (const flow of probes) {
          expect(without.decide(flow).action).toBe(matcher.decide(flow).action)
        }
      }
    },
    { fastCheck: { numRuns: 300 }, timeout: 30_000 }
  )

  it("finds the textbook cases", () => {
    const r = (seq: number, over: Partial<RuleSet.Rule>): RuleSet.Rule => ({
      id: id<Ids.SecurityRuleId>(5000 + seq),
      seq,
      priority: 10 * seq,
      direction: "ingress",
      action: "allow",
      protocol: "tcp",
      ports: null,
      remote: { kind: "cidr", cidr: Net.cidrOf("0.0.0.0/0") },
      target: { kind: "vpc" },
      enabled: true,
      ...over
    })
    const broad = r(1, { action: "deny", ports: [{ from: 20, to: 30 }] })
    const narrow = r(2, { ports: [{ from: 22, to: 22 }], remote: { kind: "cidr", cidr: Net.cidrOf("10.0.0.0/8") } })
    const partial = r(3, { ports: [{ from: 25, to: 35 }] })
    const inner = r(4, {
      action: "deny",
      ports: [{ from: 443, to: 443 }],
      remote: { kind: "cidr", cidr: Net.cidrOf("8.8.8.8/32") }
    })
    const findings = Analysis.analyze([broad, narrow, partial, inner], context)
    const kinds = (rule: RuleSet.Rule) => findings.filter((f) => f.rule_id === rule.id).map((f) => f.kind)
    expect(kinds(narrow)).toEqual(["shadowed"])
    expect(kinds(partial)).toEqual(["conflict"])
    // Denying ingress the default denies anyway: removing it changes nothing.
    expect(kinds(inner)).toEqual(["redundant"])
    // Not redundant: without it, the narrow allow would let port 22 in from 10/8.
    expect(kinds(broad)).toEqual([])
  })
})
