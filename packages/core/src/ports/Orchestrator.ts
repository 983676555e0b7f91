/**
 * The Orchestrator port: the cluster that runs what the store describes. Every call is
 * idempotent (applying the same spec twice changes nothing) and may fail with
 * `OrchestratorError`; the caller records the failure and a reconciler retries.
 */
import type { Effect, Option, Stream } from "effect"
import { Context, Schema } from "effect"
import type { PodId, SubnetId, TenantId, VpcId } from "../domain/Ids.js"
import type { DnsLabel, Ipv4Address, Ipv4Network } from "../domain/Net.js"
import type { PodPhase } from "../domain/Pod.js"
import type { SecurityPlan } from "../rules/Plan.js"

export class OrchestratorError extends Schema.TaggedError<OrchestratorError>()("OrchestratorError", {
  operation: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `${this.operation}: ${this.detail}`
  }
}

export interface VpcSpec {
  readonly tenant_id: TenantId
  readonly vpc_id: VpcId
  readonly name: DnsLabel
  readonly enable_internet: boolean
  /** Where the VPC reaches the outside (from the provider configuration); null until configured. */
  readonly uplink: VpcUplink | null
  /** The VPCs peered with this one (`Paths`): its routes to their blocks, over the pair's link. */
  readonly peerings: ReadonlyArray<VpcPeering>
}

/** A peering of two VPCs' routers, as one side holds it. */
export interface VpcPeering {
  readonly remote_vpc_id: VpcId
  /** This router's address on the pair's link, with the link's prefix (`169.254.0.1/30`). */
  readonly local_connect_ip: string
  /** The other router's address on the link (no prefix): the next hop of the routes to its blocks. */
  readonly remote_connect_ip: string
  /** The other VPC's subnet blocks. */
  readonly remote_blocks: ReadonlyArray<string>
}

/** The provider network a VPC's router attaches to: its gateway and the core services' block. */
export interface VpcUplink {
  readonly external_gateway: Ipv4Address
  readonly peering_subnet_cidr: Ipv4Network
}

export interface SubnetSpec {
  readonly tenant_id: TenantId
  readonly vpc_id: VpcId
  readonly subnet_id: SubnetId
  readonly name: DnsLabel
  readonly cidr: Ipv4Network
  readonly gateway_ip: Ipv4Address
  /** Whether the subnet's traffic leaves for the internet: the VPC has `enable_internet` and an uplink. */
  readonly enable_internet: boolean
}

export interface PodSpec {
  readonly tenant_id: TenantId
  readonly vpc_id: VpcId
  readonly subnet_id: SubnetId
  readonly pod_id: PodId
  readonly name: DnsLabel
  readonly image: string
  /** Desired replicas; with autoscaling, the initial count. */
  readonly replicas: number
  readonly service_port: number
  /** Plain values, only ever in memory on the way to the cluster's secret store. */
  readonly env: Readonly<Record<string, string>>
  /** Names of the tenant's registry credentials to pull with. */
  readonly registry_credentials: ReadonlyArray<string>
  readonly auto_healing: boolean
  readonly autoscaling: {
    readonly min_replicas: number
    readonly max_replicas: number
    readonly cpu_target_millicores: number
  } | null
  readonly persistent_mount_path: string | null
  readonly gpu_count: number
  readonly external_access: boolean
  /** The pool external IPs come from, when the pod takes inbound traffic. */
  readonly external_inbound: { readonly subnet_cidr: Ipv4Network; readonly gateway: Ipv4Address } | null
  /** The pod's resolver settings (the provider configuration's `pod_dns_*`). */
  readonly dns: { readonly nameservers: ReadonlyArray<Ipv4Address>; readonly ndots: number | null }
  /**
   * The virtual IP the pod was given, once it has one: kept for the pod's life, so a Service made
   * again (deleted behind Tenet's back) asks for it, while it is free.
   */
  readonly vip: Ipv4Address | null
}

/** Where a pod is reachable; stable for the pod's life, across recreates. */
export interface PodPlacement {
  readonly vip: Ipv4Address
  readonly external_ip: Ipv4Address | null
}

export interface PodRuntime {
  readonly phase: PodPhase
  readonly ready_replicas: number
  readonly desired_replicas: number
  readonly vip: Ipv4Address | null
  readonly external_ip: Ipv4Address | null
  readonly last_error: string | null
  /**
   * When what is reported stopped being known current (the backend lost its view of the
   * cluster and is getting it back): the rest is the last status seen. Null when current.
   */
  readonly stale_since: Date | null
}

export interface RegistrySecretSpec {
  readonly tenant_id: TenantId
  readonly name: DnsLabel
  readonly server: string
  readonly username: string
  readonly password: string
}

/**
 * Something the cluster did to an object Tenet owns that Tenet did not ask for, or a pod's
 * replica addresses moving (which the VPC's ACLs and the pod's SNAT rules follow).
 */
export interface ClusterChange {
  readonly tenant_id: TenantId
  readonly vpc_id: VpcId
  /** The subnet the object serves, if one. */
  readonly subnet_id: SubnetId | null
  /** The pod the object belongs to; null for the VPC's own objects (router, subnets, namespace, egress). */
  readonly pod_id: PodId | null
  /** The object as the cluster names it: `Subnet tenet-…`. */
  readonly object: string
  /**
   * `deleted`: removed (or being removed) by someone else; `changed`: fields Tenet set were
   * changed by `manager`; `addresses`: the pod's replicas' addresses are not what they were.
   */
  readonly change: "deleted" | "changed" | "addresses"
  /** Who made the change, as the cluster records it (its field manager); null when it does not say. */
  readonly manager: string | null
  /** The fields taken from Tenet, for `changed`. */
  readonly fields: ReadonlyArray<string>
}

/** Something the cluster holds for Tenet, by the owner it serves: a VPC, one of its subnets, or a pod. */
export interface ClusterOwner {
  readonly tenant_id: TenantId
  readonly vpc_id: VpcId
  readonly subnet_id: SubnetId | null
  readonly pod_id: PodId | null
}

export interface OrchestratorShape {
  /** Which implementation runs, for the startup line and `/healthz`. */
  readonly backend: string
  readonly applyVpc: (spec: VpcSpec) => Effect.Effect<void, OrchestratorError>
  /** Removes the VPC and everything running in it. Absent is success. */
  readonly deleteVpc: (vpcId: VpcId) => Effect.Effect<void, OrchestratorError>
  readonly applySubnet: (spec: SubnetSpec) => Effect.Effect<void, OrchestratorError>
  readonly deleteSubnet: (vpcId: VpcId, subnetId: SubnetId) => Effect.Effect<void, OrchestratorError>
  /** Replaces the VPC's enforced security plan as a whole. */
  readonly applySecurityPlan: (plan: SecurityPlan) => Effect.Effect<void, OrchestratorError>
  /** Creates the pod or updates it in place (image, replicas, scaling). */
  readonly applyPod: (spec: PodSpec) => Effect.Effect<PodPlacement, OrchestratorError>
  /** Stops the workload, applies the spec and starts it again; VIP and external IP survive. */
  readonly recreatePod: (spec: PodSpec) => Effect.Effect<PodPlacement, OrchestratorError>
  readonly restartPod: (podId: PodId) => Effect.Effect<void, OrchestratorError>
  /** Removes the pod with its service and addresses. Absent is success. */
  readonly deletePod: (podId: PodId) => Effect.Effect<void, OrchestratorError>
  /** What the cluster reports for the pod; none when it does not know it. */
  readonly podStatus: (podId: PodId) => Effect.Effect<Option.Option<PodRuntime>, OrchestratorError>
  /**
   * What the cluster reports for each of the tenant's pods it knows, in one round of reads:
   * listing pods must not cost a cluster call per pod.
   */
  readonly podStatuses: (tenantId: TenantId) => Effect.Effect<ReadonlyMap<PodId, PodRuntime>, OrchestratorError>
  readonly applyRegistrySecret: (spec: RegistrySecretSpec) => Effect.Effect<void, OrchestratorError>
  readonly deleteRegistrySecret: (tenantId: TenantId, name: DnsLabel) => Effect.Effect<void, OrchestratorError>
  /** Removes whatever the tenant still has in the cluster. Absent is success. */
  readonly deleteTenant: (tenantId: TenantId) => Effect.Effect<void, OrchestratorError>
  /**
   * Every change to Tenet's objects it did not make, as the cluster's watches deliver them, for
   * the controller to converge the owner again. Each subscriber sees the changes after it
   * subscribed.
   */
  readonly changes: Stream.Stream<ClusterChange>
  /**
   * Every VPC, subnet and pod the cluster holds objects for, as last observed (for a resync to
   * compare with the committed state: what is missing, and what no committed state wants).
   */
  readonly inventory: Effect.Effect<ReadonlyArray<ClusterOwner>, OrchestratorError>
}

export class Orchestrator extends Context.Tag("@tenet/core/Orchestrator")<Orchestrator, OrchestratorShape>() {}
