/**
 * The compiled, backend-neutral form of a VPC's security rules: an ordered list of ACL
 * entries with distinct ranks (OVN, for one, leaves equal priorities undefined). Adapters
 * render it; they never re-derive evaluation order.
 */
import type { PodId, SecurityRuleId, SubnetId, VpcId } from "../domain/Ids.js"
import type { Direction, RuleAction } from "../domain/SecurityRule.js"
import type { PortRange } from "./Ports.js"

export type PlanRemote =
  | { readonly kind: "cidr"; readonly cidr: string }
  | { readonly kind: "vpc"; readonly vpc_id: VpcId; readonly cidrs: ReadonlyArray<string> }

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
  readonly protocol: "tcp" | "udp" | "icmp" | "all"
  /** Null means every port (or a portless protocol). */
  readonly ports: ReadonlyArray<PortRange> | null
  readonly remote: PlanRemote
  readonly target: PlanTarget
}

export interface SecurityPlan {
  readonly vpc_id: VpcId
  readonly entries: ReadonlyArray<AclEntry>
}
