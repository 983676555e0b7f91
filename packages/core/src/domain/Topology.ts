/** One-shot deployment of VPCs, subnets and pods referenced by name, and the nested view. */
import { Schema } from "effect"
import { BodyToken, wireExample } from "./Common.js"
import { PodId, SubnetId, TenantId, VpcId } from "./Ids.js"
import type { Problem } from "./InputProblems.js"
import { DnsLabel, Ipv4Address, Ipv4Network } from "./Net.js"
import { Pod, PodTopologyItem } from "./Pod.js"
import { RuleImpact } from "./SecurityRule.js"
import { Subnet } from "./Subnet.js"
import { Tunnel } from "./Tunnel.js"
import { Vpc } from "./Vpc.js"

export const TopologyVpcItem = Schema.Struct({ name: DnsLabel, enable_internet: Schema.Boolean })

export const TopologySubnetItem = Schema.Struct({
  name: DnsLabel,
  vpc_name: DnsLabel,
  cidr: Ipv4Network,
  gateway_ip: Ipv4Address
})

export const TopologyRequest = Schema.Struct({
  token: BodyToken,
  vpcs: Schema.Array(TopologyVpcItem).pipe(Schema.maxItems(100)),
  subnets: Schema.Array(TopologySubnetItem).pipe(Schema.maxItems(1000)),
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

/** The lists of a topology, in the order its problems are named. */
export const SECTIONS = ["vpcs", "subnets", "pods"] as const
export type Section = typeof SECTIONS[number]

/**
 * A topology as far as its body decodes: the items that decode (each with its index in the
 * body, to name it in a problem: `subnets[2].vpc_name`), the token when it decodes, and what is
 * wrong with the rest. The deploy reports the problems of the items it has with these, so one
 * answer names every problem of the body, schema and semantic alike, and it writes nothing
 * while there are any.
 */
export interface Decoded {
  readonly token: string | undefined
  readonly vpcs: ReadonlyArray<readonly [number, typeof TopologyVpcItem.Type]>
  readonly subnets: ReadonlyArray<readonly [number, typeof TopologySubnetItem.Type]>
  readonly pods: ReadonlyArray<readonly [number, typeof PodTopologyItem.Type]>
  readonly problems: ReadonlyArray<Problem>
}

const indexed = <A>(items: ReadonlyArray<A>) => items.map((item, i) => [i, item] as const)

/** A request that decoded whole: every item at its own index, no problem. */
export const decodedOf = (request: TopologyRequest): Decoded => ({
  token: request.token,
  vpcs: indexed(request.vpcs),
  subnets: indexed(request.subnets),
  pods: indexed(request.pods),
  problems: []
})

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
}, {
  examples: wireExample({
    dry_run: true,
    tenant_id: "0d1e2f3a-4b5c-4d6e-8f7a-9b0c1d2e3f4a",
    created: {
      vpcs: [{ id: "3f9a1c52-7d4e-4b8a-9c21-5e6f7a8b9c0d", name: "prod" }],
      subnets: [{
        id: "8b2d4f61-0a3c-4e5b-8d7f-1a2b3c4d5e6f",
        name: "web",
        vpc_id: "3f9a1c52-7d4e-4b8a-9c21-5e6f7a8b9c0d",
        cidr: "10.0.1.0/24"
      }],
      pods: []
    },
    vpcs: [{
      dry_run: true,
      vpc_id: "3f9a1c52-7d4e-4b8a-9c21-5e6f7a8b9c0d",
      opened: [{
        direction: "ingress",
        protocol: "tcp",
        ports: "1-65535",
        remote_cidrs: ["10.0.1.0/32", "10.0.1.2/31"],
        remote_summary: "10.0.1.0/32, 10.0.1.2/31",
        local: { pod_ids: [], subnet_ids: ["8b2d4f61-0a3c-4e5b-8d7f-1a2b3c4d5e6f"], outside_subnets: true },
        before: { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } },
        after: {
          action: "allow",
          decided_by: { kind: "rule", rule_id: "c4e8a2b6-1d3f-4a5c-9e7b-0f1a2b3c4d5e", name: "Allow internal traffic" }
        },
        // Before the post, the new subnet's addresses were the internet's, which reaches nothing unpublished.
        route: {
          before: {
            reason: "not_published",
            detail: "nothing published: the internet reaches only published pods (a pod's external_inbound port, " +
              "a udp tunnel's)"
          },
          after: null
        }
      }],
      closed: [],
      new_findings: [],
      violations: []
    }]
  })
}) {}
