/** A VPC's reachability matrix, as `GET /vpcs/{vpc_id}/reachability` answers it. */
import { Schema } from "effect"
import { wireExample } from "./Common.js"
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
}, {
  examples: wireExample({
    vpc_id: "3f9a1c52-7d4e-4b8a-9c21-5e6f7a8b9c0d",
    pairs: [
      {
        from: { kind: "internet" },
        to: { kind: "pod", pod_id: "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d", name: "storefront" },
        tcp: "443",
        udp: "",
        icmp: false
      },
      {
        from: { kind: "subnet", subnet_id: "8b2d4f61-0a3c-4e5b-8d7f-1a2b3c4d5e6f", name: "web" },
        to: { kind: "internet" },
        tcp: "1-65535",
        udp: "1-65535",
        icmp: true
      }
    ]
  })
}) {}
