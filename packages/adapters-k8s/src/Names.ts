/**
 * What Tenet's objects are called in the cluster and how they are labelled. Names derive from
 * ids alone (UUIDs), so they are deterministic, collision-free and never need renaming when a
 * resource is renamed in Tenet; the human name rides along as an annotation.
 */
import type { Ids } from "@tenet/core"

/** Every object Tenet creates carries this label, so nothing it made can be orphaned unseen. */
export const MANAGED_BY = "app.kubernetes.io/managed-by"
export const MANAGER = "tenet"
export const TENANT = "tenet.dev/tenant"
export const VPC = "tenet.dev/vpc"
export const SUBNET = "tenet.dev/subnet"
export const POD = "tenet.dev/pod"
export const REGISTRY = "tenet.dev/registry"
/** The edge route (tunnel) an object serves. */
export const ROUTE = "tenet.dev/route"
/** Which part of a workload an object is: the selector between sibling objects of one pod. */
export const COMPONENT = "app.kubernetes.io/component"
export const DISPLAY_NAME = "tenet.dev/name"

/** The server-side apply field manager: one for every object Tenet writes. */
export const FIELD_MANAGER = "tenet"

/** A VPC's namespace; its pods, services and connector live there. */
export const namespace = (vpcId: Ids.VpcId) => `tenet-${vpcId}`
/** The Kube-OVN Vpc (cluster-scoped). */
export const vpc = (vpcId: Ids.VpcId) => `tenet-${vpcId}`
/** The Kube-OVN Subnet (cluster-scoped). */
export const subnet = (subnetId: Ids.SubnetId) => `tenet-${subnetId}`
/** The VPC's internet egress: its OvnEip and, per subnet, the OvnSnatRule using it. */
export const vpcEgress = (vpcId: Ids.VpcId) => `tenet-egress-${vpcId}`
export const subnetEgress = (subnetId: Ids.SubnetId) => `tenet-egress-${subnetId}`
/**
 * A pod's Deployment, Service, HPA, PVC and env Secret share one name: a DNS-1035 label of 38
 * characters, which leaves room for the ReplicaSet and pod suffixes Kubernetes appends.
 */
export const workload = (podId: Ids.PodId) => `p-${podId}`
/** A pod's own external address (OvnEip) and the NAT rules that use it. */
export const podEip = (podId: Ids.PodId) => `tenet-eip-${podId}`
export const podDnat = (podId: Ids.PodId, protocol: "tcp" | "udp") => `tenet-dnat-${protocol}-${podId}`
/** One SNAT rule per replica address: OVN NATs by source address, and replicas come and go. */
export const podSnat = (podId: Ids.PodId, address: string) => `tenet-snat-${podId}-${address.replaceAll(".", "-")}`
/** A UDP tunnel's external IP and DNAT rule. */
export const udpRoute = (key: string) => `tenet-udp-${key}`
/** The provider-side tunnel of a VPC, or the platform's own. */
export const edgeTunnel = (vpcId: Ids.VpcId | null) => vpcId === null ? "tenet-platform" : `tenet-${vpcId}`
/** The VPC a provider-side tunnel serves (null: the platform's), or undefined when it is not Tenet's. */
export const vpcOfEdgeTunnel = (name: string): Ids.VpcId | null | undefined =>
  name === edgeTunnel(null)
    ? null
    : /^tenet-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(name)
    ? name.slice("tenet-".length) as Ids.VpcId
    : undefined
/** Registry secrets live in every namespace of the tenant that pulls with them. */
export const registrySecret = (name: string) => `registry-${name}`

/** The labels of an object owned by a tenant, optionally scoped to a VPC, subnet or pod. */
export const labels = (owner: {
  readonly tenant_id: Ids.TenantId
  readonly vpc_id?: Ids.VpcId
  readonly subnet_id?: Ids.SubnetId
  readonly pod_id?: Ids.PodId
}): Record<string, string> => ({
  [MANAGED_BY]: MANAGER,
  [TENANT]: owner.tenant_id,
  ...(owner.vpc_id === undefined ? {} : { [VPC]: owner.vpc_id }),
  ...(owner.subnet_id === undefined ? {} : { [SUBNET]: owner.subnet_id }),
  ...(owner.pod_id === undefined ? {} : { [POD]: owner.pod_id })
})

/** A label selector matching every object Tenet manages with the given labels. */
export const selector = (match: Readonly<Record<string, string>>): string =>
  Object.entries({ [MANAGED_BY]: MANAGER, ...match }).map(([k, v]) => `${k}=${v}`).join(",")
