/**
 * What carries a flow beside the firewall: the paths the platform gives a tenant's traffic.
 * On Kube-OVN each VPC is a logical router of its own, so a packet gets from one end to the
 * other only where a route carries it, and both firewall halves judge it only then:
 *
 * - within a VPC: always (its subnets hang off one router);
 * - between two of the tenant's VPCs: when they are peered. Two VPCs are peered while an enabled
 *   allow rule of either names the other (`remote_type: vpc`) and no block of one overlaps a
 *   block of the other (no route could tell the two apart; such a rule is refused, and one left
 *   from before is reported `remote_vpc_overlaps`). A deny rule, a disabled rule or a CIDR that
 *   covers another VPC's blocks peers nothing;
 * - to the internet: when the VPC has `enable_internet` and the platform an uplink (the provider
 *   configuration): its default route and SNAT;
 * - from the internet: only what is published, on the published protocol and port, with the
 *   client's address as source: a pod's `external_inbound` (its service port, tcp and udp) and a
 *   `udp` tunnel (udp on its port), in a VPC whose replies can leave (one with the internet).
 *   Other tunnels arrive from their connector on the peering network: the core network;
 * - the core network (platform DNS, gateways, tunnel connectors): always, both ways.
 *
 * Pure.
 */
import type { PodId, VpcId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { FlowProtocol } from "../domain/SecurityRule.js"

export type Interval = readonly [number, number]

/** Which part of the path stops a flow. */
export type Reason = "no_route" | "no_internet" | "not_published"

/** What stops the flows a path does not carry, as the API says it. */
export interface Blocked {
  readonly reason: Reason
  readonly detail: string
}

/** The ports a pod is published on from the internet, by protocol. */
export interface Published {
  readonly name: string
  readonly tcp: ReadonlyArray<Interval>
  readonly udp: ReadonlyArray<Interval>
}

/** What the platform gives one VPC's traffic. */
export interface VpcPaths {
  readonly name: string
  /** Null: the VPC reaches the internet (a default route and SNAT); otherwise why it does not. */
  readonly internet: string | null
  /** The VPCs peered with this one. */
  readonly peers: ReadonlySet<VpcId>
  /** The VPCs a rule of either names whose blocks overlap this one's (never peered), with the two blocks. */
  readonly overlaps: ReadonlyMap<VpcId, string>
  /** The VPC's published pods. */
  readonly published: ReadonlyMap<PodId, Published>
  /** The tenant's VPCs' names (those in force), for what says which VPC no route reaches. */
  readonly names: ReadonlyMap<VpcId, string>
}

/** Where an end of a flow is: in a VPC of the tenant's, on the core network, or on the internet. */
export type Network =
  | { readonly kind: "vpc"; readonly vpc: VpcId; readonly paths: VpcPaths }
  | { readonly kind: "core" }
  | { readonly kind: "internet" }

/** The ports a path carries of the ones asked about, and what stops the rest (null when none is stopped). */
export interface Carried {
  readonly ports: ReadonlyArray<Interval>
  readonly blocked: Blocked | null
}

const ALL = (ports: Interval): Carried => ({ ports: [ports], blocked: null })
const NONE = (reason: Reason, detail: string): Carried => ({ ports: [], blocked: { reason, detail } })

const intersect = (a: ReadonlyArray<Interval>, b: Interval): Array<Interval> =>
  a.flatMap(([from, to]) => {
    const low = Math.max(from, b[0])
    const high = Math.min(to, b[1])
    return low <= high ? [[low, high] as const] : []
  })

const formatPorts = (ports: ReadonlyArray<Interval>) =>
  ports.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(",")

/** Why the internet reaches no endpoint but a published pod: one reason for all, so answers over many endpoints group them. */
const UNPUBLISHED =
  "nothing published: the internet reaches only published pods (a pod's external_inbound port, a udp tunnel's)"

/** What is published into `to` (an endpoint `atom` of its VPC) from the internet on `protocol` and `ports`. */
const published = (to: VpcPaths, atom: string, protocol: FlowProtocol, ports: Interval): Carried => {
  const pod = atom.startsWith("pod:") ? to.published.get(atom.slice(4) as PodId) : undefined
  const open = pod === undefined || protocol === "icmp" ? [] : pod[protocol]
  const carried = intersect(open, ports)
  if (carried.length > 0 && to.internet !== null) {
    return NONE("no_internet", `VPC '${to.name}' has no internet: what it publishes cannot answer (${to.internet})`)
  }
  if (carried.length === 1 && carried[0]![0] === ports[0] && carried[0]![1] === ports[1]) return ALL(ports)
  const detail = pod === undefined
    ? UNPUBLISHED
    : open.length === 0
    ? `nothing published on ${protocol} for pod '${pod.name}'`
    : `pod '${pod.name}' is published on ${protocol} ${formatPorts(open)} only`
  return { ports: carried, blocked: { reason: "not_published", detail } }
}

/**
 * The flows from `from` to an endpoint `toAtom` of `to` on `protocol` and
 * `ports` that a path carries, and what stops the rest.
 */
export const route = (
  from: Network,
  to: Network,
  toAtom: string,
  protocol: FlowProtocol,
  ports: Interval
): Carried => {
  if (from.kind === "core" || to.kind === "core") return ALL(ports)
  if (from.kind === "vpc" && to.kind === "vpc") {
    return from.vpc === to.vpc ? ALL(ports) : acrossVpcs(from.paths, to.vpc, from.paths.name, to.paths.name, ports)
  }
  if (from.kind === "vpc") return outToInternet(from.paths, ports)
  if (to.kind === "vpc") return published(to.paths, toAtom, protocol, ports)
  return ALL(ports)
}

/**
 * Between two VPCs (`paths` of either: peerings and overlaps are the same from both sides), from
 * the one named `from` to the one named `to`.
 */
const acrossVpcs = (paths: VpcPaths, other: VpcId, from: string, to: string, ports: Interval): Carried => {
  if (paths.peers.has(other)) return ALL(ports)
  const overlap = paths.overlaps.get(other)
  return NONE(
    "no_route",
    overlap === undefined
      ? `no route from VPC '${from}' to VPC '${to}': they are not peered ` +
        "(no enabled allow rule of either names the other)"
      : `no route from VPC '${from}' to VPC '${to}': ${overlap}, so they cannot be peered`
  )
}

const outToInternet = (paths: VpcPaths, ports: Interval): Carried =>
  paths.internet === null ? ALL(ports) : NONE("no_internet", `VPC '${paths.name}' has no internet (${paths.internet})`)

/** Where the remote end of a VPC's flow is, seen from the VPC: one of the tenant's VPCs (itself too), the core network, the internet. */
export type Place =
  | { readonly kind: "vpc"; readonly vpc: VpcId }
  | { readonly kind: "core" }
  | { readonly kind: "internet" }

/**
 * `route` seen from one VPC (`vpc`, with its `paths`): the flows of `direction` between its
 * endpoint `atom` and an address at `place`. What a VPC's own answers (impact, guardrails) ask,
 * knowing the other end only by where it is.
 */
export const fromVpc = (
  vpc: VpcId,
  paths: VpcPaths,
  direction: "ingress" | "egress",
  atom: string,
  place: Place,
  protocol: FlowProtocol,
  ports: Interval
): Carried => {
  switch (place.kind) {
    case "core":
      return ALL(ports)
    case "vpc": {
      if (place.vpc === vpc) return ALL(ports)
      const other = paths.names.get(place.vpc) ?? place.vpc
      return direction === "egress"
        ? acrossVpcs(paths, place.vpc, paths.name, other, ports)
        : acrossVpcs(paths, place.vpc, other, paths.name, ports)
    }
    case "internet":
      return direction === "egress" ? outToInternet(paths, ports) : published(paths, atom, protocol, ports)
  }
}

/** The tenant's records the paths are made of. */
export interface Surroundings {
  readonly vpcs: ReadonlyArray<
    { readonly id: VpcId; readonly name: string; readonly enable_internet: boolean; readonly lifecycle: string }
  >
  readonly subnets: ReadonlyArray<{ readonly vpc_id: VpcId; readonly cidr: string }>
  readonly rules: ReadonlyArray<
    {
      readonly vpc_id: VpcId
      readonly remote_vpc_id: VpcId | null
      readonly action: string
      readonly enabled: boolean
    }
  >
}

/** A peered pair's link, from one side: this router's address with the link's prefix, and the other's address. */
export interface Link {
  /** `169.254.0.1/30` */
  readonly local: string
  /** `169.254.0.2`: the next hop of the routes to the other's blocks. */
  readonly remote: string
}

/** Between the tenant's VPCs: which are peered (with the link of each pair), and which an allow rule names but overlap. */
export interface Connections {
  readonly peers: ReadonlyMap<VpcId, ReadonlySet<VpcId>>
  readonly overlaps: ReadonlyMap<VpcId, ReadonlyMap<VpcId, string>>
  /** Each peered pair's link, from either side: `links.get(a).get(b).local` is a's address. */
  readonly links: ReadonlyMap<VpcId, ReadonlyMap<VpcId, Link>>
  /** The names of the VPCs in force. */
  readonly names: ReadonlyMap<VpcId, string>
}

/** Where links are cut from: 169.254.0.0/16, link-local, which no route leaves a router for. */
const LINK_BLOCK = Net.ipv4Of("169.254.0.0")
const LINK_SLOTS = 16_384
/**
 * The /30s of link-local addresses a pod may ask for by name: the cloud metadata address
 * (169.254.169.254) and node-local DNS (169.254.20.10). No link takes them.
 */
const RESERVED_SLOTS: ReadonlySet<number> = new Set(
  ["169.254.169.254", "169.254.20.10"].map((ip) => Math.floor((Net.ipv4Of(ip) - LINK_BLOCK) / 4))
)

/** A string's FNV-1a hash: where a pair's link is looked for first, the same on every replica. */
const fnv1a = (text: string) => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0
  return hash
}

/**
 * A /30 for each peered pair, as Kube-OVN's peering needs one (a router port each side), none
 * shared by two pairs of one router. A pair's /30 is where its ids hash to, or the next free one
 * for both routers, so every replica cuts the same links from the same pairs. A pair that moved
 * on past another of its routers' pairs moves back when that one goes: a change to a VPC's
 * peerings is applied to its peers' peers too (`SecurityRules`, `Vpcs`).
 */
const linksOf = (peers: ReadonlyMap<VpcId, ReadonlySet<VpcId>>) => {
  const pairs = [...peers].flatMap(([a, others]) => [...others].filter((b) => a < b).map((b) => [a, b] as const))
    .sort(([a1, b1], [a2, b2]) => (a1 + b1 < a2 + b2 ? -1 : a1 + b1 > a2 + b2 ? 1 : 0))
  const taken = new Map<VpcId, Set<number>>()
  const links = new Map<VpcId, Map<VpcId, Link>>()
  for (const [a, b] of pairs) {
    const usedA = entry(taken, a, () => new Set())
    const usedB = entry(taken, b, () => new Set())
    let slot = fnv1a(`${a}|${b}`) % LINK_SLOTS
    while (usedA.has(slot) || usedB.has(slot) || RESERVED_SLOTS.has(slot)) slot = (slot + 1) % LINK_SLOTS
    usedA.add(slot)
    usedB.add(slot)
    const address = (n: number) => Net.formatIpv4(LINK_BLOCK + slot * 4 + n)
    entry(links, a, () => new Map()).set(b, { local: `${address(1)}/30`, remote: address(2) })
    entry(links, b, () => new Map()).set(a, { local: `${address(2)}/30`, remote: address(1) })
  }
  return links
}

/** `map`'s value for `key`, made (and kept) when it has none. */
const entry = <K, V>(map: Map<K, V>, key: K, make: () => V): V => {
  let found = map.get(key)
  if (found === undefined) map.set(key, found = make())
  return found
}

/** The first block of `a` that overlaps one of `b`, as the two blocks. */
export const overlapOf = (
  a: ReadonlyArray<string>,
  b: ReadonlyArray<string>
): readonly [string, string] | undefined => {
  for (const x of a) {
    for (const y of b) {
      if (Net.overlaps(Net.cidrOf(x), Net.cidrOf(y))) return [x, y]
    }
  }
  return undefined
}

/**
 * Which of the tenant's VPCs are peered: each pair an enabled allow rule of either names, both
 * in force (not being deleted), whose blocks do not overlap.
 */
export const connections = (of: Surroundings): Connections => {
  const live = new Map(of.vpcs.filter((v) => v.lifecycle !== "deleting").map((v) => [v.id, v]))
  const blocks = new Map<VpcId, Array<string>>()
  for (const s of of.subnets) if (live.has(s.vpc_id)) entry(blocks, s.vpc_id, () => []).push(s.cidr)
  const peers = new Map<VpcId, Set<VpcId>>()
  const overlaps = new Map<VpcId, Map<VpcId, string>>()
  for (const rule of of.rules) {
    const a = rule.vpc_id
    const b = rule.remote_vpc_id
    if (b === null || a === b || !rule.enabled || rule.action !== "allow" || !live.has(a) || !live.has(b)) continue
    if (peers.get(a)?.has(b) || overlaps.get(a)?.has(b)) continue
    const overlap = overlapOf(blocks.get(a) ?? [], blocks.get(b) ?? [])
    if (overlap !== undefined) {
      const nameA = live.get(a)!.name
      const nameB = live.get(b)!.name
      entry(overlaps, a, () => new Map()).set(
        b,
        `${overlap[0]} of VPC '${nameA}' overlaps ${overlap[1]} of VPC '${nameB}'`
      )
      entry(overlaps, b, () => new Map()).set(
        a,
        `${overlap[1]} of VPC '${nameB}' overlaps ${overlap[0]} of VPC '${nameA}'`
      )
    } else {
      entry(peers, a, () => new Set()).add(b)
      entry(peers, b, () => new Set()).add(a)
    }
  }
  return { peers, overlaps, links: linksOf(peers), names: new Map([...live].map(([id, v]) => [id, v.name])) }
}

const NO_PEERS: ReadonlySet<VpcId> = new Set()
const NO_OVERLAPS: ReadonlyMap<VpcId, string> = new Map()

/** What identifies a VPC's connections: equal keys, equal peers and overlaps. */
export const connectionKeyOf = (all: Connections, vpc: VpcId): string =>
  `${[...(all.peers.get(vpc) ?? [])].sort().join(",")}|${[...(all.overlaps.get(vpc) ?? new Map()).entries()].sort()}`

/** One VPC's paths from the tenant's connections, the VPC, its pods and tunnels, and whether the platform has an uplink. */
export const vpcPaths = (
  vpc: { readonly id: VpcId; readonly name: string; readonly enable_internet: boolean },
  all: Connections,
  pods: ReadonlyArray<
    {
      readonly id: PodId
      readonly name: string
      readonly external_inbound: boolean
      readonly service_port: number
      readonly lifecycle: string
    }
  >,
  tunnels: ReadonlyArray<{ readonly pod_id: PodId; readonly protocol_type: string; readonly service_port: number }>,
  uplink: boolean
): VpcPaths => {
  const published = new Map<PodId, { name: string; tcp: Array<Interval>; udp: Array<Interval> }>()
  if (uplink) {
    const live = new Map(pods.filter((p) => p.lifecycle !== "deleting").map((p) => [p.id, p]))
    const openOf = (pod: PodId) => entry(published, pod, () => ({ name: live.get(pod)!.name, tcp: [], udp: [] }))
    for (const pod of live.values()) {
      if (!pod.external_inbound) continue
      const open = openOf(pod.id)
      open.tcp.push([pod.service_port, pod.service_port])
      open.udp.push([pod.service_port, pod.service_port])
    }
    for (const tunnel of tunnels) {
      if (tunnel.protocol_type !== "udp" || !live.has(tunnel.pod_id)) continue
      openOf(tunnel.pod_id).udp.push([tunnel.service_port, tunnel.service_port])
    }
    for (const open of published.values()) {
      open.tcp = normalize(open.tcp)
      open.udp = normalize(open.udp)
    }
  }
  return {
    name: vpc.name,
    internet: !vpc.enable_internet
      ? "enable_internet is false"
      : uplink
      ? null
      : "the platform has no provider configuration, so no VPC has an uplink",
    peers: all.peers.get(vpc.id) ?? NO_PEERS,
    overlaps: all.overlaps.get(vpc.id) ?? NO_OVERLAPS,
    published,
    names: all.names
  }
}

const normalize = (intervals: ReadonlyArray<Interval>): Array<Interval> => {
  const out: Array<[number, number]> = []
  for (const [from, to] of [...intervals].sort((a, b) => a[0] - b[0])) {
    const last = out[out.length - 1]
    if (last !== undefined && from <= last[1] + 1) last[1] = Math.max(last[1], to)
    else out.push([from, to])
  }
  return out
}
