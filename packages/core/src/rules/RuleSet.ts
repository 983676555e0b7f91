/**
 * A VPC's rule set as the security-rule engine sees it, the vocabulary of every engine module:
 * a rule (from its stored record), the VPC context that resolves its references, a flow, and
 * evaluation order. Pure.
 */
import { Either } from "effect"
import type { AddressSetRecord } from "../domain/AddressSet.js"
import { oncePerRecord } from "../domain/Common.js"
import type { AddressSetId, PodId, SecurityRuleId, SubnetId, VpcId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { PodRecord } from "../domain/Pod.js"
import * as PortRanges from "../domain/PortRanges.js"
import type { PortRange } from "../domain/PortRanges.js"
import type {
  Direction,
  FlowProtocol,
  RuleAction,
  RuleProtocol,
  RuleStatus,
  SecurityRuleRecord
} from "../domain/SecurityRule.js"
import type { SubnetRecord } from "../domain/Subnet.js"
import type { TunnelRecord } from "../domain/Tunnel.js"
import type { VpcRecord } from "../domain/Vpc.js"
import * as Paths from "./Paths.js"

export type RuleRemote =
  | { readonly kind: "cidr"; readonly cidr: Net.Cidr }
  | { readonly kind: "vpc"; readonly vpc_id: VpcId }
  | { readonly kind: "address_set"; readonly address_set_id: AddressSetId }

export type RuleTarget =
  | { readonly kind: "vpc" }
  | { readonly kind: "subnet"; readonly subnet_id: SubnetId }
  | { readonly kind: "pods"; readonly pod_ids: ReadonlyArray<PodId> }

/** A rule as the engine sees it: parsed, with its creation order for the stable tie-break. */
export interface Rule {
  readonly id: SecurityRuleId
  /** Creation order within the VPC; breaks ties after priority and action. */
  readonly seq: number
  readonly priority: number
  readonly direction: Direction
  readonly action: RuleAction
  readonly protocol: RuleProtocol
  /** Null: every port (or a portless protocol). */
  readonly ports: ReadonlyArray<PortRange> | null
  readonly remote: RuleRemote
  readonly target: RuleTarget
  readonly enabled: boolean
}

/** A stored rule as the engine sees it (once per record). Stored rules were validated, so parsing cannot fail. */
export const fromRecord = oncePerRecord((r: SecurityRuleRecord): Rule => ({
  id: r.id,
  seq: r.seq,
  priority: r.priority,
  direction: r.direction,
  action: r.action,
  protocol: r.protocol,
  ports: r.ports === null ? null : Either.getOrThrow(PortRanges.parse(r.ports)),
  remote: r.remote_type === "cidr"
    ? { kind: "cidr", cidr: Net.cidrOf(r.remote_cidr!) }
    : r.remote_type === "vpc"
    ? { kind: "vpc", vpc_id: r.remote_vpc_id! }
    : { kind: "address_set", address_set_id: r.remote_address_set_id! },
  target: r.target_type === "vpc"
    ? { kind: "vpc" }
    : r.target_type === "subnet"
    ? { kind: "subnet", subnet_id: r.target_subnet_id! }
    : { kind: "pods", pod_ids: r.target_pod_ids! },
  enabled: r.enabled
}))

/** What a VPC's rules are resolved against. */
export interface VpcContext {
  readonly vpc_id: VpcId
  /** The VPC's subnets and their blocks. */
  readonly subnets: ReadonlyMap<SubnetId, Net.Cidr>
  /** The VPC's pods and the subnet each lives in. */
  readonly pods: ReadonlyMap<PodId, SubnetId>
  /** The tenant's VPCs (this one included) and their subnet blocks. */
  readonly vpcs: ReadonlyMap<VpcId, ReadonlyArray<Net.Cidr>>
  /** The tenant's address sets and their entries. */
  readonly addressSets: ReadonlyMap<AddressSetId, ReadonlyArray<Net.Cidr>>
  /** Core network (platform DNS, gateways, tunnel connectors, load balancers): always allowed. */
  readonly infrastructure: ReadonlyArray<Net.Cidr>
  /** What carries the VPC's traffic beside its rules: peerings, the internet, what it publishes. */
  readonly paths: Paths.VpcPaths
}

/** A subnet's CIDR block. */
const blockOf = oncePerRecord((subnet: SubnetRecord): Net.Cidr => Net.cidrOf(subnet.cidr))

/** An address set's entries as blocks. */
const entriesOf = oncePerRecord((set: AddressSetRecord): ReadonlyArray<Net.Cidr> =>
  set.entries.map((e) => Net.cidrOf(e.cidr))
)

/** The addresses a rule's remote stands for in `context`: its block, the remote VPC's blocks, the set's entries. */
export const remoteBlocks = (remote: RuleRemote, context: VpcContext): ReadonlyArray<Net.Cidr> => {
  switch (remote.kind) {
    case "cidr":
      return [remote.cidr]
    case "vpc":
      return context.vpcs.get(remote.vpc_id) ?? []
    case "address_set":
      return context.addressSets.get(remote.address_set_id) ?? []
  }
}

/**
 * The addresses of a rule's remote as the fewest disjoint intervals (`[first, last]`, ascending):
 * a set's entries may nest, overlap or abut; a flow naming a VPC is within the remote when their
 * union holds every block of the VPC.
 */
export const remoteRanges = (remote: RuleRemote, context: VpcContext): ReadonlyArray<readonly [number, number]> => {
  const ranges = remoteBlocks(remote, context).map((b) => [Net.networkOf(b), Net.broadcastOf(b)] as const)
  const out: Array<[number, number]> = []
  for (const [from, to] of ranges.sort((a, b) => a[0] - b[0])) {
    const last = out[out.length - 1]
    if (last !== undefined && from <= last[1] + 1) last[1] = Math.max(last[1], to)
    else out.push([from, to])
  }
  return out
}

/** The tenant's records a VPC's rules resolve against. */
export interface Surroundings {
  readonly vpcs: ReadonlyArray<VpcRecord>
  readonly subnets: ReadonlyArray<SubnetRecord>
  /** The VPC's pods (others are ignored). */
  readonly pods: ReadonlyArray<PodRecord>
  /** The VPC's tunnels (others are ignored): a udp tunnel publishes its pod. */
  readonly tunnels: ReadonlyArray<TunnelRecord>
  readonly addressSets: ReadonlyArray<AddressSetRecord>
  /** Which of the tenant's VPCs are peered (`Paths.connections`). */
  readonly connections: Paths.Connections
  /** The provider configuration's peering block; null: no provider configuration, so no uplink. */
  readonly peeringCidr: string | null
}

/**
 * A VPC's context from its tenant's records: the tenant's VPC blocks and address sets, the VPC's
 * subnets, pods and core network.
 */
export const contextOf = (vpcId: VpcId, of: Surroundings): VpcContext => {
  const own = of.subnets.filter((s) => s.vpc_id === vpcId)
  // A VPC being deleted has left enforcement: rules that name it match nothing.
  const blocks = new Map<VpcId, Array<Net.Cidr>>(
    of.vpcs.filter((v) => v.lifecycle !== "deleting").map((v) => [v.id, []])
  )
  for (const s of of.subnets) blocks.get(s.vpc_id)?.push(blockOf(s))
  return {
    vpc_id: vpcId,
    subnets: new Map(own.map((s) => [s.id, blockOf(s)])),
    // A pod being deleted has left enforcement: its delete was decided (and checked) as it was marked.
    pods: new Map(
      of.pods.filter((p) => p.vpc_id === vpcId && p.lifecycle !== "deleting").map((p) => [p.id, p.subnet_id])
    ),
    vpcs: blocks,
    addressSets: new Map(of.addressSets.map((set) => [set.id, entriesOf(set)])),
    infrastructure: [
      ...(of.peeringCidr === null ? [] : [Net.cidrOf(of.peeringCidr)]),
      ...own.map((s) => ({ address: Net.ipv4Of(s.gateway_ip), prefix: 32 }))
    ],
    paths: Paths.vpcPaths(
      of.vpcs.find((v) => v.id === vpcId) ?? { id: vpcId, name: vpcId, enable_internet: false },
      of.connections,
      of.pods.filter((p) => p.vpc_id === vpcId),
      of.tunnels.filter((t) => t.vpc_id === vpcId),
      of.peeringCidr !== null
    )
  }
}

export type FlowRemote =
  | { readonly kind: "ip"; readonly ip: number }
  | { readonly kind: "vpc"; readonly vpc_id: VpcId }

/**
 * A new connection as seen from this VPC: `ingress` arrives at the local end from the
 * remote, `egress` leaves the local end for it. Replies to an allowed connection are allowed.
 */
export interface Flow {
  readonly direction: Direction
  readonly protocol: FlowProtocol
  /** Destination port for tcp/udp; null for icmp. */
  readonly port: number | null
  readonly remote: FlowRemote
  /** The local end: a pod (its subnet follows), a subnet, or just somewhere in the VPC. */
  readonly local: { readonly pod_id?: PodId; readonly subnet_id?: SubnetId }
}

/**
 * Evaluation order: priority ascending, deny before allow on equal priority, then creation
 * order, then id. The same order lists, evaluates and compiles.
 */
export const compare = (a: Rule, b: Rule): number =>
  a.priority - b.priority ||
  (a.action === b.action ? 0 : a.action === "deny" ? -1 : 1) ||
  a.seq - b.seq ||
  (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export const sort = <R extends Rule>(rules: ReadonlyArray<R>): Array<R> => [...rules].sort(compare)

/** A rule's place in evaluation order as a key compared element by element (`Page.compare`): `compare`'s order. */
export const evaluationKey = (
  rule: Pick<Rule, "priority" | "action" | "seq" | "id">
): ReadonlyArray<string | number> => [
  rule.priority,
  rule.action === "deny" ? 0 : 1,
  rule.seq,
  rule.id
]

/**
 * Whether the rule can be enforced: what it references still exists, and a VPC it names has no
 * block overlapping this one's (it would stand for this VPC's own addresses). One naming a VPC
 * no route joins to this one (`Paths`: not peered) is enforced as written, and reported, since
 * no packet of that VPC's arrives to match it. A set a rule names is not deleted while it does,
 * so a set remote is never missing; were it, it would match nothing.
 */
export const statusOf = (rule: Rule, context: VpcContext): RuleStatus => {
  const remoteVpc = rule.remote.kind === "vpc" ? rule.remote.vpc_id : null
  if (remoteVpc !== null && !context.vpcs.has(remoteVpc)) return "remote_vpc_missing"
  if (rule.target.kind === "subnet" && !context.subnets.has(rule.target.subnet_id)) return "target_missing"
  if (rule.target.kind === "pods" && !rule.target.pod_ids.every((id) => context.pods.has(id))) return "target_missing"
  if (!rule.enabled) return "disabled"
  if (remoteVpc !== null && remoteVpc !== context.vpc_id) {
    const own = [...context.subnets.values()]
    const theirs = context.vpcs.get(remoteVpc)!
    if (own.some((a) => theirs.some((b) => Net.overlaps(a, b)))) return "remote_vpc_overlaps"
    if (!context.paths.peers.has(remoteVpc)) return "remote_vpc_unreachable"
  }
  return "active"
}

/** The statuses of the rules that take part in enforcement. */
const ENFORCED: ReadonlySet<RuleStatus> = new Set(["active", "remote_vpc_unreachable"])

/** The rules that take part in enforcement, in evaluation order. */
export const enforced = <R extends Rule>(rules: ReadonlyArray<R>, context: VpcContext): Array<R> =>
  sort(rules.filter((rule) => ENFORCED.has(statusOf(rule, context))))
