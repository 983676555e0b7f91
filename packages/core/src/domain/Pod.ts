/** Pods: containerized workloads with replicas behind one virtual-IP service. */
import { Schema, Struct } from "effect"
import {
  BodyTenantId,
  BodyToken,
  intBetween,
  oncePerRecord,
  Port,
  stringBetween,
  Timestamp,
  wireExample
} from "./Common.js"
import * as Etag from "./Etag.js"
import { PodId, SubnetId, TenantId, VpcId } from "./Ids.js"
import { DnsLabel, Ipv4Address } from "./Net.js"
import { TunnelCreate } from "./Tunnel.js"

export const MIN_REPLICAS = 1
export const MAX_REPLICAS = 10
export const MIN_AUTOSCALE_REPLICAS = 2

/** An OCI image reference: `[registry[:port]/]path[:tag][@sha256:digest]`. */
export const ContainerImage = Schema.String.pipe(
  Schema.filter((s) =>
    (s.length <= 512 &&
      /^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?\/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/
        .test(s)) ||
    "must be a container image reference such as registry.example.com/team/app:1.2"
  ),
  Schema.annotations({
    identifier: "ContainerImage",
    examples: ["nginx:1.27"],
    arbitrary: () => (fc) =>
      fc.tuple(fc.stringMatching(/^[a-z0-9]{1,12}(?:\/[a-z0-9]{1,12})?$/), fc.stringMatching(/^\w[\w.-]{0,16}$/))
        .map(([path, tag]) => `${path}:${tag}`)
  })
)

/** Environment variable names as Kubernetes accepts them. */
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/

/**
 * Keys are checked here rather than by a key schema: a Record drops keys its key schema
 * refuses, and a misspelt name must be an error, not a silent loss.
 */
export const EnvVars = Schema.Record({ key: Schema.String, value: stringBetween(0, 32768) }).pipe(
  Schema.filter((r) => {
    const names = Object.keys(r)
    if (names.length > 128) return "at most 128 environment variables"
    const bad = names.find((n) => n.length > 253 || !ENV_NAME.test(n))
    return bad === undefined ||
      `'${bad}' is not an environment variable name: letters, digits, '_', '-', '.', not starting with a digit`
  }),
  Schema.annotations({
    identifier: "EnvVars",
    description: "Names and values are strings only; stored encrypted, never returned (only the names are)",
    arbitrary: () => (fc) =>
      fc.dictionary(fc.stringMatching(/^[A-Za-z_][\w.-]{0,20}$/), fc.string({ maxLength: 32 }), { maxKeys: 8 })
  })
)

export const ReplicaCount = intBetween(MIN_REPLICAS, MAX_REPLICAS)
export const AutoscaleReplicas = intBetween(2, 50)
export const CpuTargetMillicores = intBetween(10, 10000)
export const MountPath = Schema.String.pipe(
  // Control characters (a trailing newline, say) would reach the cluster as part of the path.
  Schema.filter((s) => /^\/[^\x00-\x1f\x7f]{0,4095}$/.test(s) || "must be an absolute path without control characters"),
  Schema.annotations({ arbitrary: () => (fc) => fc.stringMatching(/^\/[\w./-]{0,40}$/) })
)

export const PodCreate = Schema.Struct({
  tenant_id: BodyTenantId,
  token: BodyToken,
  vpc_id: VpcId,
  subnet_id: SubnetId,
  name: DnsLabel,
  container_image: ContainerImage,
  replica_count: Schema.optionalWith(ReplicaCount, { default: () => 1 }),
  service_port: Schema.optionalWith(Port, { default: () => 80 }),
  use_registry_credentials: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  external_access: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  external_inbound: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  auto_healing: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  auto_scaling: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  autoscale_max_replicas: Schema.optionalWith(AutoscaleReplicas, { default: () => 10 }),
  autoscale_cpu_target_millicores: Schema.optionalWith(CpuTargetMillicores, { default: () => 200 }),
  tunnels: Schema.optionalWith(Schema.Array(TunnelCreate).pipe(Schema.maxItems(16)), { default: () => [] }),
  env_vars: Schema.optional(EnvVars),
  gpu_count: Schema.optionalWith(intBetween(0, 8), { default: () => 0 }).annotations({
    description: "GPUs per replica; set at creation only (the spec: GPU access cannot change)"
  })
}).annotations({
  identifier: "PodCreate",
  examples: wireExample({
    tenant_id: "2f9c6a1e-4b7d-4c3a-9e8f-1a2b3c4d5e6f",
    token: "{token}",
    vpc_id: "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a",
    subnet_id: "c1a2b3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
    name: "storefront",
    container_image: "nginx:1.27",
    replica_count: 2,
    service_port: 80,
    env_vars: { "MODE": "production" },
    use_registry_credentials: false,
    external_access: false,
    external_inbound: false,
    auto_healing: false,
    auto_scaling: false,
    autoscale_max_replicas: 10,
    autoscale_cpu_target_millicores: 200,
    tunnels: [],
    gpu_count: 0
  })
})
export type PodCreate = typeof PodCreate.Type

export const PodConfigPatch = Schema.Struct({
  auto_healing: Schema.optional(Schema.Boolean),
  persistent: Schema.optional(Schema.Boolean),
  persistent_mount_path: Schema.optional(MountPath),
  auto_scaling: Schema.optional(Schema.Boolean),
  autoscale_min_replicas: Schema.optional(AutoscaleReplicas),
  autoscale_max_replicas: Schema.optional(AutoscaleReplicas),
  autoscale_cpu_target_millicores: Schema.optional(CpuTargetMillicores),
  env_vars: Schema.optional(EnvVars)
}).annotations({
  identifier: "PodConfigPatch",
  // Like every body (contract/Payloads), it refuses unknown fields: gpu_count (fixed at creation)
  // and replica_count (use /replicas) among them.
  examples: wireExample({ auto_scaling: true, autoscale_min_replicas: 2, autoscale_max_replicas: 6 })
})
export type PodConfigPatch = typeof PodConfigPatch.Type

export const PodPhase = Schema.Literal(
  "pending",
  "running",
  "degraded",
  "stopped",
  "failed",
  "deleting",
  "unknown"
).annotations({
  identifier: "PodPhase",
  description: "pending: starting, no replica ready yet; running: all desired replicas ready; " +
    "degraded: some ready; stopped: the workload is not running (restart it); failed: the cluster " +
    "refused it or it cannot start (see last_error; the platform retries); deleting: being removed; " +
    "unknown: the cluster cannot be read right now"
})
export type PodPhase = typeof PodPhase.Type

export const PodStatus = Schema.Struct({
  phase: PodPhase,
  ready_replicas: Schema.Int,
  desired_replicas: Schema.Int,
  vip: Schema.NullOr(Ipv4Address),
  external_ip: Schema.NullOr(Ipv4Address),
  last_error: Schema.NullOr(Schema.String),
  stale_since: Schema.NullOr(Schema.DateFromString).annotations({
    description: "Null when the status is known current. Otherwise the time since which the platform's view of " +
      "the cluster could not be confirmed (it is reconnecting): the other fields are the last status seen."
  })
}).annotations({ identifier: "PodStatus" })
export type PodStatus = typeof PodStatus.Type

/** What the store keeps of a pod: the desired pod, its secrets sealed, and how applying it went. */
export const PodRecord = Schema.Struct({
  id: PodId,
  tenant_id: TenantId,
  vpc_id: VpcId,
  subnet_id: SubnetId,
  name: DnsLabel,
  container_image: Schema.String,
  replica_count: Schema.Int,
  service_port: Schema.Int,
  use_registry_credentials: Schema.Boolean,
  external_access: Schema.Boolean,
  external_inbound: Schema.Boolean,
  auto_healing: Schema.Boolean,
  auto_scaling: Schema.Boolean,
  autoscale_min_replicas: Schema.Int,
  autoscale_max_replicas: Schema.Int,
  autoscale_cpu_target_millicores: Schema.Int,
  persistent: Schema.Boolean,
  persistent_mount_path: Schema.String,
  gpu_count: Schema.Int,
  env_var_names: Schema.Array(Schema.String),
  /** AES-256-GCM ciphertext of the JSON object of environment variables; null when none. */
  env_ciphertext: Schema.NullOr(Schema.String),
  /** The virtual IP and external IP the cluster gave the pod; kept for its life. */
  vip: Schema.NullOr(Ipv4Address),
  external_ip: Schema.NullOr(Ipv4Address),
  /** `deleting` while a delete is under way: configuration changes are refused then. */
  lifecycle: Schema.Literal("active", "deleting"),
  /** When the delete under way was marked (`DeleteMark`); null when none is. */
  deleting_since: Schema.NullOr(Timestamp),
  applied: Schema.Boolean,
  apply_error: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
})
export interface PodRecord extends Schema.Schema.Type<typeof PodRecord> {}

/** The fields of a pod's record a user never sees: sealed secrets and the apply bookkeeping (the status says it). */
export const HIDDEN_FIELDS = [
  "env_ciphertext",
  "vip",
  "external_ip",
  "lifecycle",
  "deleting_since",
  "applied",
  "apply_error",
  "updated_at"
] as const

/** The pod as a user sees it: its record without what is hidden, with its status from the cluster. */
export class Pod extends Schema.Class<Pod>("Pod")({
  ...Struct.omit(PodRecord.fields, ...HIDDEN_FIELDS),
  status: PodStatus,
  etag: Etag.Field
}) {}

/** The pod's version: what it declares (its sealed variables included), not how applying it went. */
export const etagOf = oncePerRecord((record: PodRecord): string =>
  Etag.of(record, ["vip", "external_ip", "lifecycle", "deleting_since", "applied", "apply_error"])
)

export class PodRestart extends Schema.Class<PodRestart>("PodRestart")({
  pod_id: PodId,
  detail: Schema.String
}) {}

export const PodTopologyItem = Schema.Struct({
  name: DnsLabel,
  vpc_name: DnsLabel,
  subnet_name: DnsLabel,
  container_image: ContainerImage,
  replica_count: Schema.optionalWith(ReplicaCount, { default: () => 1 }),
  service_port: Schema.optionalWith(Port, { default: () => 80 }),
  auto_scaling: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  autoscale_max_replicas: Schema.optionalWith(AutoscaleReplicas, { default: () => 10 }),
  autoscale_cpu_target_millicores: Schema.optionalWith(CpuTargetMillicores, { default: () => 200 })
}).annotations({ identifier: "PodTopologyItem" })
