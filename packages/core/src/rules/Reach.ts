/**
 * What gets from one end to another, one way for every question. An end stands for a set of
 * local endpoints (atoms, as in `Analysis`), each with its addresses; a flow is one source
 * endpoint and address, one destination endpoint and address, and one port. It gets through
 * when a path carries it (`Paths`: within a VPC, a peering, the internet, what is published) and
 * the source's VPC lets it leave (egress) and the destination's lets it arrive (ingress); an end
 * outside the tenant's VPCs (the internet, an address in no subnet) has no rules of Tenet's on
 * its side. Where no path carries a flow, the path is what stops it, whatever the rules say. Over the flows of two ends the answer has three values: `allowed`
 * (every flow gets through), `partial` (some do, some do not) or `denied` (none does, or there
 * is no flow at all: an end without addresses), with a concrete flow for each side of it.
 *
 * Reachability, explain and evaluate all answer with this module, so one question cannot get
 * two answers. Exact: each direction's partition (`Impact.partition`) says what decides every
 * box of flows, and for a fixed source and destination endpoint and port, the egress verdict
 * depends only on the destination address and the ingress verdict only on the source address,
 * so "some flow gets through" is "some port where both halves allow some address". Pure.
 */
import type { PodId, SubnetId, VpcId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { Direction, FlowProtocol } from "../domain/SecurityRule.js"
import * as Analysis from "./Analysis.js"
import type { Verdict } from "./Evaluate.js"
import * as Impact from "./Impact.js"
import * as Paths from "./Paths.js"
import type { Flow, Rule, VpcContext } from "./RuleSet.js"

export type Interval = readonly [number, number]

/** How many of the flows between two ends get through: every one, some, or none. */
export type Reach = "allowed" | "partial" | "denied"

/** A local endpoint of an end: an atom of its VPC, and the addresses flows use for it. */
export interface Local {
  readonly atom: string
  readonly addresses: ReadonlyArray<Interval>
}

/** An end of a flow: the VPC whose rules judge it (null: none of the tenant's), where it is, and what it stands for. */
export interface End {
  readonly vpc: VpcId | null
  readonly network: Paths.Network
  readonly locals: ReadonlyArray<Local>
}

/** A VPC's rules as they judge flows: each direction's partition, built once per rule set and context. */
export interface Judge {
  readonly context: VpcContext
  readonly egress: ReadonlyArray<Impact.Decided>
  readonly ingress: ReadonlyArray<Impact.Decided>
}

export const judge = (rules: ReadonlyArray<Rule>, context: VpcContext): Judge => ({
  context,
  egress: Impact.partition(rules, context, "egress"),
  ingress: Impact.partition(rules, context, "ingress")
})

/** One flow end to end, and what each half decides of it (null: no rules of Tenet's on that side). */
export interface Path {
  readonly protocol: FlowProtocol
  readonly port: number | null
  readonly source: { readonly vpc: VpcId | null; readonly atom: string; readonly ip: number }
  readonly destination: { readonly vpc: VpcId | null; readonly atom: string; readonly ip: number }
  readonly egress: Verdict | null
  readonly ingress: Verdict | null
  /** What stops the flow on its path (null: a path carries it). */
  readonly route: Paths.Blocked | null
}

/** The answer for the flows of two ends: its reach, a flow that gets through and one that does not. */
export interface Answer {
  readonly reach: Reach
  readonly allowed: Path | null
  readonly denied: Path | null
}

/** Each half alone over the same flows, the path alone, and the whole. */
export interface Explained extends Answer {
  readonly egress: Answer
  readonly ingress: Answer
  readonly route: Answer
}

// Interval sets: sorted, disjoint, not touching.

const normalize = (intervals: ReadonlyArray<Interval>): Array<Interval> => {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0])
  const out: Array<[number, number]> = []
  for (const [from, to] of sorted) {
    const last = out[out.length - 1]
    if (last !== undefined && from <= last[1] + 1) last[1] = Math.max(last[1], to)
    else out.push([from, to])
  }
  return out
}

export const union = (a: ReadonlyArray<Interval>, b: ReadonlyArray<Interval>) => normalize([...a, ...b])

export const intersect = (a: ReadonlyArray<Interval>, b: ReadonlyArray<Interval>): Array<Interval> => {
  const out: Array<Interval> = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    const from = Math.max(a[i]![0], b[j]![0])
    const to = Math.min(a[i]![1], b[j]![1])
    if (from <= to) out.push([from, to])
    if (a[i]![1] < b[j]![1]) i++
    else j++
  }
  return out
}

export const minus = (a: ReadonlyArray<Interval>, b: ReadonlyArray<Interval>): Array<Interval> => {
  const out: Array<Interval> = []
  for (const [from, to] of a) {
    let at = from
    for (const [bFrom, bTo] of b) {
      if (bTo < at || bFrom > to) continue
      if (bFrom > at) out.push([at, bFrom - 1])
      at = Math.max(at, bTo + 1)
    }
    if (at <= to) out.push([at, to])
  }
  return out
}

const contains = (set: ReadonlyArray<Interval>, n: number) => set.some(([from, to]) => from <= n && n <= to)

const rangeOf = (cidr: Net.Cidr): Interval => [Net.networkOf(cidr), Net.broadcastOf(cidr)]

// Ends.

/** The internet's addresses: every one outside the tenant's VPCs and the core network. */
export const internetAddresses = (context: VpcContext): Array<Interval> =>
  minus([[0, 0xffffffff]], normalize([...[...context.vpcs.values()].flat(), ...context.infrastructure].map(rangeOf)))

const blocks = new WeakMap<VpcContext, Map<SubnetId, ReadonlyArray<Interval>>>()

/**
 * A subnet's addresses as flows use them: the hosts of its block (the cluster gives no endpoint
 * its network or broadcast address; a subnet is /8 to /30, so it has both) without the core
 * network (its gateway). A witness of a pod or a subnet is then at an address it can have.
 * One array per context and subnet, shared by its endpoints, so what is computed of an address
 * set is computed once (`halfOf`).
 */
const blockOf = (context: VpcContext, subnet: SubnetId): ReadonlyArray<Interval> => {
  let known = blocks.get(context)
  if (known === undefined) blocks.set(context, known = new Map())
  let block = known.get(subnet)
  if (block === undefined) {
    const cidr = context.subnets.get(subnet)
    block = cidr === undefined
      ? []
      : minus([[Net.networkOf(cidr) + 1, Net.broadcastOf(cidr) - 1]], normalize(context.infrastructure.map(rangeOf)))
    known.set(subnet, block)
  }
  return block
}

const podLocal = (context: VpcContext, pod: PodId): Local => ({
  atom: `pod:${pod}`,
  addresses: blockOf(context, context.pods.get(pod)!)
})

const subnetLocals = (context: VpcContext, subnet: SubnetId): Array<Local> => [
  { atom: `subnet:${subnet}`, addresses: blockOf(context, subnet) },
  ...[...context.pods].filter(([, s]) => s === subnet).map(([pod]) => podLocal(context, pod))
]

/** Where the VPC of `context` is, with its paths. */
const inVpc = (context: VpcContext): Paths.Network => ({ kind: "vpc", vpc: context.vpc_id, paths: context.paths })

const INTERNET: Paths.Network = { kind: "internet" }
const CORE: Paths.Network = { kind: "core" }

/** The ends of the API, each from the context of the VPC it is in. */
export const ends = {
  /** Every address outside the tenant's VPCs and the core network. */
  internet: (context: VpcContext): End => ({
    vpc: null,
    network: INTERNET,
    locals: [{ atom: "", addresses: internetAddresses(context) }]
  }),
  /** One address outside the tenant's subnets: on the core network of `context`'s VPC, or on the internet. */
  outside: (context: VpcContext, ip: number): End => ({
    vpc: null,
    network: context.infrastructure.some((c) => Net.contains(c, ip)) ? CORE : INTERNET,
    locals: [{ atom: "", addresses: [[ip, ip]] }]
  }),
  /** One address in a subnet of the VPC: an endpoint of the subnet that is none of its pods. */
  address: (context: VpcContext, subnet: SubnetId, ip: number): End => ({
    vpc: context.vpc_id,
    network: inVpc(context),
    locals: [{ atom: `subnet:${subnet}`, addresses: [[ip, ip]] }]
  }),
  /** A pod: any host address of its subnet, as the cluster gives pods theirs. */
  pod: (context: VpcContext, pod: PodId): End => ({
    vpc: context.vpc_id,
    network: inVpc(context),
    locals: [podLocal(context, pod)]
  }),
  /** A subnet: its pods and every other endpoint in it. */
  subnet: (context: VpcContext, subnet: SubnetId): End => ({
    vpc: context.vpc_id,
    network: inVpc(context),
    locals: subnetLocals(context, subnet)
  }),
  /** A VPC: every endpoint of its subnets (a VPC without subnets has no address to send from or to). */
  vpc: (context: VpcContext): End => ({
    vpc: context.vpc_id,
    network: inVpc(context),
    locals: [...context.subnets.keys()].flatMap((subnet) => subnetLocals(context, subnet))
  })
}

// Halves.

interface Region {
  readonly ports: Interval
  readonly remote: Interval
  readonly verdict: Verdict | null
}

/**
 * The boxes of flows one half decides for a local atom against remote addresses on `ports`,
 * each with what decides it; an end outside the tenant's VPCs passes everything (null).
 */
const partsByAtom = new WeakMap<Judge, Map<string, ReadonlyArray<Impact.Decided>>>()

/** The parts of a direction's partition that hold flows of `atom` on `protocol`: a few of them. */
const partsOf = (judged: Judge, direction: Direction, protocol: FlowProtocol, atom: string) => {
  let known = partsByAtom.get(judged)
  if (known === undefined) partsByAtom.set(judged, known = new Map())
  const key = `${direction}|${protocol}|${atom}`
  let parts = known.get(key)
  if (parts === undefined) {
    parts = (direction === "egress" ? judged.egress : judged.ingress).filter((part) =>
      part.box.protocol === protocol && part.box.locals.has(atom)
    )
    known.set(key, parts)
  }
  return parts
}

const regions = (
  judged: Judge | undefined,
  direction: Direction,
  atom: string,
  protocol: FlowProtocol,
  ports: Interval,
  remote: ReadonlyArray<Interval>
): Array<Region> => {
  if (judged === undefined) return remote.map((r) => ({ ports, remote: r, verdict: null }))
  const out: Array<Region> = []
  for (const part of partsOf(judged, direction, protocol, atom)) {
    const box = part.box
    const from = Math.max(box.ports[0], ports[0])
    const to = Math.min(box.ports[1], ports[1])
    if (from > to) continue
    for (const r of remote) {
      const low = Math.max(box.remote[0], r[0])
      const high = Math.min(box.remote[1], r[1])
      if (low <= high) out.push({ ports: [from, to], remote: [low, high], verdict: part.verdict })
    }
  }
  return out
}

const passes = (region: Region) => region.verdict === null || region.verdict.action === "allow"

/** The ports on which some region of `regions` allows, and on which some denies. */
const portsOf = (found: ReadonlyArray<Region>) => ({
  allow: normalize(found.filter(passes).map((r) => r.ports)),
  deny: normalize(found.filter((r) => !passes(r)).map((r) => r.ports))
})

/** What decides the flow of `atom` with `remote` on `port` in a half (null outside the tenant's VPCs). */
const decide = (
  judged: Judge | undefined,
  direction: Direction,
  atom: string,
  protocol: FlowProtocol,
  port: number,
  remote: number
): Verdict | null => regions(judged, direction, atom, protocol, [port, port], [[remote, remote]])[0]?.verdict ?? null

/** The protocol's port axis: every port for tcp and udp, icmp's one "port". */
export const portsFor = (protocol: FlowProtocol): Interval =>
  protocol === "icmp" ? Analysis.NO_PORT : Analysis.ALL_PORTS

/** A flow for the API: icmp has no port. */
const portOf = (protocol: FlowProtocol, port: number) => (protocol === "icmp" ? null : port)

/** Where one half allows and denies some flow of an atom against an address set, by port. */
interface HalfPorts {
  readonly allow: ReadonlyArray<Interval>
  readonly deny: ReadonlyArray<Interval>
}

/**
 * What one computation of many pairs (a matrix) has found of halves, by judge, direction,
 * protocol, port range, atom and address set: it asks the same of an atom and an address set
 * for many pairs of ends. Kept for that computation only.
 */
export type Memo = Map<string, HalfPorts>

export const memo = (): Memo => new Map()

const judgeIds = new WeakMap<Judge, number>()
const addressIds = new WeakMap<ReadonlyArray<Interval>, number>()
let nextId = 0

const idOf = <K extends object>(ids: WeakMap<K, number>, key: K) => {
  let id = ids.get(key)
  if (id === undefined) ids.set(key, id = nextId++)
  return id
}

/** `portsOf` the half's regions, from `kept` when it has them. */
const halfOf = (
  kept: Memo | undefined,
  judged: Judge | undefined,
  direction: Direction,
  atom: string,
  protocol: FlowProtocol,
  ports: Interval,
  remote: ReadonlyArray<Interval>
): HalfPorts => {
  if (judged === undefined) return { allow: [ports], deny: [] }
  if (kept === undefined) return portsOf(regions(judged, direction, atom, protocol, ports, remote))
  const key = `${idOf(judgeIds, judged)}|${direction}|${protocol}|${ports[0]}-${ports[1]}|${atom}|${
    idOf(addressIds, remote)
  }`
  let found = kept.get(key)
  if (found === undefined) {
    found = portsOf(regions(judged, direction, atom, protocol, ports, remote))
    kept.set(key, found)
  }
  return found
}

/**
 * A pair of local endpoints of the two ends, on `protocol` and `ports`: where each half
 * allows and denies some of their flows, and (for witnesses) the regions behind it.
 */
interface PairFacts {
  readonly source: Local
  readonly destination: Local
  readonly egress: HalfPorts
  readonly ingress: HalfPorts
  /** Where a path carries their flows, and what stops the rest. */
  readonly route: HalfPorts
  readonly blocked: Paths.Blocked | null
  readonly regions: () => { readonly egress: ReadonlyArray<Region>; readonly ingress: ReadonlyArray<Region> }
}

/** A question about the flows between two ends on a protocol and ports, with the facts of its pairs of endpoints. */
const judgeOf = (judges: ReadonlyMap<VpcId, Judge>, end: End) => (end.vpc === null ? undefined : judges.get(end.vpc))

interface Question {
  readonly judges: ReadonlyMap<VpcId, Judge>
  readonly from: End
  readonly to: End
  readonly protocol: FlowProtocol
  readonly facts: ReadonlyArray<PairFacts>
}

/**
 * Each atom of a judge's VPC by its class: the atoms of one class are in exactly the same parts
 * of both directions' partitions (the same sets of local endpoints, by identity), so the rules
 * judge every flow of one the same as the same flow of another. Most of a VPC's pods are alike:
 * the pods of a subnet that no rule names one by one form one class.
 */
const classes = new WeakMap<Judge, ReadonlyMap<string, number>>()

const classOf = (judged: Judge, atom: string): number => {
  let known = classes.get(judged)
  if (known === undefined) {
    const sets = new Map<ReadonlySet<string>, number>()
    for (const part of [...judged.egress, ...judged.ingress]) {
      if (!sets.has(part.box.locals)) sets.set(part.box.locals, sets.size)
    }
    const memberships = new Map<string, Array<number>>()
    for (const [set, id] of sets) {
      for (const member of set) {
        const of = memberships.get(member)
        if (of === undefined) memberships.set(member, [id])
        else of.push(id)
      }
    }
    const ids = new Map<string, number>()
    const byAtom = new Map<string, number>()
    for (const [member, of] of memberships) {
      const signature = of.join(",")
      let id = ids.get(signature)
      if (id === undefined) ids.set(signature, id = ids.size)
      byAtom.set(member, id)
    }
    classes.set(judged, known = byAtom)
  }
  return known.get(atom) ?? -1
}

/**
 * An end's local endpoints with one of each class, address set and path kept (the first): every
 * flow of another is judged and carried as the same flow of the one kept, so a question's answer, and the first
 * flow found of each side, are the same over the locals kept as over all of them. A subnet of
 * 500 alike pods is two locals (its other endpoints, its pods), not 501.
 */
const distinctLocals = new WeakMap<ReadonlyArray<Local>, WeakMap<Judge, ReadonlyArray<Local>>>()

const distinct = (judged: Judge | undefined, locals: ReadonlyArray<Local>): ReadonlyArray<Local> => {
  if (judged === undefined || locals.length < 2) return locals
  let byJudge = distinctLocals.get(locals)
  if (byJudge === undefined) distinctLocals.set(locals, byJudge = new WeakMap())
  let kept = byJudge.get(judged)
  if (kept === undefined) {
    const seen = new Set<string>()
    const published = judged.context.paths.published
    kept = locals.filter((local) => {
      // A published pod has paths of its own (from the internet): it is a class of its own.
      const own = local.atom.startsWith("pod:") && published.has(local.atom.slice(4) as PodId) ? local.atom : ""
      const key = `${classOf(judged, local.atom)}|${idOf(addressIds, local.addresses)}|${own}`
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
    byJudge.set(judged, kept)
  }
  return kept
}

const ask = (
  judges: ReadonlyMap<VpcId, Judge>,
  from: End,
  to: End,
  protocol: FlowProtocol,
  ports: Interval,
  kept?: Memo
): Question => {
  const leaving = judgeOf(judges, from)
  const arriving = judgeOf(judges, to)
  const facts: Array<PairFacts> = []
  const destinations = distinct(arriving, to.locals)
  for (const source of distinct(leaving, from.locals)) {
    if (source.addresses.length === 0) continue
    for (const destination of destinations) {
      if (destination.addresses.length === 0) continue
      const carried = Paths.route(from.network, to.network, destination.atom, protocol, ports)
      facts.push({
        source,
        destination,
        route: { allow: carried.ports, deny: minus([ports], carried.ports) },
        blocked: carried.blocked,
        egress: halfOf(kept, leaving, "egress", source.atom, protocol, ports, destination.addresses),
        ingress: halfOf(kept, arriving, "ingress", destination.atom, protocol, ports, source.addresses),
        regions: () => ({
          egress: regions(leaving, "egress", source.atom, protocol, ports, destination.addresses),
          ingress: regions(arriving, "ingress", destination.atom, protocol, ports, source.addresses)
        })
      })
    }
  }
  return { judges, from, to, protocol, facts }
}

/** The first address of a set that is a host of it where one is (a block's network address is not). */
const hostIn = (r: Interval) => (r[1] - r[0] >= 2 ? r[0] + 1 : r[0])

/** The flow of a pair of endpoints from one address to another on `port`, with what each half and the path decide. */
const pathOf = (q: Question, fact: PairFacts, port: number, sourceIp: number, destinationIp: number): Path => ({
  protocol: q.protocol,
  port: portOf(q.protocol, port),
  source: { vpc: q.from.vpc, atom: fact.source.atom, ip: sourceIp },
  destination: { vpc: q.to.vpc, atom: fact.destination.atom, ip: destinationIp },
  egress: decide(judgeOf(q.judges, q.from), "egress", fact.source.atom, q.protocol, port, destinationIp),
  ingress: decide(judgeOf(q.judges, q.to), "ingress", fact.destination.atom, q.protocol, port, sourceIp),
  route: contains(fact.route.allow, port) ? null : fact.blocked
})

/**
 * What a question judges: the path (`route`) and the halves it names. End to end is all three;
 * explain also asks each alone; evaluate asks one half on the paths that carry it.
 */
interface Part {
  readonly route: boolean
  readonly egress: boolean
  readonly ingress: boolean
}

const END_TO_END: Part = { route: true, egress: true, ingress: true }
const ROUTE_ALONE: Part = { route: true, egress: false, ingress: false }
const EGRESS_ALONE: Part = { route: false, egress: true, ingress: false }
const INGRESS_ALONE: Part = { route: false, egress: false, ingress: true }

/** A flow on `port` that what `part` judges lets through, if one is. */
const passing = (q: Question, port: number, part: Part): Path | null => {
  const at = (r: Region) => passes(r) && r.ports[0] <= port && port <= r.ports[1]
  for (const fact of q.facts) {
    if (part.route && !contains(fact.route.allow, port)) continue
    if (part.egress && !contains(fact.egress.allow, port)) continue
    if (part.ingress && !contains(fact.ingress.allow, port)) continue
    const found = fact.regions()
    const egress = part.egress ? found.egress.find(at) : undefined
    const ingress = part.ingress ? found.ingress.find(at) : undefined
    if ((part.egress && egress === undefined) || (part.ingress && ingress === undefined)) continue
    const destinationIp = egress === undefined ? hostIn(fact.destination.addresses[0]!) : hostIn(egress.remote)
    const sourceIp = ingress === undefined ? hostIn(fact.source.addresses[0]!) : hostIn(ingress.remote)
    return pathOf(q, fact, port, sourceIp, destinationIp)
  }
  return null
}

/**
 * A flow on `port` that what `part` judges stops, if one is: where no path carries a flow, the
 * path is what stops it (a packet without a route never meets the rules), then egress, then
 * ingress.
 */
const stopped = (q: Question, port: number, part: Part): Path | null => {
  if (part.route) {
    const fact = q.facts.find((f) => contains(f.route.deny, port))
    if (fact !== undefined) {
      return pathOf(q, fact, port, hostIn(fact.source.addresses[0]!), hostIn(fact.destination.addresses[0]!))
    }
  }
  const at = (r: Region) => !passes(r) && r.ports[0] <= port && port <= r.ports[1]
  for (const fact of q.facts) {
    const stops = (part.egress && contains(fact.egress.deny, port)) ||
      (part.ingress && contains(fact.ingress.deny, port))
    if (!stops) continue
    const found = fact.regions()
    const egress = part.egress ? found.egress.find(at) : undefined
    if (egress !== undefined) {
      return pathOf(q, fact, port, hostIn(fact.source.addresses[0]!), hostIn(egress.remote))
    }
    const ingress = part.ingress ? found.ingress.find(at) : undefined
    if (ingress !== undefined) {
      return pathOf(q, fact, port, hostIn(ingress.remote), hostIn(fact.destination.addresses[0]!))
    }
  }
  return null
}

/** The ports on which some flow gets through end to end (the path and both halves), and on which some does not. */
const spread = (facts: ReadonlyArray<PairFacts>) => {
  let allow: Array<Interval> = []
  let deny: Array<Interval> = []
  for (const fact of facts) {
    allow = union(allow, intersect(fact.route.allow, intersect(fact.egress.allow, fact.ingress.allow)))
    deny = union(deny, union(fact.route.deny, union(fact.egress.deny, fact.ingress.deny)))
  }
  return { allow, deny }
}

const reachOf = (someAllowed: boolean, someDenied: boolean): Reach =>
  !someAllowed ? "denied" : someDenied ? "partial" : "allowed"

/** The answer on one port (icmp: its one "port"), from the facts of its ports. */
const answerAt = (q: Question, port: number, part: Part): Answer => {
  const allowed = passing(q, port, part)
  const denied = stopped(q, port, part)
  return { reach: reachOf(allowed !== null, denied !== null), allowed, denied }
}

/**
 * The flows from `from` to `to` on `protocol` and `port` (none for icmp), end to end and each
 * half alone. `judges`: the rules of every VPC either end is in.
 */
export const explain = (
  judges: ReadonlyMap<VpcId, Judge>,
  from: End,
  to: End,
  protocol: FlowProtocol,
  port: number | null
): Explained => {
  const at = protocol === "icmp" ? Analysis.NO_PORT[0] : port!
  const q = ask(judges, from, to, protocol, [at, at])
  return {
    ...answerAt(q, at, END_TO_END),
    egress: answerAt(q, at, EGRESS_ALONE),
    ingress: answerAt(q, at, INGRESS_ALONE),
    route: answerAt(q, at, ROUTE_ALONE)
  }
}

/** One protocol of a pair: the ports every flow gets through on, those some do, and a witness of each side of the first partial port. */
export interface Ports {
  readonly allowed: ReadonlyArray<Interval>
  readonly partial: ReadonlyArray<Interval>
  readonly witness: Answer | null
}

/** The flows from `from` to `to` on every port of `protocol`, end to end; `kept` shares what many pairs ask. */
export const ports = (
  judges: ReadonlyMap<VpcId, Judge>,
  from: End,
  to: End,
  protocol: FlowProtocol,
  kept?: Memo
): Ports => {
  const q = ask(judges, from, to, protocol, portsFor(protocol), kept)
  const { allow, deny } = spread(q.facts)
  const partial = intersect(allow, deny)
  return {
    allowed: minus(allow, deny),
    partial,
    witness: partial.length === 0 ? null : answerAt(q, partial[0]![0], END_TO_END)
  }
}

/** The answer of a port set on one port: where the port falls. */
export const reachAt = (answer: Ports, port: number): Reach =>
  contains(answer.allowed, port) ? "allowed" : contains(answer.partial, port) ? "partial" : "denied"

/**
 * One half's question (`evaluate`): the flows of `direction` between a VPC's `local` end and
 * `remote` (where it is: `network`), judged by that VPC's rules, on the paths that carry them:
 * where none does, the path is what stops them.
 */
export const half = (
  judged: Judge,
  direction: Direction,
  local: ReadonlyArray<string>,
  remote: { readonly network: Paths.Network; readonly addresses: ReadonlyArray<Interval> },
  protocol: FlowProtocol,
  port: number | null
): Answer => {
  const vpc = judged.context.vpc_id
  const judges = new Map([[vpc, judged]])
  const at = protocol === "icmp" ? Analysis.NO_PORT[0] : port!
  const here: End = {
    vpc,
    network: inVpc(judged.context),
    locals: local.map((atom) => ({ atom, addresses: [[0, 0]] }))
  }
  const there: End = { vpc: null, network: remote.network, locals: [{ atom: "", addresses: remote.addresses }] }
  const [from, to] = direction === "egress" ? [here, there] : [there, here]
  const part = { route: true, egress: direction === "egress", ingress: direction === "ingress" }
  return answerAt(ask(judges, from, to, protocol, [at, at]), at, part)
}

/** The local end of a half as a flow (`Flow.local`) names it. */
export const localOf = (atom: string): Flow["local"] =>
  atom.startsWith("pod:")
    ? { pod_id: atom.slice(4) as PodId }
    : atom.startsWith("subnet:")
    ? { subnet_id: atom.slice(7) as SubnetId }
    : {}
