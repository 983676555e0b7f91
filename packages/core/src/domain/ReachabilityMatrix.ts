/** A VPC's reachability matrix, as `GET /vpcs/{vpc_id}/reachability` answers it: a page of its pairs. */
import { Schema } from "effect"
import { intBetween, stringBetween, wireExample } from "./Common.js"
import { PathFlow, Reach } from "./FlowReach.js"
import { PodId, SubnetId, VpcId } from "./Ids.js"
import { PageParams } from "./Page.js"

/** The most pairs one answer holds: the work and the bytes of one request are bounded by it. */
export const MAX_PAIRS = 500

/** Which endpoints the pairs are of: the VPC's subnets (and the ends outside it), or its pods too. */
export const ReachabilityDetail = Schema.Literal("subnets", "pods").annotations({
  identifier: "ReachabilityDetail",
  description: "subnets (default): the VPC's subnets, the internet and your other VPCs; pods: the VPC's pods too"
})
export type ReachabilityDetail = typeof ReachabilityDetail.Type

export const ReachabilityQuery = Schema.Struct({
  detail: Schema.optional(ReachabilityDetail),
  endpoint: Schema.optional(stringBetween(1, 64)).annotations({
    description: "Only the pairs this endpoint is an end of: a subnet, pod or VPC id of yours, or `internet`"
  }),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.compose(intBetween(1, MAX_PAIRS)))).annotations({
    description: `At most this many pairs (1-${MAX_PAIRS}, ${MAX_PAIRS} when left out); ` +
      "the next page is in the Link header (rel=\"next\")"
  }),
  page_token: PageParams.page_token
})
export type ReachabilityQuery = typeof ReachabilityQuery.Type

/** The detail a query asks for: the subnets' summary unless it names one. */
export const detailOf = (query: ReachabilityQuery): ReachabilityDetail => query.detail ?? "subnets"

/** One end of a pair: a subnet of the VPC, a pod, the internet, or another of the tenant's VPCs. */
export const ReachabilityEndpoint = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("subnet"), subnet_id: SubnetId, name: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("pod"), pod_id: PodId, name: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("internet") }),
  Schema.Struct({ kind: Schema.Literal("vpc"), vpc_id: VpcId, name: Schema.String })
).annotations({ identifier: "ReachabilityEndpoint" })
export type ReachabilityEndpoint = typeof ReachabilityEndpoint.Type

/**
 * A protocol with ports (tcp, udp) between two ends: the ports on which every flow gets
 * through (e.g. `22,80-443`; empty for none), those on which some do and some do not, and for
 * the first partial port a flow of each side. Every other port: no flow gets through.
 */
export const PortsReach = Schema.Struct({
  allowed: Schema.String,
  partial: Schema.String,
  allowed_flow: Schema.NullOr(PathFlow),
  denied_flow: Schema.NullOr(PathFlow)
}).annotations({ identifier: "PortsReach" })
export type PortsReach = typeof PortsReach.Type

/** icmp between two ends: whether every flow, some or none gets through, and for a partial one a flow of each side. */
export const IcmpReach = Schema.Struct({
  reach: Reach,
  allowed_flow: Schema.NullOr(PathFlow),
  denied_flow: Schema.NullOr(PathFlow)
}).annotations({ identifier: "IcmpReach" })
export type IcmpReach = typeof IcmpReach.Type

/**
 * What gets from `from` to `to`, end to end: allowed where it leaves (the source's egress)
 * and where it arrives (the destination's ingress). A subnet stands for every endpoint in it
 * (its pods included), a VPC for every endpoint of its subnets.
 */
export class ReachabilityPair extends Schema.Class<ReachabilityPair>("ReachabilityPair")({
  from: ReachabilityEndpoint,
  to: ReachabilityEndpoint,
  tcp: PortsReach,
  udp: PortsReach,
  icmp: IcmpReach
}) {}

export class ReachabilityMatrix extends Schema.Class<ReachabilityMatrix>("ReachabilityMatrix")({
  vpc_id: VpcId,
  detail: ReachabilityDetail,
  /**
   * A page of the ordered pairs with at least one end in the VPC (a pod with itself left out),
   * by `from` then `to`, each end by kind (subnets, pods, the internet, other VPCs) then id.
   */
  pairs: Schema.Array(ReachabilityPair)
}, {
  examples: wireExample({
    vpc_id: "3f9a1c52-7d4e-4b8a-9c21-5e6f7a8b9c0d",
    detail: "pods",
    pairs: [
      {
        from: { kind: "subnet", subnet_id: "8b2d4f61-0a3c-4e5b-8d7f-1a2b3c4d5e6f", name: "web" },
        to: { kind: "internet" },
        tcp: { allowed: "1-65535", partial: "", allowed_flow: null, denied_flow: null },
        udp: { allowed: "1-65535", partial: "", allowed_flow: null, denied_flow: null },
        icmp: { reach: "allowed", allowed_flow: null, denied_flow: null }
      },
      {
        from: { kind: "internet" },
        to: { kind: "pod", pod_id: "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d", name: "storefront" },
        tcp: { allowed: "443", partial: "", allowed_flow: null, denied_flow: null },
        udp: { allowed: "", partial: "", allowed_flow: null, denied_flow: null },
        icmp: { reach: "denied", allowed_flow: null, denied_flow: null }
      }
    ]
  })
}) {}
