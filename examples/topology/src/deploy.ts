/**
 * Deploys a topology through the typed client: log in as admin, create a tenant, log in as
 * it, preview the post (`dry_run`), post the topology, and describe what runs.
 */
import { FetchHttpClient } from "@effect/platform"
import { TenetClient } from "@tenet/client"
import { Net, Topology } from "@tenet/core"
import { Effect, Schema } from "effect"

export interface Target {
  readonly baseUrl: string
  readonly adminUsername: string
  readonly adminPassword: string
}

/** The file's shape: the topology request without the token, which the program adds. */
export type TopologyFile = Omit<typeof Topology.TopologyRequest.Encoded, "token">

export const deploy = (target: Target, topology: TopologyFile, tenantName: string) =>
  Effect.gen(function*() {
    // Checked here with the contract's own schema, so a bad file fails before any request.
    const body = yield* Schema.decodeUnknown(Topology.TopologyRequest)({ ...topology, token: "" })
    const anonymous = yield* TenetClient.make({ baseUrl: target.baseUrl })
    const admin = yield* anonymous.adminIdentity.login({
      payload: { username: target.adminUsername, password: target.adminPassword }
    })
    const asAdmin = yield* TenetClient.make({ baseUrl: target.baseUrl, adminToken: admin.api_token })
    const tenant = yield* asAdmin.tenants.create({
      payload: { name: Net.DnsLabel.make(tenantName), password: "example-password", description: "topology example" }
    })
    const session = yield* anonymous.tenantIdentity.login({
      payload: { name: tenant.name, password: "example-password" }
    })
    const asTenant = yield* TenetClient.make({ baseUrl: target.baseUrl, tenantToken: session.api_token })
    const request = { path: { tenant_id: tenant.id }, payload: { ...body, token: session.api_token } }
    // First what it would do (validated as the real post, nothing created), then the post.
    const plan = yield* asTenant.topology.deploy({ ...request, urlParams: { dry_run: true } })
    const view = yield* asTenant.topology.deploy(request)
    return { plan, view }
  }).pipe(Effect.provide(FetchHttpClient.layer))

/** What a dry run says the post would create, and the traffic it would open per VPC. */
export const describePlan = (plan: Topology.TopologyImpact): Array<string> => {
  const names = new Map(plan.created.vpcs.map((v) => [v.id as string, v.name]))
  return [
    `would create ${plan.created.vpcs.length} VPCs, ${plan.created.subnets.length} subnets, ` +
    `${plan.created.pods.length} pods`,
    ...plan.vpcs.map((impact) => {
      const blocks = [...new Set(impact.opened.flatMap((r) => r.remote_cidrs))]
      return `  VPC ${names.get(impact.vpc_id) ?? impact.vpc_id} would open ${impact.opened.length} regions ` +
        `(from ${blocks.join(", ")}) and close ${impact.closed.length}`
    })
  ]
}

/** One line per VPC, subnet and pod: what a person wants to see after a deploy. */
export const describe = (view: Topology.TopologyView): Array<string> =>
  view.vpcs.flatMap((vpc) => [
    `VPC ${vpc.name} (internet: ${vpc.enable_internet ? "yes" : "no"}, applied: ${vpc.applied})`,
    ...vpc.subnets.flatMap((subnet) => [
      `  subnet ${subnet.name} ${subnet.cidr} via ${subnet.gateway_ip}`,
      ...subnet.pods.map((pod) =>
        `    pod ${pod.name} ${pod.container_image}: ${pod.status.phase}, ` +
        `${pod.status.ready_replicas}/${pod.status.desired_replicas} ready, VIP ${pod.status.vip}`
      )
    ])
  ])
