/**
 * Reachability: for each pair of a VPC's endpoints (its subnets, its pods, the internet, the
 * tenant's other VPCs), what gets from one to the other end to end, on every port of every
 * protocol (`Reach.ports`): the ports every flow gets through on, those some do, and none on
 * the rest. A subnet is every endpoint in it (its pods included), another VPC every endpoint
 * of its subnets, the internet every address outside the tenant's VPCs. Pure.
 */
import type { PodId, SubnetId, VpcId } from "../domain/Ids.js"
import type { FlowProtocol } from "../domain/SecurityRule.js"
import * as Reach from "./Reach.js"
import type { Rule, VpcContext } from "./RuleSet.js"

export type Endpoint =
  | { readonly kind: "subnet"; readonly subnet_id: SubnetId }
  | { readonly kind: "pod"; readonly pod_id: PodId }
  | { readonly kind: "internet" }
  | { readonly kind: "vpc"; readonly vpc_id: VpcId }

export interface Pair {
  readonly from: Endpoint
  readonly to: Endpoint
  readonly reach: Readonly<Record<FlowProtocol, Reach.Ports>>
}

/** A VPC's rules with the context they resolve in. */
export interface RuleSetOf {
  readonly rules: ReadonlyArray<Rule>
  readonly context: VpcContext
}

const PROTOCOLS: ReadonlyArray<FlowProtocol> = ["tcp", "udp", "icmp"]

/**
 * Every ordered pair of endpoints with at least one end in the VPC, and what reaches across.
 * `others` are the tenant's other VPCs with their rules (their egress decides what leaves them,
 * their ingress what arrives).
 */
export const matrix = (own: RuleSetOf, others: ReadonlyMap<VpcId, RuleSetOf>): Array<Pair> => {
  const context = own.context
  const judges = new Map<VpcId, Reach.Judge>([
    [context.vpc_id, Reach.judge(own.rules, context)],
    ...[...others].map(([id, set]) => [id, Reach.judge(set.rules, set.context)] as const)
  ])
  const inside: Array<{ endpoint: Endpoint; end: Reach.End }> = [
    ...[...context.subnets.keys()].map((subnet_id) => ({
      endpoint: { kind: "subnet" as const, subnet_id },
      end: Reach.ends.subnet(context, subnet_id)
    })),
    ...[...context.pods.keys()].map((pod_id) => ({
      endpoint: { kind: "pod" as const, pod_id },
      end: Reach.ends.pod(context, pod_id)
    }))
  ]
  const outside: Array<{ endpoint: Endpoint; end: Reach.End }> = [
    { endpoint: { kind: "internet" }, end: Reach.ends.internet(context) },
    ...[...context.vpcs.keys()].filter((id) => id !== context.vpc_id && others.has(id)).map((vpc_id) => ({
      endpoint: { kind: "vpc" as const, vpc_id },
      end: Reach.ends.vpc(others.get(vpc_id)!.context)
    }))
  ]
  const kept = Reach.memo()
  const pair = (from: { endpoint: Endpoint; end: Reach.End }, to: { endpoint: Endpoint; end: Reach.End }): Pair => ({
    from: from.endpoint,
    to: to.endpoint,
    reach: Object.fromEntries(
      PROTOCOLS.map((protocol) => [protocol, Reach.ports(judges, from.end, to.end, protocol, kept)])
    ) as Record<FlowProtocol, Reach.Ports>
  })
  const pairs: Array<Pair> = []
  for (const a of inside) {
    for (const b of inside) {
      if (a === b && a.endpoint.kind === "pod") continue
      pairs.push(pair(a, b))
    }
    for (const o of outside) pairs.push(pair(a, o), pair(o, a))
  }
  return pairs
}
