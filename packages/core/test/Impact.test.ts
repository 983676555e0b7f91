/**
 * Change impact is exact: every flow inside a reported box gets, from the reference
 * interpreter, the verdict the box says before and after the change; every flow outside the
 * boxes keeps its verdict; boxes do not overlap.
 */
import { describe, expect, it } from "@effect/vitest"
import { Analysis, Impact, type RuleSet } from "@tenet/core"
import { FastCheck as fc } from "effect"
import * as Reference from "./Reference.js"
import { context, ipFlow, rule, rules } from "./World.js"

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

const inside = (change: Impact.Change, f: RuleSet.Flow) => {
  const atom = f.local.pod_id !== undefined
    ? `pod:${f.local.pod_id}`
    : f.local.subnet_id !== undefined
    ? `subnet:${f.local.subnet_id}`
    : Analysis.ELSEWHERE
  return change.direction === f.direction && change.box.protocol === f.protocol &&
    (f.port === null || (change.box.ports[0] <= f.port && f.port <= change.box.ports[1])) &&
    f.remote.kind === "ip" && change.box.remote[0] <= f.remote.ip && f.remote.ip <= change.box.remote[1] &&
    change.box.locals.has(atom)
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
})
