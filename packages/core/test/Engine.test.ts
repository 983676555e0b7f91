import { describe, expect, it } from "@effect/vitest"
import type { Ids } from "@tenet/core"
import { Analysis, Evaluate, Net, Plan, Reorder, RuleSet } from "@tenet/core"
import { Either, FastCheck as fc } from "effect"
import * as Reference from "./Reference.js"

// ---------------------------------------------------------------------------
// A small world: one VPC with three subnets and some pods, two other VPCs, one deleted VPC,
// a deleted subnet and a deleted pod, so references can dangle.
// ---------------------------------------------------------------------------

const id = <B>(n: number) => `00000000-0000-4000-8000-${n.toString().padStart(12, "0")}` as B
const vpc = id<Ids.VpcId>(1)
const otherVpcs = [id<Ids.VpcId>(2), id<Ids.VpcId>(3)]
const deletedVpc = id<Ids.VpcId>(9)
const subnets = [id<Ids.SubnetId>(11), id<Ids.SubnetId>(12), id<Ids.SubnetId>(13)]
const deletedSubnet = id<Ids.SubnetId>(19)
const pods = [id<Ids.PodId>(21), id<Ids.PodId>(22), id<Ids.PodId>(23), id<Ids.PodId>(24)]
const deletedPod = id<Ids.PodId>(29)

const context: RuleSet.VpcContext = {
  vpc_id: vpc,
  subnets: new Map(subnets.map((s, i) => [s, Net.cidrOf(`10.0.${i}.0/24`)])),
  pods: new Map(pods.map((p, i) => [p, subnets[i % subnets.length]!])),
  vpcs: new Map([
    [vpc, subnets.map((_, i) => Net.cidrOf(`10.0.${i}.0/24`))],
    [otherVpcs[0]!, [Net.cidrOf("10.1.0.0/16")]],
    [otherVpcs[1]!, [Net.cidrOf("172.16.0.0/24"), Net.cidrOf("172.16.8.0/24")]]
  ]),
  infrastructure: [Net.cidrOf("100.64.0.0/16"), Net.cidrOf("10.0.0.1/32")]
}

const addresses = [
  "10.0.0.5",
  "10.0.1.9",
  "10.0.2.200",
  "10.1.3.4",
  "172.16.0.9",
  "172.16.8.1",
  "8.8.8.8",
  "100.64.1.1",
  "10.0.0.1",
  "192.168.1.1"
]
  .map(Net.ipv4Of)
const blocks = [
  "0.0.0.0/0",
  "10.0.0.0/8",
  "10.0.0.0/16",
  "10.0.1.0/24",
  "10.1.0.0/16",
  "172.16.0.0/20",
  "8.8.8.8/32",
  "192.168.0.0/16",
  "100.64.0.0/10"
]
  .map(Net.cidrOf)

const ports = fc.option(
  fc.array(fc.tuple(fc.integer({ min: 18, max: 32 }), fc.integer({ min: 0, max: 4 })), { minLength: 1, maxLength: 3 })
    .map((rs) => rs.map(([from, width]) => ({ from, to: from + width }))),
  { nil: null }
)

const remote: fc.Arbitrary<RuleSet.RuleRemote> = fc.oneof(
  fc.constantFrom(...blocks).map((cidr) => ({ kind: "cidr" as const, cidr })),
  fc.constantFrom(vpc, ...otherVpcs, deletedVpc).map((vpc_id) => ({ kind: "vpc" as const, vpc_id }))
)

const target: fc.Arbitrary<RuleSet.RuleTarget> = fc.oneof(
  fc.constant({ kind: "vpc" as const }),
  fc.constantFrom(...subnets, deletedSubnet).map((subnet_id) => ({ kind: "subnet" as const, subnet_id })),
  fc.subarray([...pods, deletedPod], { minLength: 1 }).map((pod_ids) => ({ kind: "pods" as const, pod_ids }))
)

const rule = (seq: number): fc.Arbitrary<RuleSet.Rule> =>
  fc.record({
    priority: fc.integer({ min: 1, max: 12 }),
    direction: fc.constantFrom("ingress" as const, "egress" as const),
    action: fc.constantFrom("allow" as const, "deny" as const),
    protocol: fc.constantFrom("tcp" as const, "udp" as const, "icmp" as const, "all" as const),
    ports,
    remote,
    target,
    enabled: fc.integer({ min: 0, max: 4 }).map((n) => n > 0)
  }).map((r) => ({
    ...r,
    ports: r.protocol === "tcp" || r.protocol === "udp" ? r.ports : null,
    id: id<Ids.SecurityRuleId>(1000 + seq),
    seq
  }))

const rules = fc.integer({ min: 0, max: 25 }).chain((n) =>
  fc.tuple(...Array.from({ length: n }, (_, i) => rule(i))).map((rs) => rs as Array<RuleSet.Rule>)
)

const local = fc.oneof(
  fc.constantFrom(...pods).map((pod_id) => ({ pod_id })),
  fc.constantFrom(...subnets).map((subnet_id) => ({ subnet_id })),
  fc.constant({})
)

const ipFlow = fc.record({
  direction: fc.constantFrom("ingress" as const, "egress" as const),
  protocol: fc.constantFrom("tcp" as const, "udp" as const, "icmp" as const),
  port: fc.integer({ min: 15, max: 40 }),
  remote: fc.constantFrom(...addresses).map((ip) => ({ kind: "ip" as const, ip })),
  local
}).map((f) => ({ ...f, port: f.protocol === "icmp" ? null : f.port }))

const flow: fc.Arbitrary<RuleSet.Flow> = fc.oneof(
  ipFlow,
  ipFlow.chain((f) =>
    fc.constantFrom(vpc, ...otherVpcs).map((vpc_id) => ({ ...f, remote: { kind: "vpc" as const, vpc_id } }))
  )
)

const referenceVerdict = (all: ReadonlyArray<RuleSet.Rule>, f: RuleSet.Flow) => Reference.verdict(all, context, f)

describe("security-rule engine", () => {
  it.prop("evaluate agrees with the reference interpreter", [rules, flow], ([rs, f]) => {
    expect(Evaluate.evaluate(rs, context, f)).toEqual(referenceVerdict(rs, f))
  }, { fastCheck: { numRuns: 2000 } })

  it.prop("disabled and unresolvable rules never decide: dropping them changes nothing", [rules, flow], ([rs, f]) => {
    const verdict = Evaluate.evaluate(rs, context, f)
    if (verdict.decided_by.kind === "rule") {
      const decisive = rs.find((r) => r.id === (verdict.decided_by as { rule_id: string }).rule_id)!
      expect(RuleSet.statusOf(decisive, context)).toBe("active")
    }
    const active = rs.filter((r) => RuleSet.statusOf(r, context) === "active")
    expect(Evaluate.evaluate(active, context, f)).toEqual(verdict)
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
