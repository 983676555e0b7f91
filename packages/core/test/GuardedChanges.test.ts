/**
 * Guardrails hold through any sequence of rule changes: each change is decided and checked as
 * the pipeline does (`Invariants.check`), accepted changes are made, and after each one every guardrail's
 * region gets the required verdict from the reference interpreter, flow by flow.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Guardrail, Ids, SecurityRule } from "@tenet/core"
import { Invariants, Net, Paths, RuleSet, SecurityRuleStrategy, TenantState } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { Reference } from "@tenet/core/testing"
import { Either, FastCheck as fc } from "effect"

const tenant = Fixtures.tenant()
const vpc = Fixtures.vpc(tenant.id)
const context = RuleSet.contextOf(vpc.id, {
  vpcs: [vpc],
  subnets: [],
  pods: [],
  tunnels: [],
  addressSets: [],
  connections: Paths.connections({ vpcs: [vpc], subnets: [], rules: [] }),
  peeringCidr: null
})
const BLOCKS = ["0.0.0.0/0", "10.0.0.0/8", "10.1.0.0/16", "198.51.100.0/24", "203.0.113.0/24"]
const ADDRESSES = ["10.1.2.3", "10.9.9.9", "198.51.100.7", "203.0.113.9", "8.8.8.8"].map(Net.ipv4Of)
const PORTS = [null, "22", "80,443", "20-25"]

const shape = {
  direction: fc.constantFrom("ingress" as const, "egress" as const),
  protocol: fc.constantFrom("tcp" as const, "udp" as const, "all" as const),
  ports: fc.constantFrom(...PORTS),
  block: fc.constantFrom(...BLOCKS)
}

const rule = fc.record({
  ...shape,
  action: fc.constantFrom("allow" as const, "deny" as const),
  priority: fc.integer({ min: 1, max: 20 })
})
const guardrail = fc.record({ ...shape, require: fc.constantFrom("allow" as const, "deny" as const) })

const recordOf = (
  r: typeof rule extends fc.Arbitrary<infer R> ? R : never,
  seq: number
): SecurityRule.SecurityRuleRecord =>
  Fixtures.rule(vpc, seq, {
    direction: r.direction,
    action: r.action,
    priority: r.priority,
    protocol: r.protocol,
    ports: r.protocol === "all" ? null : r.ports,
    remote_cidr: r.block as Net.Ipv4Network
  })

const guardrailOf = (
  g: typeof guardrail extends fc.Arbitrary<infer G> ? G : never,
  i: number
): Guardrail.GuardrailRecord =>
  Fixtures.guardrail(vpc, {
    id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}` as Ids.GuardrailId,
    require: g.require,
    direction: g.direction,
    protocol: g.protocol,
    ports: g.protocol === "all" ? null : g.ports,
    remote_cidr: g.block as Net.Ipv4Network
  })

const flows = fc.record({
  direction: fc.constantFrom("ingress" as const, "egress" as const),
  protocol: fc.constantFrom("tcp" as const, "udp" as const, "icmp" as const),
  port: fc.constantFrom(21, 22, 23, 80, 443, 8080),
  ip: fc.constantFrom(...ADDRESSES)
}).map((f): RuleSet.Flow => ({
  direction: f.direction,
  protocol: f.protocol,
  port: f.protocol === "icmp" ? null : f.port,
  remote: { kind: "ip", ip: f.ip },
  local: {}
}))

const inRegion = (g: Guardrail.GuardrailRecord, f: RuleSet.Flow) =>
  f.direction === g.direction &&
  (g.protocol === "all" || g.protocol === f.protocol) &&
  (g.ports === null || f.port === null ||
    g.ports.split(",").some((p) => {
      const [from, to = from] = p.split("-").map(Number)
      return from! <= f.port! && f.port! <= to!
    })) &&
  (g.ports === null || f.port !== null) &&
  f.remote.kind === "ip" && Net.contains(Net.cidrOf(g.remote_cidr), f.remote.ip)

describe("guarded rule changes", () => {
  it.prop(
    "no accepted change leaves a guardrail broken; a refused one would have",
    [
      fc.array(guardrail, { maxLength: 3 }),
      fc.array(rule, { minLength: 1, maxLength: 12 }),
      fc.array(flows, { minLength: 30, maxLength: 30 })
    ],
    ([guards, creates, sample]) => {
      const guardrails = guards.map(guardrailOf)
      let state = TenantState.TenantState.fromSnapshot(
        tenant.id,
        Fixtures.snapshot({
          revision: "0",
          vpcs: [vpc],
          vpcVersions: { [vpc.id]: 0 }
        })
      )
      // Guardrails the empty VPC already breaks are refused; the others hold from here on.
      for (const g of guardrails) {
        if (Invariants.violationsOf(state, vpc.id, [], context, [g]).length === 0) {
          state = state.apply([{ _tag: "Insert", part: "guardrails", record: g }], `g${g.id}`)
        }
      }
      creates.forEach((r, i) => {
        const { seq: _seq, ...made } = recordOf(r, i + 1)
        // What the pipeline does with a decision: the state it leaves, checked on what it reaches.
        const decided = Either.flatMap(SecurityRuleStrategy.create(made, null)(state), (decision) => {
          const after = state.apply(decision.writes, state.revision)
          return Either.map(
            Invariants.check(state, after, Invariants.reachOf(state, after, decision.writes), null),
            () => decision
          )
        })
        const rules = [...state.rulesOf(vpc.id), { ...made, seq: i + 1 }].map(RuleSet.fromRecord)
        const breaks = state.guardrailsOf(vpc.id).some((g) =>
          sample.some((f) => inRegion(g, f) && Reference.verdict(rules, context, f).action !== g.require)
        )
        if (Either.isLeft(decided)) {
          expect(decided.left._tag).toBe("GuardrailViolated")
          return
        }
        expect(breaks).toBe(false)
        state = state.apply(decided.right.writes, `r${i}`)
      })
    },
    { fastCheck: { numRuns: 300 } }
  )
})
