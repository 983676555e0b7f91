/** A VPC's reachability matrix, as `GET /vpcs/{vpc_id}/reachability` answers it. */
import { Schema } from "effect"
import { PodId, SubnetId, VpcId } from "./Ids.js"

/** One end of a pair: a subnet of the VPC, a pod, the internet, or another of the tenant's VPCs. */
export const ReachabilityEndpoint = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("subnet"), subnet_id: SubnetId, name: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("pod"), pod_id: PodId, name: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("internet") }),
  Schema.Struct({ kind: Schema.Literal("vpc"), vpc_id: VpcId, name: Schema.String })
).annotations({ identifier: "ReachabilityEndpoint" })
export type ReachabilityEndpoint = typeof ReachabilityEndpoint.Type

/**
 * What gets from `from` to `to`: the ports (e.g. `22,80-443`; empty for none) on which every
 * tcp and udp flow is allowed both where it leaves and where it arrives, and whether icmp is.
 */
export class ReachabilityPair extends Schema.Class<ReachabilityPair>("ReachabilityPair")({
  from: ReachabilityEndpoint,
  to: ReachabilityEndpoint,
  tcp: Schema.String,
  udp: Schema.String,
  icmp: Schema.Boolean
}) {}

export class ReachabilityMatrix extends Schema.Class<ReachabilityMatrix>("ReachabilityMatrix")({
  vpc_id: VpcId,
  /** Every ordered pair with at least one end in the VPC (a pod with itself left out). */
  pairs: Schema.Array(ReachabilityPair)
}) {}
