/**
 * The reachability matrix a page at a time: pages read after one another are the whole
 * selection, each pair once and in order, whatever their size; a summary by subnet is the whole
 * matrix without the pods; around one endpoint, exactly the pairs it is an end of. And a pod of a
 * subnet whose pods no rule tells apart answers as its neighbour does.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Ids, RuleSet } from "@tenet/core"
import { Reachability } from "@tenet/core"
import { FastCheck as fc } from "effect"
import * as World from "./World.js"

const others = new Map<Ids.VpcId, Reachability.RuleSetOf>([
  [World.otherVpcs[0]!, { rules: [], context: { ...World.context, vpc_id: World.otherVpcs[0]! } }]
])

const mapOf = (rules: ReadonlyArray<RuleSet.Rule>) => Reachability.map({ rules, context: World.context }, others)

const keyOf = ([from, to]: readonly [Reachability.Located, Reachability.Located]) => Reachability.pairKey(from, to)

/** The selection read `size` pairs at a time, each page after the last pair of the one before. */
const paged = (m: Reachability.VpcMap, selection: Reachability.Selection, size: number) => {
  const read: Array<Reachability.PairKey> = []
  let after: Reachability.PairKey | undefined
  for (;;) {
    const page = [...Reachability.pairs(m, { ...selection, after })].slice(0, size)
    read.push(...page.map(keyOf))
    if (page.length < size) return read
    after = keyOf(page[page.length - 1]!)
  }
}

const detail = fc.constantFrom<Reachability.Detail>("subnets", "pods")

describe("reachability, a page at a time", () => {
  it.prop(
    "pages read in turn are every pair of the selection once, in key order",
    [World.rules, detail, fc.integer({ min: 1, max: 40 })],
    ([rules, d, size]) => {
      const m = mapOf(rules)
      const whole = [...Reachability.pairs(m, { detail: d })].map(keyOf)
      expect(paged(m, { detail: d }, size)).toEqual(whole)
      const sorted = [...whole].sort((a, b) =>
        a[0] - b[0] || a[1].localeCompare(b[1]) || a[2] - b[2] || a[3].localeCompare(b[3])
      )
      expect(whole).toEqual(sorted)
    }
  )

  it("the pairs are those with an end in the VPC, a pod never with itself; the summary leaves out the pods", () => {
    const m = mapOf([])
    const all = [...Reachability.pairs(m, { detail: "pods" })]
    const inside = m.endpoints.filter((l) => l.inside).length
    const outside = m.endpoints.length - inside
    const pods = World.pods.length
    expect(all.length).toBe(inside * inside - pods + 2 * inside * outside)
    const summary = [...Reachability.pairs(m, { detail: "subnets" })].map(keyOf)
    expect(summary).toEqual(all.map(keyOf).filter(([fromRank, , toRank]) => fromRank !== 1 && toRank !== 1))
  })

  it.prop(
    "around one endpoint: exactly the pairs it is an end of, a pod's included in the summary",
    [detail, fc.integer({ min: 0, max: 100 }), fc.integer({ min: 1, max: 7 })],
    ([d, pick, size]) => {
      const m = mapOf([])
      const around = m.endpoints[pick % m.endpoints.length]!
      const everything = [...Reachability.pairs(m, { detail: "pods" })]
      const expected = everything.filter(([from, to]) =>
        (from === around || to === around) &&
        (d === "pods" || [from, to].every((l) => l === around || l.endpoint.kind !== "pod"))
      ).map(keyOf)
      expect(paged(m, { detail: d, around }, size)).toEqual(expected)
    }
  )

  it.prop(
    "a pod alike its neighbour (same subnet, no rule naming either) answers as it does",
    [World.rules],
    ([rules]) => {
      // Pods 21 and 24 are both in the first subnet.
      const [a, , , b] = World.pods
      const named = (id: Ids.PodId) => rules.some((r) => r.target.kind === "pods" && r.target.pod_ids.includes(id))
      fc.pre(!named(a!) && !named(b!))
      const m = mapOf(rules)
      const at = (id: string) => Reachability.find(m, id)!
      const internet = at("internet")
      const strip = (p: Reachability.Pair) =>
        Object.fromEntries(Object.entries(p.reach).map(([k, v]) => [k, { allowed: v.allowed, partial: v.partial }]))
      expect(strip(Reachability.pair(m, internet, at(a!)))).toEqual(strip(Reachability.pair(m, internet, at(b!))))
      expect(strip(Reachability.pair(m, at(a!), internet))).toEqual(strip(Reachability.pair(m, at(b!), internet)))
    }
  )
})
