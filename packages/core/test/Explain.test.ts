import { describe, expect, it } from "@effect/vitest"
import { Explain } from "@tenet/core"
import type { RuleSet } from "@tenet/core"
import { FastCheck as fc } from "effect"
import * as Reference from "./Reference.js"
import * as World from "./World.js"

const atomOf = (local: RuleSet.Flow["local"]) =>
  local.pod_id !== undefined
    ? `pod:${local.pod_id}`
    : local.subnet_id !== undefined
    ? `subnet:${local.subnet_id}`
    : "elsewhere"

describe("explain", () => {
  it.prop("one endpoint and one address: the side's verdict is the reference interpreter's", [
    World.rules,
    World.ipFlow
  ], (
    [rules, flow]
  ) => {
    const ip = (flow.remote as { ip: number }).ip
    const decided = Explain.side(
      rules,
      World.context,
      flow.direction,
      flow.protocol,
      flow.port,
      { atoms: new Set([atomOf(flow.local)]), addresses: [] },
      [[ip, ip]]
    )
    expect(decided?.verdict).toEqual(Reference.verdict(rules, World.context, flow))
  })

  it.prop("several endpoints and addresses: denied when any of their flows is, with a witness that is", [
    World.rules,
    World.ipFlow,
    fc.subarray(World.addresses, { minLength: 1 }),
    fc.subarray([...World.pods.map((p) => ({ pod_id: p })), ...World.subnets.map((s) => ({ subnet_id: s })), {}], {
      minLength: 1
    })
  ], ([rules, flow, ips, locals]) => {
    const decided = Explain.side(
      rules,
      World.context,
      flow.direction,
      flow.protocol,
      flow.port,
      { atoms: new Set(locals.map(atomOf)), addresses: [] },
      ips.map((ip) => [ip, ip] as const)
    )!
    const verdicts = ips.flatMap((ip) =>
      locals.map((local) => Reference.verdict(rules, World.context, { ...flow, remote: { kind: "ip", ip }, local }))
    )
    expect(decided.verdict.action).toBe(verdicts.some((v) => v.action === "deny") ? "deny" : "allow")
    expect(Reference.verdict(rules, World.context, decided.flow)).toEqual(decided.verdict)
  })
})
