/**
 * The compiled, backend-neutral form of a VPC's security rules: an ordered list of ACL
 * entries with distinct ranks (OVN, for one, leaves equal priorities undefined). Adapters
 * render it; they never re-derive evaluation order.
 */
import type { AddressSetId, PodId, SecurityRuleId, SubnetId, VpcId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import * as PortRanges from "../domain/PortRanges.js"
import type { PortRange } from "../domain/PortRanges.js"
import type { Direction, RuleAction, RuleProtocol } from "../domain/SecurityRule.js"
import * as Evaluate from "./Evaluate.js"
import * as RuleSet from "./RuleSet.js"

export type PlanRemote =
  | { readonly kind: "cidr"; readonly cidr: string }
  | { readonly kind: "vpc"; readonly vpc_id: VpcId; readonly cidrs: ReadonlyArray<string> }
  | { readonly kind: "address_set"; readonly address_set_id: AddressSetId; readonly cidrs: ReadonlyArray<string> }

export type PlanTarget =
  | { readonly kind: "vpc" }
  | { readonly kind: "subnet"; readonly subnet_id: SubnetId; readonly cidr: string }
  | { readonly kind: "pods"; readonly pod_ids: ReadonlyArray<PodId> }

export interface AclEntry {
  /** Evaluation position: a smaller rank is evaluated first. Distinct within a plan. */
  readonly rank: number
  readonly rule_id: SecurityRuleId
  readonly direction: Direction
  readonly action: RuleAction
  readonly protocol: RuleProtocol
  /** Null means every port (or a portless protocol). */
  readonly ports: ReadonlyArray<PortRange> | null
  readonly remote: PlanRemote
  readonly target: PlanTarget
}

export interface SecurityPlan {
  readonly vpc_id: VpcId
  readonly entries: ReadonlyArray<AclEntry>
  /** Blocks that are always allowed both ways (core services, the subnets' gateways). */
  readonly infrastructure: ReadonlyArray<string>
  /** The VPC's subnets: where the entries are enforced. */
  readonly subnets: ReadonlyArray<{ readonly subnet_id: SubnetId; readonly cidr: string }>
  /** The VPC's pods and their subnets, for backends that resolve pod targets to addresses. */
  readonly pods: ReadonlyArray<{ readonly pod_id: PodId; readonly subnet_id: SubnetId }>
}

const remoteOf = (remote: RuleSet.RuleRemote, context: RuleSet.VpcContext): PlanRemote => {
  const cidrs = RuleSet.remoteBlocks(remote, context).map(Net.formatCidr)
  switch (remote.kind) {
    case "cidr":
      return { kind: "cidr", cidr: cidrs[0]! }
    case "vpc":
      return { kind: "vpc", vpc_id: remote.vpc_id, cidrs }
    case "address_set":
      return { kind: "address_set", address_set_id: remote.address_set_id, cidrs }
  }
}

/**
 * Compiles a VPC's rules to its plan: the enforced rules (enabled, everything they reference
 * present), in evaluation order, ranked 1, 2, 3, ... Remote VPCs become their subnet blocks,
 * address sets their entries (one entry per rule, whatever the set's size), target subnets their
 * block; target pods stay ids for the backend to resolve.
 */
export const compile = (rules: ReadonlyArray<RuleSet.Rule>, context: RuleSet.VpcContext): SecurityPlan => ({
  vpc_id: context.vpc_id,
  infrastructure: context.infrastructure.map(Net.formatCidr),
  subnets: [...context.subnets].map(([subnet_id, cidr]) => ({ subnet_id, cidr: Net.formatCidr(cidr) })),
  pods: [...context.pods].map(([pod_id, subnet_id]) => ({ pod_id, subnet_id })),
  entries: RuleSet.enforced(rules, context).map((rule, index): AclEntry => ({
    rank: index + 1,
    rule_id: rule.id,
    direction: rule.direction,
    action: rule.action,
    protocol: rule.protocol,
    ports: rule.ports,
    remote: remoteOf(rule.remote, context),
    target: rule.target.kind === "subnet"
      ? {
        kind: "subnet",
        subnet_id: rule.target.subnet_id,
        cidr: Net.formatCidr(context.subnets.get(rule.target.subnet_id)!)
      }
      : rule.target
  }))
})

const entryMatches = (
  entry: AclEntry,
  flow: RuleSet.Flow & { remote: { kind: "ip" } },
  context: RuleSet.VpcContext
) => {
  const ip = flow.remote.ip
  const localSubnet = flow.local.pod_id !== undefined ? context.pods.get(flow.local.pod_id) : flow.local.subnet_id
  return entry.direction === flow.direction &&
    (entry.protocol === "all" || entry.protocol === flow.protocol) &&
    (entry.ports === null || (flow.port !== null && PortRanges.includes(entry.ports, flow.port))) &&
    (entry.remote.kind === "cidr"
      ? Net.contains(Net.cidrOf(entry.remote.cidr), ip)
      : entry.remote.cidrs.some((c) => Net.contains(Net.cidrOf(c), ip))) &&
    (entry.target.kind === "vpc" ||
      (entry.target.kind === "subnet" && localSubnet === entry.target.subnet_id) ||
      (entry.target.kind === "pods" && flow.local.pod_id !== undefined &&
        entry.target.pod_ids.includes(flow.local.pod_id)))
}

/**
 * How a backend enforcing the plan decides a packet flow: the lowest-ranked matching entry,
 * beneath it the implied rules. Used to check that compiling preserves `evaluate`.
 */
export const decide = (
  plan: SecurityPlan,
  context: RuleSet.VpcContext,
  flow: RuleSet.Flow & { remote: { kind: "ip" } }
): Evaluate.Verdict => {
  if (Evaluate.isInfrastructure(flow, context)) return Evaluate.INFRASTRUCTURE
  const entry = [...plan.entries].sort((a, b) => a.rank - b.rank).find((e) => entryMatches(e, flow, context))
  return entry === undefined
    ? Evaluate.fallback(flow)
    : { action: entry.action, decided_by: { kind: "rule", rule_id: entry.rule_id } }
}
