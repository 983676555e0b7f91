/**
 * A stored pod made to run in the cluster, and the outcome recorded on it: the pod's spec
 * from its record (its environment decrypted, the provider configuration's DNS and external
 * pool), its registry credentials put in the cluster when it uses them, the apply (or
 * recreate), then `vip`, `external_ip`, `applied` and `apply_error` written onto the latest
 * record through the pipeline. `Pods` asks for it after a change; the reconciler through
 * `Pods.apply` and `Pods.reconcile`.
 */
import { Context, Effect, Either, Hash, Layer, Option } from "effect"
import { Pipeline, updatingLatest } from "../changes/Pipeline.js"
import type { PodId, TenantId } from "../domain/Ids.js"
import type { Ipv4Address } from "../domain/Net.js"
import type { PodRecord } from "../domain/Pod.js"
import type { InternalError, ServiceUnavailable } from "../Errors.js"
import * as Metrics from "../observability/Metrics.js"
import type { PodSpec } from "../ports/Orchestrator.js"
import { Orchestrator } from "../ports/Orchestrator.js"
import { Vault } from "../ports/Vault.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import { storeUnavailable, vaultFailure } from "./Failures.js"
import { initialReplicas } from "./PodPresentation.js"
import { ProviderConfigs } from "./ProviderConfigs.js"
import { RegistryCredentials } from "./RegistryCredentials.js"

export interface PodConvergenceShape {
  /**
   * Runs the pod as stored now (recreating it when asked) and records where it is reachable;
   * answers the record as it is after (the one given, when the pod was deleted meanwhile).
   */
  readonly converge: (
    record: PodRecord,
    mode: "apply" | "recreate"
  ) => Effect.Effect<PodRecord, ServiceUnavailable | InternalError>
  /** Applies the stored pod, when it is active. */
  readonly apply: (tenantId: TenantId, id: PodId) => Effect.Effect<void, ServiceUnavailable | InternalError>
}

/** What the cluster is asked to run: the record without the outcome of applying it. */
const desired = (record: PodRecord) =>
  JSON.stringify({ ...record, vip: null, external_ip: null, applied: null, apply_error: null, updated_at: null })

export class PodConvergence extends Context.Tag("@tenet/core/PodConvergence")<PodConvergence, PodConvergenceShape>() {
  static readonly layer = Layer.effect(
    PodConvergence,
    Effect.gen(function*() {
      const vault = yield* Vault
      const pipeline = yield* Pipeline
      const readModel = yield* ReadModel
      const orchestrator = yield* Orchestrator
      const configs = yield* ProviderConfigs
      const credentials = yield* RegistryCredentials

      const stateOf = (tenantId: TenantId) => readModel.stateOf(tenantId).pipe(storeUnavailable)

      const specOf = (record: PodRecord) =>
        Effect.gen(function*() {
          const env = record.env_ciphertext === null
            ? {}
            : JSON.parse(yield* vault.decrypt(record.env_ciphertext).pipe(vaultFailure)) as Record<string, string>
          const config = yield* configs.current
          return {
            tenant_id: record.tenant_id,
            vpc_id: record.vpc_id,
            subnet_id: record.subnet_id,
            pod_id: record.id,
            name: record.name,
            image: record.container_image,
            replicas: initialReplicas(record),
            service_port: record.service_port,
            env,
            registry_credentials: [],
            auto_healing: record.auto_healing,
            autoscaling: record.auto_scaling
              ? {
                min_replicas: record.autoscale_min_replicas,
                max_replicas: record.autoscale_max_replicas,
                cpu_target_millicores: record.autoscale_cpu_target_millicores
              }
              : null,
            persistent_mount_path: record.persistent ? record.persistent_mount_path : null,
            gpu_count: record.gpu_count,
            external_access: record.external_access,
            external_inbound: record.external_inbound && Option.isSome(config)
              ? { subnet_cidr: config.value.external_subnet_cidr, gateway: config.value.external_subnet_gateway }
              : null,
            dns: Option.match(config, {
              onNone: () => ({ nameservers: [], ndots: null }),
              onSome: (c) => ({ nameservers: c.pod_dns_nameservers, ndots: c.pod_dns_ndots })
            })
          } satisfies PodSpec
        })

      // Applies of one pod run one at a time, each with the pod as stored when it starts, so
      // the cluster ends with the latest record even when changes race. Striped, so bounded.
      const stripes = yield* Effect.forEach(Array.from({ length: 64 }), () => Effect.makeSemaphore(1))
      const stripeOf = (id: PodId) => stripes[Math.abs(Hash.string(id)) % stripes.length]!

      // The outcome is written onto the latest record under the VPC's lock; a change saved
      // meanwhile is not in force yet (its own apply follows).
      const converge: PodConvergenceShape["converge"] = (record, mode) =>
        Effect.gen(function*() {
          const latest = (yield* stateOf(record.tenant_id)).pod(record.id)
          // Deleted, or being deleted, since it was asked for: not to be run again.
          if (latest === undefined || latest.lifecycle !== "active") return latest ?? record
          const current = latest
          const spec = yield* specOf(current)
          const outcome = yield* Effect.gen(function*() {
            const pullSecrets = current.use_registry_credentials
              ? yield* credentials.ensureInCluster(current.tenant_id)
              : []
            const full = { ...spec, registry_credentials: pullSecrets }
            return yield* mode === "apply" ? orchestrator.applyPod(full) : orchestrator.recreatePod(full)
          }).pipe(
            Effect.map(Either.right),
            Effect.catchTag("OrchestratorError", (e) => Effect.succeed(Either.left(e))),
            Effect.tap((outcome) => Metrics.recordApply("pod", Either.isRight(outcome)))
          )
          // An outcome already recorded is not recorded again: a repeated apply that changes
          // nothing in the cluster changes nothing in the store either.
          const unchanged = Either.match(outcome, {
            onLeft: (e) => !current.applied && current.apply_error === e.message,
            onRight: (placed) =>
              current.applied && current.apply_error === null && current.vip === placed.vip &&
              current.external_ip === placed.external_ip
          })
          if (unchanged) return current
          const saved = yield* pipeline.record(current.tenant_id, (state) =>
            Effect.succeed({
              ...updatingLatest("pods", current.id, state.pod(current.id), (latest) =>
                Either.isRight(outcome)
                  ? {
                    ...latest,
                    vip: outcome.right.vip as Ipv4Address,
                    external_ip: outcome.right.external_ip as Ipv4Address | null,
                    applied: desired(latest) === desired(current),
                    apply_error: null
                  }
                  : { ...latest, applied: false, apply_error: outcome.left.message }),
              decidedOn: [current.vpc_id]
            })).pipe(Effect.catchTag("UniqueViolation", Effect.die))
          // A pod deleted meanwhile had nothing to record.
          return saved.result ?? current
        }).pipe(stripeOf(record.id).withPermits(1))

      const apply: PodConvergenceShape["apply"] = (tenantId, id) =>
        Effect.flatMap(stateOf(tenantId), (state) => {
          const pod = state.pod(id)
          return pod !== undefined && pod.lifecycle === "active" ? Effect.asVoid(converge(pod, "apply")) : Effect.void
        })

      return PodConvergence.of({ converge, apply })
    })
  )
}
