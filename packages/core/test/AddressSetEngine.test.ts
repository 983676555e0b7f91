/**
 * An address set means exactly its entries: a rule naming a set decides every flow from an
 * address as the set expanded into one CIDR rule per entry does (judged by the reference
 * interpreter), a flow naming a VPC as the union of its entries does (which no one entry may
 * hold), and an edit of a set moves exactly the flows whose verdicts differ between the two
 * expanded policies.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Ids } from "@tenet/core"
import { Analysis, Evaluate, Impact, Net, Plan, type RuleSet } from "@tenet/core"
import { Reference } from "@tenet/core/testing"
import { FastCheck as fc } from "effect"
import { addressSets, context, ipFlow, otherVpcs, rules, vpc } from "./World.js"

/** The blocks a set's entries are drawn from: some nest, some abut, some hold a VPC's blocks. */
const POOL = [
  "0.0.0.0/0",
  "10.0.0.0/8",
  "10.0.1.0/24",
  "10.1.0.0/17",
  "10.1.128.0/17",
  "8.8.8.0/24",
  "8.8.8.8/32",
  "172.16.0.0/24",
  "172.16.8.0/24",
  "192.168.0.0/16",
  "192.168.1.0/24",
  "100.64.0.0/10"
].map(Net.cidrOf)

const entries = fc.uniqueArray(fc.constantFrom(...POOL), { maxLength: 6 })

/** The world with the sets' entries drawn at random. */
const withSets = fc.tuple(entries, entries, entries).map(([a, b, c]): RuleSet.VpcContext => ({
  ...context,
  addressSets: new Map<Ids.AddressSetId, ReadonlyArray<Net.Cidr>>([
    [addressSets[0]!, a],
    [addressSets[1]!, b],
    [addressSets[2]!, c]
  ])
}))

/** Each rule naming a set as one rule per entry, of the same id, order and verdict (a set that is gone: none). */
const expand = (rs: ReadonlyArray<RuleSet.Rule>, within: RuleSet.VpcContext): Array<RuleSet.Rule> =>
  rs.flatMap((rule) =>
    rule.remote.kind !== "address_set"
      ? [rule]
      : (within.addressSets.get(rule.remote.address_set_id) ?? []).map((cidr) => ({
        ...rule,
        remote: { kind: "cidr" as const, cidr }
      }))
  )

/** A flow from inside one of the pool's blocks, or from the world's addresses. */
const flow: fc.Arbitrary<RuleSet.Flow & { readonly remote: { readonly kind: "ip" } }> = fc.oneof(
  ipFlow,
  fc.tuple(ipFlow, fc.constantFrom(...POOL), fc.double({ min: 0, max: 1, noNaN: true })).map(([f, block, at]) => ({
    ...f,
    remote: {
      kind: "ip" as const,
      ip: Net.networkOf(block) + Math.floor(at * (Net.broadcastOf(block) - Net.networkOf(block)))
    }
  }))
)

/** A flow naming one of the tenant's VPCs as its remote. */
const vpcFlow: fc.Arbitrary<RuleSet.Flow> = fc.tuple(ipFlow, fc.constantFrom(vpc, ...otherVpcs)).map(([f, vpc_id]) => ({
  ...f,
  remote: { kind: "vpc" as const, vpc_id }
}))

describe("address sets in the engine", () => {
  it.prop("a flow naming a VPC is within a set when the set's entries together hold every block of it", [
    rules,
    withSets,
    vpcFlow
  ], ([rs, world, f]) => {
    expect(Evaluate.evaluate(rs, world, f)).toEqual(Reference.verdict(rs, world, f))
  }, { fastCheck: { numRuns: 1500 } })

  it("a VPC split across two entries is within the set, and not within either entry alone", () => {
    const halves = ["10.1.0.0/17", "10.1.128.0/17"].map(Net.cidrOf)
    const world: RuleSet.VpcContext = { ...context, addressSets: new Map([[addressSets[0]!, halves]]) }
    const rule = (remote: RuleSet.RuleRemote): RuleSet.Rule => ({
      id: "00000000-0000-4000-8000-000000009999" as Ids.SecurityRuleId,
      seq: 1,
      priority: 1,
      direction: "ingress",
      action: "allow",
      protocol: "all",
      ports: null,
      remote,
      target: { kind: "vpc" },
      enabled: true
    })
    const f: RuleSet.Flow = {
      direction: "ingress",
      protocol: "tcp",
      port: 22,
      remote: { kind: "vpc", vpc_id: otherVpcs[0]! },
      local: {}
    }
    expect(Evaluate.evaluate([rule({ kind: "address_set", address_set_id: addressSets[0]! })], world, f).action).toBe(
      "allow"
    )
    for (const cidr of halves) expect(Evaluate.evaluate([rule({ kind: "cidr", cidr })], world, f).action).toBe("deny")
  })

  it.prop("a rule naming a set decides every flow as the set expanded into one rule per entry", [
    rules,
    withSets,
    flow
  ], ([rs, world, f]) => {
    const expanded = Reference.verdict(expand(rs, world), world, f)
    expect(Evaluate.evaluate(rs, world, f)).toEqual(expanded)
    expect(Reference.verdict(rs, world, f)).toEqual(expanded)
    expect(Plan.decide(Plan.compile(rs, world), world, f)).toEqual(expanded)
  }, { fastCheck: { numRuns: 1500 } })

  it.prop("a set's edit moves exactly the flows the two expanded policies decide differently", [
    rules,
    withSets,
    entries,
    fc.constantFrom(...addressSets),
    fc.array(flow, { minLength: 1, maxLength: 20 }),
    fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })), {
      maxLength: 3
    })
  ], ([rs, before, edited, set, flows, points]) => {
    const after: RuleSet.VpcContext = {
      ...before,
      addressSets: new Map([...before.addressSets, [set, edited]])
    }
    const then = expand(rs, before)
    const now = expand(rs, after)
    const changes = Impact.diff(rs, rs, before, after)
    for (const change of changes) {
      expect(change.before.action).not.toBe(change.after.action)
      for (const [p, r] of [[0, 0], [1, 1], ...points] as const) {
        const within = (range: readonly [number, number], t: number) => range[0] + Math.floor(t * (range[1] - range[0]))
        const local = [...change.box.locals][0]!
        const f: RuleSet.Flow = {
          direction: change.direction,
          protocol: change.box.protocol,
          port: change.box.protocol === "icmp" ? null : within(change.box.ports, p),
          remote: { kind: "ip", ip: within(change.box.remote, r) },
          local: local.startsWith("pod:")
            ? { pod_id: local.slice(4) as Ids.PodId }
            : local.startsWith("subnet:")
            ? { subnet_id: local.slice(7) as Ids.SubnetId }
            : {}
        }
        expect(Reference.verdict(then, before, f)).toEqual(change.before)
        expect(Reference.verdict(now, after, f)).toEqual(change.after)
      }
    }
    for (const f of flows) {
      const moved = Reference.verdict(then, before, f).action !== Reference.verdict(now, after, f).action
      const reported = changes.some((c) =>
        c.direction === f.direction && c.box.protocol === f.protocol &&
        (f.port === null || (c.box.ports[0] <= f.port && f.port <= c.box.ports[1])) &&
        f.remote.kind === "ip" && c.box.remote[0] <= f.remote.ip && f.remote.ip <= c.box.remote[1] &&
        c.box.locals.has(
          f.local.pod_id !== undefined
            ? `pod:${f.local.pod_id}`
            : f.local.subnet_id !== undefined
            ? `subnet:${f.local.subnet_id}`
            : Analysis.ELSEWHERE
        )
      )
      expect(reported).toBe(moved)
    }
  }, { fastCheck: { numRuns: 500 } })
})
