import { describe, expect, it } from "@effect/vitest"
import type { Guardrail, Ids } from "@tenet/core"
import { GuardrailCheck, Net, PortRanges } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { Reference } from "@tenet/core/testing"
import { FastCheck as fc } from "effect"
import * as World from "./World.js"

const tenant = Fixtures.tenant()

/** A guardrail over the world's VPC: a region of its flows and the verdict they must get. */
const guardrail: fc.Arbitrary<Guardrail.GuardrailRecord> = fc.record({
  require: fc.constantFrom("allow" as const, "deny" as const),
  direction: fc.constantFrom("ingress" as const, "egress" as const),
  protocol: fc.constantFrom("tcp" as const, "udp" as const, "icmp" as const, "all" as const),
  ports: World.ports,
  remote: fc.constantFrom(...World.blocks),
  local: fc.option(
    fc.record({
      pod_ids: fc.subarray([...World.pods, World.deletedPod]),
      subnet_ids: fc.subarray([...World.subnets, World.deletedSubnet])
    }),
    { nil: null }
  )
}).map((g) => ({
  id: World.id<Ids.GuardrailId>(5000),
  tenant_id: tenant.id,
  vpc_id: World.vpc,
  name: "guard",
  description: null,
  require: g.require,
  direction: g.direction,
  protocol: g.protocol,
  ports: g.protocol === "tcp" || g.protocol === "udp"
    ? g.ports === null ? null : PortRanges.format(g.ports)
    : null,
  remote_cidr: Net.formatCidr(g.remote) as Net.Ipv4Network,
  local: g.local,
  created_at: tenant.created_at
}))

/** Whether a flow is in the guardrail's region (the core network aside). */
const inRegion = (
  g: Guardrail.GuardrailRecord,
  flow: (typeof World.ipFlow) extends fc.Arbitrary<infer F> ? F : never
) => {
  if (flow.direction !== g.direction) return false
  if (g.protocol !== "all" && g.protocol !== flow.protocol) return false
  if (g.ports !== null && flow.port !== null) {
    const ranges = PortRanges.parse(g.ports)
    if (ranges._tag === "Left" || !ranges.right.some((r) => r.from <= flow.port! && flow.port! <= r.to)) return false
  }
  if (!Net.contains(Net.cidrOf(g.remote_cidr), flow.remote.ip)) return false
  if (World.context.infrastructure.some((c) => Net.contains(c, flow.remote.ip))) return false
  if (g.local === null) return true
  const local = flow.local as { pod_id?: Ids.PodId; subnet_id?: Ids.SubnetId }
  if (local.pod_id !== undefined) {
    return g.local.pod_ids.includes(local.pod_id) || g.local.subnet_ids.includes(World.context.pods.get(local.pod_id)!)
  }
  return local.subnet_id !== undefined && g.local.subnet_ids.includes(local.subnet_id)
}

describe("guardrails", () => {
  it.prop(
    "a violation's witness is in the region and really gets the other verdict; no violation means every flow of it gets the required one",
    [World.rules, guardrail, fc.array(World.ipFlow, { minLength: 20, maxLength: 60 })],
    ([rules, g, flows]) => {
      const violation = GuardrailCheck.check(g, rules, World.context)
      if (violation !== null) {
        const flow = violation.flow
        expect(inRegion(g, flow as never)).toBe(true)
        const verdict = Reference.verdict(rules, World.context, flow)
        expect(verdict.action).not.toBe(g.require)
        expect(verdict).toEqual(violation.verdict)
      } else {
        for (const flow of flows.filter((f) => inRegion(g, f))) {
          expect(Reference.verdict(rules, World.context, flow).action).toBe(g.require)
        }
      }
    },
    { fastCheck: { numRuns: 400 } }
  )
})
