/**
 * Change impact is exact: every flow inside a reported box gets, from the reference
 * interpreter, the verdict the box says before and after the change; every flow outside the
 * boxes keeps its verdict; boxes do not overlap.
 */
import { describe, expect, it } from "@effect/vitest"
import { Analysis, Impact, Net, type RuleSet } from "@tenet/core"
import { Reference } from "@tenet/core/testing"
import { FastCheck as fc } from "effect"
import { context, ipFlow, otherVpcs, rule, rules, subnets, vpc } from "./World.js"

/** A rule set and the same set after one change: a rule added, removed, flipped, moved or switched off. */
const changed = rules.chain((before) => {
  const add = rule(before.length).map((r) => [...before, r])
  if (before.length === 0) return fc.tuple(fc.constant(before), add)
  const pick = fc.integer({ min: 0, max: before.length - 1 })
  const edit = (f: (r: RuleSet.Rule) => fc.Arbitrary<RuleSet.Rule>) =>
    pick.chain((i) => f(before[i]!).map((r) => before.map((x, j) => (j === i ? r : x))))
  return fc.tuple(
    fc.constant(before),
    fc.oneof(
      add,
      pick.map((i) => before.filter((_, j) => j !== i)),
      edit((r) => fc.constant({ ...r, action: r.action === "allow" ? "deny" as const : "allow" as const })),
      edit((r) => fc.integer({ min: 1, max: 12 }).map((priority) => ({ ...r, priority }))),
      edit((r) => fc.constant({ ...r, enabled: !r.enabled }))
    )
  )
})

/** A flow inside the box, at `at` (0..1) along each of its dimensions. */
const flowIn = (change: Impact.Change, at: readonly [number, number, number]): RuleSet.Flow => {
  const { box } = change
  const within = (range: readonly [number, number], t: number) => range[0] + Math.floor(t * (range[1] - range[0]))
  const locals = [...box.locals]
  const local = locals[Math.min(locals.length - 1, Math.floor(at[2] * locals.length))]!
  return {
    direction: change.direction,
    protocol: box.protocol,
    port: box.protocol === "icmp" ? null : within(box.ports, at[0]),
    remote: { kind: "ip", ip: within(box.remote, at[1]) },
    local: local.startsWith("pod:")
      ? { pod_id: local.slice(4) as never }
      : local.startsWith("subnet:")
      ? { subnet_id: local.slice(7) as never }
      : {}
  }
}

const atomOf = (f: RuleSet.Flow) =>
  f.local.pod_id !== undefined
    ? `pod:${f.local.pod_id}`
    : f.local.subnet_id !== undefined
    ? `subnet:${f.local.subnet_id}`
    : Analysis.ELSEWHERE

const inside = (change: Impact.Change, f: RuleSet.Flow) => {
  const atom = atomOf(f)
  return change.direction === f.direction && change.box.protocol === f.protocol &&
    (f.port === null || (change.box.ports[0] <= f.port && f.port <= change.box.ports[1])) &&
    f.remote.kind === "ip" && change.box.remote[0] <= f.remote.ip && f.remote.ip <= change.box.remote[1] &&
    change.box.locals.has(atom)
}

/**
 * The world before a topology post grew it: some of its subnets (with their pods and gateways)
 * and pods not there yet, and another VPC without one of its blocks.
 */
const smaller: fc.Arbitrary<RuleSet.VpcContext> = fc.tuple(
  fc.subarray(subnets),
  fc.subarray([...context.pods.keys()]),
  fc.boolean()
).map(([keptSubnets, keptPods, otherGrew]) => {
  const kept = new Set<string>(keptSubnets)
  const blocks = [...context.subnets].filter(([s]) => kept.has(s))
  return {
    vpc_id: vpc,
    subnets: new Map(blocks),
    pods: new Map([...context.pods].filter(([p, s]) => kept.has(s) && keptPods.includes(p))),
    vpcs: new Map([...context.vpcs].map(([v, cidrs]) =>
      [
        v,
        v === vpc ? blocks.map(([, c]) => c) : v === otherVpcs[1] && otherGrew ? cidrs.slice(0, 1) : cidrs
      ] as const
    )),
    addressSets: context.addressSets,
    infrastructure: context.infrastructure.filter((c) =>
      c.prefix !== 32 || blocks.some(([, b]) => Net.broadcastOf(b) >= c.address && Net.networkOf(b) <= c.address)
    ),
    paths: context.paths
  }
})

/** The flow as the smaller world saw it: at the subnet a new pod's address was in, or elsewhere. */
const before = (from: RuleSet.VpcContext, f: RuleSet.Flow): RuleSet.Flow => {
  const { pod_id, subnet_id } = f.local
  if (pod_id !== undefined && from.pods.has(pod_id)) return f
  const subnet = pod_id !== undefined ? context.pods.get(pod_id) : subnet_id
  return { ...f, local: subnet !== undefined && from.subnets.has(subnet) ? { subnet_id: subnet } : {} }
}

const unit = fc.double({ min: 0, max: 1, noNaN: true })

describe("change impact", () => {
  it.prop("every flow in a box has the verdicts the box says, before and after", [
    changed,
    fc.array(fc.tuple(unit, unit, unit), { minLength: 1, maxLength: 4 })
  ], ([[before, after], points]) => {
    for (const change of Impact.diff(before, after, context)) {
      expect(change.before.action).not.toBe(change.after.action)
      for (const at of [[0, 0, 0] as const, [1, 1, 1] as const, ...points]) {
        const f = flowIn(change, at)
        expect(Reference.verdict(before, context, f)).toEqual(change.before)
        expect(Reference.verdict(after, context, f)).toEqual(change.after)
      }
    }
  }, { fastCheck: { numRuns: 500 } })

  it.prop("a flow in no box keeps its action", [changed, fc.array(ipFlow, { minLength: 1, maxLength: 20 })], (
    [[before, after], flows]
  ) => {
    const changes = Impact.diff(before, after, context)
    for (const f of flows) {
      if (changes.some((c) => inside(c, f))) continue
      expect(Reference.verdict(after, context, f).action).toBe(Reference.verdict(before, context, f).action)
    }
  }, { fastCheck: { numRuns: 500 } })

  it.prop("the boxes are disjoint, and none when nothing changes", [changed], ([[before, after]]) => {
    const changes = Impact.diff(before, after, context)
    changes.forEach((a, i) =>
      changes.slice(i + 1).forEach((b) => {
        expect(a.direction === b.direction && Analysis.intersects(a.box, b.box)).toBe(false)
      })
    )
    expect(Impact.diff(before, before, context)).toEqual([])
  }, { fastCheck: { numRuns: 500 } })

  it.prop("a topology post that adds subnets and pods: exact over the world as it grows", [
    changed,
    smaller,
    fc.array(fc.tuple(unit, unit, unit), { minLength: 1, maxLength: 4 }),
    fc.array(ipFlow, { minLength: 1, maxLength: 20 })
  ], ([[rulesBefore, rulesAfter], from, points, flows]) => {
    const changes = Impact.diff(rulesBefore, rulesAfter, from, context)
    for (const change of changes) {
      for (const at of [[0, 0, 0] as const, [1, 1, 1] as const, ...points]) {
        const f = flowIn(change, at)
        expect(Reference.verdict(rulesBefore, from, before(from, f))).toEqual(change.before)
        expect(Reference.verdict(rulesAfter, context, f)).toEqual(change.after)
      }
    }
    for (const f of flows) {
      if (changes.some((c) => inside(c, f))) continue
      expect(Reference.verdict(rulesAfter, context, f).action).toBe(
        Reference.verdict(rulesBefore, from, before(from, f)).action
      )
    }
  }, { fastCheck: { numRuns: 500 } })
})
