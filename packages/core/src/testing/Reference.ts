/**
 * The reference interpreter: the spec's evaluation rules written the plainest way (intervals
 * instead of masks, a scan for the earliest matching rule instead of a sort), for the engine's
 * properties to agree with and for the benchmark's naive baseline.
 */
import type * as Net from "../domain/Net.js"
import type * as Evaluate from "../rules/Evaluate.js"
import type * as RuleSet from "../rules/RuleSet.js"

const range = (c: Net.Cidr) => {
  const size = 2 ** (32 - c.prefix)
  const start = Math.floor(c.address / size) * size
  return [start, start + size - 1] as const
}
const inBlock = (c: Net.Cidr, ip: number) => range(c)[0] <= ip && ip <= range(c)[1]
const overlap = (a: Net.Cidr, b: Net.Cidr) => range(a)[0] <= range(b)[1] && range(b)[0] <= range(a)[1]

/** How many addresses of `[from, to]` no range of `by` holds: cut at every range's ends, each piece looked up. */
const uncovered = ([from, to]: readonly [number, number], by: ReadonlyArray<readonly [number, number]>) => {
  const cuts = [...new Set([from, to + 1, ...by.flatMap(([a, b]) => [a, b + 1])])]
    .filter((n) => n >= from && n <= to + 1).sort((a, b) => a - b)
  let missing = 0
  for (let i = 0; i + 1 < cuts.length; i++) {
    if (!by.some(([a, b]) => a <= cuts[i]! && cuts[i]! <= b)) missing += cuts[i + 1]! - cuts[i]!
  }
  return missing
}

export const verdict = (
  all: ReadonlyArray<RuleSet.Rule>,
  context: RuleSet.VpcContext,
  f: RuleSet.Flow
): Evaluate.Verdict => {
  if (f.remote.kind === "ip" && context.infrastructure.some((c) => inBlock(c, (f.remote as { ip: number }).ip))) {
    return { action: "allow", decided_by: { kind: "implied", key: "implied-allow-infrastructure" } }
  }
  // A rule naming another VPC whose blocks overlap this one's would stand for this VPC's own addresses.
  const joined = (other: string) =>
    other === context.vpc_id ||
    !(context.vpcs.get(other as never) ?? []).some((b) => [...context.subnets.values()].some((a) => overlap(a, b)))
  const resolvable = (r: RuleSet.Rule) =>
    (r.remote.kind !== "vpc" || (context.vpcs.has(r.remote.vpc_id) && joined(r.remote.vpc_id))) &&
    (r.target.kind !== "subnet" || context.subnets.has(r.target.subnet_id)) &&
    (r.target.kind !== "pods" || r.target.pod_ids.every((p) => context.pods.has(p)))
  const localSubnet = f.local.pod_id !== undefined ? context.pods.get(f.local.pod_id) : f.local.subnet_id
  const hit = (r: RuleSet.Rule) => {
    if (r.direction !== f.direction) return false
    if (r.protocol !== "all" && r.protocol !== f.protocol) return false
    if (r.ports !== null && !(f.port !== null && r.ports.some((p) => p.from <= f.port! && f.port! <= p.to))) {
      return false
    }
    if (r.target.kind === "subnet" && localSubnet !== r.target.subnet_id) return false
    if (r.target.kind === "pods" && !(f.local.pod_id !== undefined && r.target.pod_ids.includes(f.local.pod_id))) {
      return false
    }
    if (r.remote.kind !== "vpc") {
      // An address set is its entries, each a block as a CIDR remote is.
      const blocks = r.remote.kind === "cidr" ? [r.remote.cidr] : context.addressSets.get(r.remote.address_set_id) ?? []
      if (f.remote.kind === "ip") return blocks.some((c) => inBlock(c, (f.remote as { ip: number }).ip))
      // A VPC is within the remote when every address of its blocks is in some block of it.
      const own = context.vpcs.get(f.remote.vpc_id) ?? []
      return own.length > 0 && own.every((b) => uncovered(range(b), blocks.map(range)) === 0)
    }
    if (f.remote.kind === "vpc") return f.remote.vpc_id === r.remote.vpc_id
    const ip = f.remote.ip
    return (context.vpcs.get(r.remote.vpc_id) ?? []).some((b) => inBlock(b, ip))
  }
  const earlier = (a: RuleSet.Rule, b: RuleSet.Rule) =>
    a.priority !== b.priority ? a.priority < b.priority : a.action !== b.action ? a.action === "deny" : a.seq < b.seq
  let best: RuleSet.Rule | undefined
  for (const r of all) {
    if (r.enabled && resolvable(r) && hit(r) && (best === undefined || earlier(r, best))) best = r
  }
  if (best !== undefined) return { action: best.action, decided_by: { kind: "rule", rule_id: best.id } }
  return f.direction === "egress"
    ? { action: "allow", decided_by: { kind: "implied", key: "implied-allow-egress" } }
    : { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } }
}

// ---------------------------------------------------------------------------
// Ends and flows: what an end stands for, as the README states it, and every flow between two.
// ---------------------------------------------------------------------------

type Interval = readonly [number, number]

/** A local endpoint of an end: how a flow names it (`Flow.local`), and its addresses. */
export interface Local {
  readonly local: RuleSet.Flow["local"]
  readonly addresses: ReadonlyArray<Interval>
}

/** An end of a flow: the VPC whose rules judge it and it is in (null: the internet), and its endpoints. */
export interface End {
  readonly vpc: string | null
  readonly locals: ReadonlyArray<Local>
}

const withoutInfrastructure = (block: Interval, context: RuleSet.VpcContext): Array<Interval> =>
  context.infrastructure.map(range).reduce<Array<Interval>>(
    (parts, [from, to]) =>
      parts.flatMap(([a, b]) =>
        to < a || from > b
          ? [[a, b]]
          : [...(a < from ? [[a, from - 1] as const] : []), ...(b > to ? [[to + 1, b] as const] : [])]
      ),
    [block]
  )

const subnetLocals = (context: RuleSet.VpcContext, subnet: string): Array<Local> => {
  const [network, broadcast] = range(context.subnets.get(subnet as never)!)
  const addresses = withoutInfrastructure([network + 1, broadcast - 1], context)
  return [
    { local: { subnet_id: subnet as never }, addresses },
    ...[...context.pods].filter(([, s]) => s === subnet).map(([pod_id]) => ({ local: { pod_id }, addresses }))
  ]
}

/**
 * The ends of the API: a subnet is its pods and its other endpoints, a pod any host address of
 * its subnet (neither its network nor its broadcast address, nor the core network).
 */
export const ends = {
  subnet: (context: RuleSet.VpcContext, subnet: string): End => ({
    vpc: context.vpc_id,
    locals: subnetLocals(context, subnet)
  }),
  pod: (context: RuleSet.VpcContext, pod: string): End => ({
    vpc: context.vpc_id,
    locals: subnetLocals(context, context.pods.get(pod as never)!).filter((l) => l.local.pod_id === pod)
  }),
  vpc: (context: RuleSet.VpcContext): End => ({
    vpc: context.vpc_id,
    locals: [...context.subnets.keys()].flatMap((s) => subnetLocals(context, s))
  }),
  internet: (context: RuleSet.VpcContext): End => {
    const taken = [...[...context.vpcs.values()].flat(), ...context.infrastructure].map(range)
      .sort((a, b) => a[0] - b[0])
    const free: Array<Interval> = []
    let at = 0
    for (const [from, to] of taken) {
      if (from > at) free.push([at, from - 1])
      at = Math.max(at, to + 1)
    }
    if (at <= 0xffffffff) free.push([at, 0xffffffff])
    return { vpc: null, locals: [{ local: {}, addresses: free }] }
  }
}

/** The world a flow is judged in: each VPC's rules and context. */
export interface World {
  readonly rules: (vpc: string) => ReadonlyArray<RuleSet.Rule>
  readonly context: (vpc: string) => RuleSet.VpcContext
}

/** Every edge anything is decided by: the addresses at and beside each block's ends. */
export const edges = (world: World, vpcs: ReadonlyArray<string>): Array<number> => {
  const blocks = vpcs.flatMap((v) => {
    const context = world.context(v)
    return [
      ...context.infrastructure,
      ...[...context.vpcs.values()].flat(),
      ...world.rules(v).flatMap((r) =>
        r.remote.kind === "cidr"
          ? [r.remote.cidr]
          : r.remote.kind === "address_set"
          ? context.addressSets.get(r.remote.address_set_id) ?? []
          : []
      )
    ]
  }).map(range)
  return [...new Set(blocks.flatMap(([a, b]) => [a - 1, a, b, b + 1]).filter((n) => n >= 0 && n <= 0xffffffff))]
}

/** The ports to try: each rule range's ends and their neighbours, and the axis's ends. */
export const portCuts = (rules: ReadonlyArray<RuleSet.Rule>): Array<number> =>
  [
    ...new Set([
      1,
      65535,
      ...rules.flatMap((r) => (r.ports ?? []).flatMap((p) => [p.from - 1, p.from, p.to, p.to + 1]))
    ])
  ].filter((p) => p >= 1 && p <= 65535).sort((a, b) => a - b)

const samples = (ranges: ReadonlyArray<Interval>, cuts: ReadonlyArray<number>) =>
  ranges.flatMap(([a, b]) => [a, b, ...cuts.filter((n) => a <= n && n <= b)])

/** A half's action on one flow: the reference's, or "allow" outside the tenant's VPCs. */
export const halfAction = (
  world: World,
  vpc: string | null,
  direction: "ingress" | "egress",
  protocol: "tcp" | "udp" | "icmp",
  port: number | null,
  local: RuleSet.Flow["local"],
  remote: number
): "allow" | "deny" =>
  vpc === null
    ? "allow"
    : verdict(world.rules(vpc), world.context(vpc), {
      direction,
      protocol,
      port,
      remote: { kind: "ip", ip: remote },
      local
    }).action

/**
 * Whether a route carries a flow from the end in `from` (a VPC; null: the internet) to the
 * endpoint `local` of the end in `to`, as the README states it: within a VPC always; between two
 * VPCs when they are peered; to the internet from a VPC with the internet; from the internet to
 * a pod published on the protocol and port, in a VPC with the internet.
 */
export const carries = (
  world: World,
  from: string | null,
  to: string | null,
  local: RuleSet.Flow["local"],
  protocol: "tcp" | "udp" | "icmp",
  port: number | null
): boolean => {
  if (from !== null && to !== null) return from === to || world.context(from).paths.peers.has(to as never)
  if (from !== null) return world.context(from).paths.internet === null
  if (to === null) return true
  const paths = world.context(to).paths
  const published = local.pod_id === undefined ? undefined : paths.published.get(local.pod_id)
  if (published === undefined || protocol === "icmp" || paths.internet !== null) return false
  return published[protocol].some(([a, b]) => a <= port! && port! <= b)
}

/**
 * The reference's answer over every flow between two ends on a port (end to end, or one half or
 * the path alone): `allowed`, `partial` or `denied`, and how many flows there are. `cuts`: the
 * edges of every block anything is decided by (`edges`), which make the addresses tried cover
 * every flow.
 */
export const reach = (
  world: World,
  cuts: ReadonlyArray<number>,
  from: End,
  to: End,
  protocol: "tcp" | "udp" | "icmp",
  port: number | null,
  half: "both" | "egress" | "ingress" | "route" = "both"
): { readonly reach: "allowed" | "partial" | "denied"; readonly flows: number } => {
  let allowed = 0
  let denied = 0
  for (const s of from.locals) {
    for (const d of to.locals) {
      const destinations = samples(d.addresses, cuts)
      const routed = carries(world, from.vpc, to.vpc, d.local, protocol, port)
      for (const a of samples(s.addresses, cuts)) {
        const arrives = halfAction(world, to.vpc, "ingress", protocol, port, d.local, a) === "allow"
        for (const b of destinations) {
          const leaves = halfAction(world, from.vpc, "egress", protocol, port, s.local, b) === "allow"
          const through = half === "egress"
            ? leaves
            : half === "ingress"
            ? arrives
            : half === "route"
            ? routed
            : routed && leaves && arrives
          if (through) allowed++
          else denied++
        }
      }
    }
  }
  return { reach: allowed === 0 ? "denied" : denied > 0 ? "partial" : "allowed", flows: allowed + denied }
}
