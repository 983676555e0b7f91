import { wireExample } from "./Common.js"
/** One-shot deployment of VPCs, subnets and pods referenced by name, and the nested view. */
import { Schema } from "effect"
import { PodId, SubnetId, TenantId, VpcId } from "./Ids.js"
import { DnsLabel, Ipv4Address, Ipv4Network } from "./Net.js"
import { Pod, PodTopologyItem } from "./Pod.js"
import { RuleImpact } from "./SecurityRule.js"
import { Subnet } from "./Subnet.js"
import { Tunnel } from "./Tunnel.js"
import { Vpc } from "./Vpc.js"

export const TopologyRequest = Schema.Struct({
  token: Schema.String.annotations({ description: "The tenant's API token" }),
  vpcs: Schema.Array(Schema.Struct({ name: DnsLabel, enable_internet: Schema.Boolean })).pipe(Schema.maxItems(100)),
  subnets: Schema.Array(Schema.Struct({
    name: DnsLabel,
    vpc_name: DnsLabel,
    cidr: Ipv4Network,
    gateway_ip: Ipv4Address
  })).pipe(Schema.maxItems(1000)),
  pods: Schema.optionalWith(Schema.Array(PodTopologyItem).pipe(Schema.maxItems(2000)), { default: () => [] })
}).annotations({
  identifier: "TopologyRequest",
  examples: wireExample({
    token: "{token}",
    vpcs: [{ name: "prod", enable_internet: true }],
    subnets: [{ name: "web", vpc_name: "prod", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" }],
    pods: [{
      name: "storefront",
      vpc_name: "prod",
      subnet_name: "web",
      container_image: "nginx:1.27",
      replica_count: 1,
      service_port: 80,
      auto_scaling: false,
      autoscale_max_replicas: 10,
      autoscale_cpu_target_millicores: 200
    }]
  })
})
export type TopologyRequest = typeof TopologyRequest.Type

export class TopologyPod extends Schema.Class<TopologyPod>("TopologyPod")({
  ...Pod.fields,
  tunnels: Schema.Array(Tunnel)
}) {}

export class TopologySubnet extends Schema.Class<TopologySubnet>("TopologySubnet")({
  ...Subnet.fields,
  pods: Schema.Array(TopologyPod)
}) {}

export class TopologyVpc extends Schema.Class<TopologyVpc>("TopologyVpc")({
  ...Vpc.fields,
  subnets: Schema.Array(TopologySubnet)
}) {}

export class TopologyView extends Schema.Class<TopologyView>("TopologyView")({
  tenant_id: TenantId,
  vpcs: Schema.Array(TopologyVpc)
}) {}

/**
 * A topology post's dry run: what it would create, under the ids the dry run gave it (a real
 * post gives new ones), and, for every VPC whose verdicts it changes (each new VPC, whose
 * seeded rule allows its internal traffic, and each VPC whose rules a new subnet, pod or
 * peer block reaches), the flows it opens and closes.
 */
export class TopologyImpact extends Schema.Class<TopologyImpact>("TopologyImpact")({
  dry_run: Schema.Literal(true),
  tenant_id: TenantId,
  created: Schema.Struct({
    vpcs: Schema.Array(Schema.Struct({ id: VpcId, name: Schema.String })),
    subnets: Schema.Array(Schema.Struct({ id: SubnetId, name: Schema.String, vpc_id: VpcId, cidr: Schema.String })),
    pods: Schema.Array(Schema.Struct({ id: PodId, name: Schema.String, vpc_id: VpcId, subnet_id: SubnetId }))
  }),
  vpcs: Schema.Array(RuleImpact)
}) {}
