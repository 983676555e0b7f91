/**
 * Which of one VPC's flows a path carries, for the answers that judge a VPC's rules over boxes
 * of flows (impact, guardrails): a box split by where its remote addresses are (the VPC itself,
 * a peer, another of the tenant's VPCs, the core network, the internet) and, for what arrives
 * from the internet, by what is published on which ports, each part with what stops its flows
 * (null: a path carries them). `Paths` decides each part, as it decides every end-to-end answer
 * (`Reach`), so a region and a flow of it cannot be told two things. Pure.
 */
import { oncePerRecord } from "../domain/Common.js"
import type { PodId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { Direction } from "../domain/SecurityRule.js"
import type { Box } from "./Analysis.js"
import * as Paths from "./Paths.js"
import type { Flow, VpcContext } from "./RuleSet.js"

type Interval = readonly [number, number]

/** A part of a box, and what stops its flows on their path (null: a path carries them). */
export interface Part {
  readonly box: Box
  readonly blocked: Paths.Blocked | null
}

/** A stretch of addresses and where it is from the VPC. */
interface Stretch {
  readonly range: Interval
  readonly place: Paths.Place
}

const rangeOf = (cidr: Net.Cidr): Interval => [Net.networkOf(cidr), Net.broadcastOf(cidr)]

/** `stretches` with `range` laid over them as `place`. */
const lay = (stretches: ReadonlyArray<Stretch>, range: Interval, place: Paths.Place): Array<Stretch> => {
  const out: Array<Stretch> = []
  for (const s of stretches) {
    if (s.range[1] < range[0] || s.range[0] > range[1]) {
      out.push(s)
      continue
    }
    if (s.range[0] < range[0]) out.push({ range: [s.range[0], range[0] - 1], place: s.place })
    if (s.range[1] > range[1]) out.push({ range: [range[1] + 1, s.range[1]], place: s.place })
  }
  out.push({ range, place })
  return out
}

/**
 * Every address by where it is from the VPC, in address order: the core network, else the VPC's
 * own blocks, else a peer's, else another VPC's of the tenant's, else the internet. (Two VPCs
 * that are not peered may share a block; from inside one, its own is meant, then the one a
 * route leads to, as `Traffic` resolves an address.) Laid lowest first, so the first wins.
 */
const placesOf = oncePerRecord((context: VpcContext): ReadonlyArray<Stretch> => {
  const own = context.vpc_id
  const peers = context.paths.peers
  const rank = (vpc: string) => (vpc === own ? 2 : peers.has(vpc as typeof own) ? 1 : 0)
  let stretches: Array<Stretch> = [{ range: [0, 0xffffffff], place: { kind: "internet" } }]
  const vpcs = [...context.vpcs].sort(([a], [b]) => rank(a) - rank(b))
  for (const [vpc, blocks] of vpcs) {
    for (const block of blocks) stretches = lay(stretches, rangeOf(block), { kind: "vpc", vpc })
  }
  for (const block of context.infrastructure) stretches = lay(stretches, rangeOf(block), { kind: "core" })
  return stretches.sort((a, b) => a.range[0] - b.range[0])
})

/** The ports an endpoint is published on from the internet on `protocol`. */
const openOn = (context: VpcContext, atom: string, protocol: Box["protocol"]): ReadonlyArray<Interval> => {
  const pod = atom.startsWith("pod:") ? context.paths.published.get(atom.slice(4) as PodId) : undefined
  return pod === undefined || protocol === "icmp" ? [] : pod[protocol]
}

/** `whole` cut at the edges of `ranges` (sorted, disjoint): each piece inside one of them or outside all. */
const cut = (whole: Interval, ranges: ReadonlyArray<Interval>): Array<Interval> => {
  const out: Array<Interval> = []
  let at = whole[0]
  for (const [from, to] of ranges) {
    if (to < at || from > whole[1]) continue
    if (from > at) out.push([at, from - 1])
    out.push([Math.max(from, at), Math.min(to, whole[1])])
    at = Math.min(to, whole[1]) + 1
  }
  if (at <= whole[1]) out.push([at, whole[1]])
  return out
}

/**
 * `box`'s flows of `direction` in `context`'s VPC, split into parts that a path carries whole
 * or not at all, each with what stops it. Parts are disjoint and cover the box.
 */
export const split = (context: VpcContext, direction: Direction, box: Box): Array<Part> => {
  const out: Array<Part> = []
  for (const stretch of placesOf(context)) {
    const low = Math.max(stretch.range[0], box.remote[0])
    const high = Math.min(stretch.range[1], box.remote[1])
    if (low > high) continue
    const blockedOf = (atom: string, ports: Interval) =>
      Paths.fromVpc(context.vpc_id, context.paths, direction, atom, stretch.place, box.protocol, ports).blocked
    const parts = (locals: ReadonlySet<string>, pieces: ReadonlyArray<readonly [Interval, Paths.Blocked | null]>) => {
      for (const [ports, blocked] of pieces) {
        out.push({ box: { protocol: box.protocol, ports, remote: [low, high], locals }, blocked })
      }
    }
    if (stretch.place.kind !== "internet" || direction !== "ingress") {
      parts(box.locals, [[box.ports, blockedOf("", box.ports)]])
      continue
    }
    // From the internet, what a path carries depends on the endpoint and port: what is published.
    // Each piece of ports is in one published range or in none, so each is carried whole or not at all.
    const alike = new Map<
      string,
      { readonly locals: Set<string>; readonly pieces: Array<readonly [Interval, Paths.Blocked | null]> }
    >()
    for (const atom of box.locals) {
      const pieces = cut(box.ports, openOn(context, atom, box.protocol)).map((ports) =>
        [ports, blockedOf(atom, ports)] as const
      )
      const key = JSON.stringify(pieces)
      const found = alike.get(key)
      if (found === undefined) alike.set(key, { locals: new Set([atom]), pieces })
      else found.locals.add(atom)
    }
    // A box's own set where a part holds all of it: boxes are merged by their sets' identity.
    for (const { locals, pieces } of alike.values()) {
      parts(locals.size === box.locals.size ? box.locals : locals, pieces)
    }
  }
  return out
}

/** What stops one flow of the VPC's on its path (null: a path carries it). */
export const ofFlow = (context: VpcContext, flow: Flow): Paths.Blocked | null => {
  const remote = flow.remote
  const place: Paths.Place = remote.kind === "vpc"
    ? { kind: "vpc", vpc: remote.vpc_id }
    : placesOf(context).find((s) => s.range[0] <= remote.ip && remote.ip <= s.range[1])!.place
  const atom = flow.local.pod_id !== undefined
    ? `pod:${flow.local.pod_id}`
    : flow.local.subnet_id !== undefined
    ? `subnet:${flow.local.subnet_id}`
    : ""
  const port = flow.port ?? 0
  return Paths.fromVpc(context.vpc_id, context.paths, flow.direction, atom, place, flow.protocol, [port, port]).blocked
}
