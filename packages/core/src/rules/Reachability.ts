/**
 * Reachability: for each pair of a VPC's endpoints (its subnets, its pods, the internet, the
 * tenant's other VPCs), the ports and protocols on which every flow from one to the other is
 * allowed end to end: by the egress rules where it leaves (the source's VPC) and the ingress
 * rules where it arrives (the destination's). An endpoint holds a set of local atoms (as in
 * `Analysis`) and a set of addresses (a pod: its subnet's block; the internet: every address
 * outside the tenant's VPCs and the core network). A port is reachable when no flow between
 * any of the source's addresses and atoms and any of the destination's is denied. Exact: the
 * partitions (`Impact.partition`) say which boxes are denied. Pure.
 */
import type { PodId, SubnetId, VpcId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { FlowProtocol } from "../domain/SecurityRule.js"
import * as Analysis from "./Analysis.js"
import type { Box } from "./Analysis.js"
import * as Impact from "./Impact.js"
import type { Rule, VpcContext } from "./RuleSet.js"

type Interval = readonly [number, number]

export type Endpoint =
  | { readonly kind: "subnet"; readonly subnet_id: SubnetId }
  | { readonly kind: "pod"; readonly pod_id: PodId }
  | { readonly kind: "internet" }
  | { readonly kind: "vpc"; readonly vpc_id: VpcId }

/** Per protocol, the ports on which every flow is allowed (icmp: [0, 0] or nothing). */
export type Reach = Readonly<Record<FlowProtocol, ReadonlyArray<Interval>>>

export interface Pair {
  readonly from: Endpoint
  readonly to: Endpoint
  readonly reach: Reach
}

/** A VPC's rules with the context they resolve in. */
export interface RuleSetOf {
  readonly rules: ReadonlyArray<Rule>
  readonly context: VpcContext
}

const interval = (cidr: Net.Cidr): Interval => [Net.networkOf(cidr), Net.broadcastOf(cidr)]

/** The parts of `[0, 2^32)` outside `taken`, in order. */
const complement = (taken: ReadonlyArray<Interval>): Array<Interval> => {
  const sorted = [...taken].sort((a, b) => a[0] - b[0])
  const out: Array<Interval> = []
  let at = 0
  for (const [from, to] of sorted) {
    if (from > at) out.push([at, from - 1])
    at = Math.max(at, to + 1)
  }
  if (at <= 0xffffffff) out.push([at, 0xffffffff])
  return out
}

/** The internet's addresses: every one outside the tenant's VPCs and the core network. */
export const internetOf = (context: VpcContext): Array<Interval> =>
  complement([...[...context.vpcs.values()].flat().map(interval), ...context.infrastructure.map(interval)])

/** The deny boxes of a partition, by local atom, for quick lookup. */
const deniedByAtom = (parts: ReadonlyArray<Impact.Decided>): Map<string, Array<Box>> => {
  const byAtom = new Map<string, Array<Box>>()
  for (const part of parts) {
    if (part.verdict.action !== "deny") continue
    for (const atom of part.box.locals) {
      let boxes = byAtom.get(atom)
      if (boxes === undefined) byAtom.set(atom, boxes = [])
      boxes.push(part.box)
    }
  }
  return byAtom
}

interface Side {
  readonly atoms: ReadonlyArray<string>
  readonly addresses: ReadonlyArray<Interval>
}

const overlaps = (a: Interval, b: Interval) => a[0] <= b[1] && b[0] <= a[1]

/** Removes from `ports` the ports some denied box of `atoms` takes for a remote in `remote`. */
const deny = (
  ports: Record<FlowProtocol, Array<Interval>>,
  denied: ReadonlyMap<string, ReadonlyArray<Box>>,
  atoms: ReadonlyArray<string>,
  remote: ReadonlyArray<Interval>
) => {
  for (const atom of atoms) {
    for (const box of denied.get(atom) ?? []) {
      if (!remote.some((r) => overlaps(r, box.remote))) continue
      ports[box.protocol] = ports[box.protocol].flatMap((p) =>
        overlaps(p, box.ports)
          ? [
            ...(p[0] < box.ports[0] ? [[p[0], box.ports[0] - 1] as const] : []),
            ...(p[1] > box.ports[1] ? [[box.ports[1] + 1, p[1]] as const] : [])
          ]
          : [p]
      )
    }
  }
}

/**
 * Every ordered pair of endpoints with at least one end in the VPC, and what reaches across.
 * `others` are the tenant's other VPCs with their rules (their egress decides what leaves them).
 */
export const matrix = (own: RuleSetOf, others: ReadonlyMap<VpcId, RuleSetOf>): Array<Pair> => {
  const context = own.context
  const partitions = (set: RuleSetOf) => ({
    egress: deniedByAtom(Impact.partition(set.rules, set.context, "egress")),
    ingress: deniedByAtom(Impact.partition(set.rules, set.context, "ingress"))
  })
  const mine = partitions(own)
  const theirs = new Map([...others].map(([id, set]) => [id, partitions(set)]))
  const internet = internetOf(context)

  const inside: Array<{ endpoint: Endpoint; side: Side }> = [
    ...[...context.subnets].map(([subnet_id, cidr]) => ({
      endpoint: { kind: "subnet" as const, subnet_id },
      side: { atoms: [`subnet:${subnet_id}`], addresses: [interval(cidr)] }
    })),
    ...[...context.pods].map(([pod_id, subnet]) => ({
      endpoint: { kind: "pod" as const, pod_id },
      side: { atoms: [`pod:${pod_id}`], addresses: [interval(context.subnets.get(subnet)!)] }
    }))
  ]
  const outside: Array<{ endpoint: Endpoint; side: Side; vpc?: VpcId }> = [
    { endpoint: { kind: "internet" }, side: { atoms: [], addresses: internet } },
    ...[...context.vpcs].filter(([id]) => id !== context.vpc_id && others.has(id)).map(([vpc_id, blocks]) => ({
      endpoint: { kind: "vpc" as const, vpc_id },
      side: { atoms: [...Analysis.universe(others.get(vpc_id)!.context)], addresses: blocks.map(interval) },
      vpc: vpc_id
    }))
  ]

  const everyPort = (): Record<FlowProtocol, Array<Interval>> => ({
    tcp: [Analysis.ALL_PORTS],
    udp: [Analysis.ALL_PORTS],
    icmp: [Analysis.NO_PORT]
  })

  const pairs: Array<Pair> = []
  const add = (
    from: Endpoint,
    to: Endpoint,
    leaving: { denied: ReadonlyMap<string, ReadonlyArray<Box>>; side: Side } | null,
    arriving: { denied: ReadonlyMap<string, ReadonlyArray<Box>>; side: Side } | null,
    fromSide: Side,
    toSide: Side
  ) => {
    const ports = everyPort()
    if (leaving !== null) deny(ports, leaving.denied, leaving.side.atoms, toSide.addresses)
    if (arriving !== null) deny(ports, arriving.denied, arriving.side.atoms, fromSide.addresses)
    pairs.push({ from, to, reach: ports })
  }

  for (const a of inside) {
    for (const b of inside) {
      if (a === b && a.endpoint.kind === "pod") continue
      add(
        a.endpoint,
        b.endpoint,
        { denied: mine.egress, side: a.side },
        { denied: mine.ingress, side: b.side },
        a.side,
        b.side
      )
    }
    for (const o of outside) {
      const peer = o.vpc === undefined ? undefined : theirs.get(o.vpc)
      add(
        a.endpoint,
        o.endpoint,
        { denied: mine.egress, side: a.side },
        peer === undefined ? null : { denied: peer.ingress, side: o.side },
        a.side,
        o.side
      )
      add(
        o.endpoint,
        a.endpoint,
        peer === undefined ? null : { denied: peer.egress, side: o.side },
        { denied: mine.ingress, side: a.side },
        o.side,
        a.side
      )
    }
  }
  return pairs
}

/** Whether flows of `protocol` to `port` (none for icmp) are in the reach. */
export const reaches = (reach: Reach, protocol: FlowProtocol, port: number | null): boolean =>
  reach[protocol].some(([from, to]) => protocol === "icmp" || (port !== null && from <= port && port <= to))
