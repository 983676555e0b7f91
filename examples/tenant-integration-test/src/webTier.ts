/**
 * A tenant's own automation, the code under test: it provisions a web tier (a VPC, a subnet,
 * HTTPS allowed in, SSH only from the office, the site and a bastion published to the internet
 * on their ports) and scales it, through the Tenet client.
 */
import type { TenetClient } from "@tenet/client"
import { Effect } from "effect"

export interface WebTier {
  readonly vpcId: string
  readonly podId: string
  readonly bastionId: string
}

export const provision = (tenet: TenetClient.Client, office: string) =>
  Effect.gen(function*() {
    const vpc = yield* tenet.vpcs.create({ payload: { name: "web", enable_internet: true } })
    const subnet = yield* tenet.subnets.create({
      payload: { vpc_id: vpc.id, name: "frontend", cidr: "10.20.0.0/24", gateway_ip: "10.20.0.1" }
    })
    const ingress = { vpc_id: vpc.id, direction: "ingress", action: "allow", protocol: "tcp" } as const
    yield* tenet.securityRules.create({
      payload: { ...ingress, name: "https", priority: 100, ports: "443", remote_type: "cidr", remote_cidr: "0.0.0.0/0" }
    })
    yield* tenet.securityRules.create({
      payload: {
        ...ingress,
        name: "ssh from the office",
        priority: 200,
        ports: "22",
        remote_type: "cidr",
        remote_cidr: office
      }
    })
    // The internet reaches only what is published: each pod's service port on its external address.
    const published = { vpc_id: vpc.id, subnet_id: subnet.id, external_access: true, external_inbound: true }
    const pod = yield* tenet.pods.create({
      payload: { ...published, name: "site", container_image: "nginx:1.27", replica_count: 2, service_port: 443 }
    })
    const bastion = yield* tenet.pods.create({
      payload: { ...published, name: "bastion", container_image: "openssh:9", service_port: 22 }
    })
    return { vpcId: vpc.id, podId: pod.id, bastionId: bastion.id } satisfies WebTier
  })

/** Adds replicas until the pod has `count`; answers the replicas it ends with. */
export const scaleTo = (tenet: TenetClient.Client, tier: WebTier, count: number) =>
  Effect.gen(function*() {
    let pod = (yield* tenet.pods.list()).find((p) => p.id === tier.podId)!
    while (pod.replica_count < count) pod = yield* tenet.pods.addReplica({ path: { pod_id: pod.id } })
    return pod.replica_count
  })
