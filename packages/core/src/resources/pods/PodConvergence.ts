/**
 * A stored pod made to run in the cluster, and the outcome recorded on it: the pod's spec
 * from its record (its environment decrypted, the provider configuration's DNS and external
 * pool), its registry credentials put in the cluster when it uses them, the apply (or
 * recreate), then `vip`, `external_ip`, `applied` and `apply_error` written onto the latest
 * record through the pipeline, off the request, on a `Convergence` keyed by pod. `Pods` asks for
 * it after a change (`request`, bounded); `Pods.reconcile` and a delete taken back through
 * `converge`, the controller through `apply`.
 */
import { Context, Duration, Effect, Either, Layer, Option } from "effect"
import { Pipeline, updatingLatest } from "../../changes/Pipeline.js"
import type { PodId, TenantId } from "../../domain/Ids.js"
import type { Ipv4Address } from "../../domain/Net.js"
import type { PodRecord } from "../../domain/Pod.js"
import type { InternalError, ServiceUnavailable } from "../../Errors.js"
import * as Metrics from "../../observability/Metrics.js"
import { storeUnavailable, vaultFailure } from "../../ports/Failures.js"
import type { PodSpec } from "../../ports/Orchestrator.js"
import { Orchestrator, OrchestratorError } from "../../ports/Orchestrator.js"
import { Store } from "../../ports/Store.js"
import { Vault } from "../../ports/Vault.js"
import { ReadModel } from "../../readmodel/ReadModel.js"
import * as Convergence from "../../usecases/Convergence.js"
import { ProviderConfigs } from "../../usecases/ProviderConfigs.js"
import { RegistryCredentials } from "../registryCredentials/RegistryCredentials.js"
import { Tunnels } from "../tunnels/Tunnels.js"
import { initialReplicas } from "./PodPresentation.js"

export type Mode = "apply" | "recreate"

export interface PodConvergenceShape {
  /**
   * A request's convergence of the pod (recreated when asked), begun after this call: the record
   * as it is after; past the bound, the record as it stands, not yet applied (the convergence
   * goes on and records its outcome). The record given when the pod was deleted meanwhile.
   */
  readonly request: (record: PodRecord, mode: Mode) => Effect.Effect<PodRecord, ServiceUnavailable | InternalError>
  /** `request`, waiting however long the convergence takes: a delete taken back, the reconciler. */
  readonly converge: (record: PodRecord, mode: Mode) => Effect.Effect<PodRecord, ServiceUnavailable | InternalError>
  /** Applies the stored pod, when it is active, however long it takes: for the controller. */
  readonly apply: (tenantId: TenantId, id: PodId) => Effect.Effect<void, ServiceUnavailable | InternalError>
}

export interface Options {
  /** How long a request waits for its pod in force before answering it still applying (2 s). */
  readonly wait?: Duration.DurationInput
  /** Pods converged at once (4). */
  readonly workers?: number
  /**
   * An apply that takes longer is recorded as failed and retried later (30 s: a pod's apply waits
   * for its external address too). A hung cluster call must not hold a worker for ever.
   */
  readonly timeout?: Duration.DurationInput
}

/** A pod of a tenant. */
interface Owner {
  readonly tenantId: TenantId
  readonly podId: PodId
}

/** What the cluster is asked to run: the record without the outcome of applying it. */
const desired = (record: PodRecord) =>
  JSON.stringify({ ...record, vip: null, external_ip: null, applied: null, apply_error: null, updated_at: null })

export class PodConvergence extends Context.Tag("@tenet/core/PodConvergence")<PodConvergence, PodConvergenceShape>() {
  static readonly layer = (options: Options = {}) =>
    Layer.scoped(
      PodConvergence,
      Effect.gen(function*() {
        const vault = yield* Vault
        const pipeline = yield* Pipeline
        const readModel = yield* ReadModel
        const orchestrator = yield* Orchestrator
        const configs = yield* ProviderConfigs
        const credentials = yield* RegistryCredentials
        const tunnels = yield* Tunnels
        const store = yield* Store
        const wait = Duration.decode(options.wait ?? Duration.seconds(2))
        const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
        const stillApplying = Convergence.stillApplying(wait, "pod")

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
              vip: record.vip,
              dns: Option.match(config, {
                onNone: () => ({ nameservers: [], ndots: null }),
                onSome: (c) => ({ nameservers: c.pod_dns_nameservers, ndots: c.pod_dns_ndots })
              })
            } satisfies PodSpec
          })

        /**
         * Runs the pod as stored now: recreated when any request waiting asked it (its new
         * configuration needs it). Nothing when it was deleted, or is being deleted.
         */
        const applyNow = Effect.fn("PodConvergence.apply")(
          function*({ tenantId, podId }: Owner, asks: ReadonlyArray<Mode>) {
            const current = (yield* stateOf(tenantId)).pod(podId)
            if (current === undefined || current.lifecycle !== "active") return null
            const spec = yield* specOf(current)
            const outcome = yield* Effect.gen(function*() {
              const pullSecrets = current.use_registry_credentials
                ? yield* credentials.ensureInCluster(current.tenant_id)
                : []
              const full = { ...spec, registry_credentials: pullSecrets }
              const mode = asks.includes("recreate") ? "recreatePod" : "applyPod"
              return yield* orchestrator[mode](full).pipe(
                Effect.timeoutFail({
                  duration: timeout,
                  onTimeout: () =>
                    new OrchestratorError({
                      operation: mode,
                      detail: `the cluster did not answer within ${Duration.format(timeout)}`
                    })
                })
              )
            }).pipe(
              Effect.map(Either.right),
              Effect.catchTag("OrchestratorError", (e) => Effect.succeed(Either.left(e))),
              Effect.tap((outcome) => Metrics.recordApply("pod", Either.isRight(outcome)))
            )
            return { current, outcome }
          }
        )

        /**
         * The outcome written onto the latest record; a change saved meanwhile, or one asked for
         * since this convergence began (`asked`), is not in force yet (its own convergence follows).
         * A pod placed at a new address has its tunnels follow it.
         */
        const record = (
          { podId, tenantId }: Owner,
          applied: Effect.Effect.Success<ReturnType<typeof applyNow>>,
          asked: boolean
        ) =>
          Effect.gen(function*() {
            if (applied === null) return undefined
            const { current, outcome } = applied
            const now = (yield* stateOf(tenantId)).pod(podId)
            // A pod deleted meanwhile has nothing to record.
            if (now === undefined) return current
            // An outcome already recorded is not recorded again: a repeated apply that changes
            // nothing in the cluster changes nothing in the store either.
            const unchanged = !asked && Either.match(outcome, {
              onLeft: (e) => !now.applied && now.apply_error === e.message,
              onRight: (placed) =>
                now.applied && now.apply_error === null && now.vip === placed.vip &&
                now.external_ip === placed.external_ip
            })
            if (unchanged) return now
            const saved = yield* pipeline.record(current.tenant_id, (state) =>
              Effect.succeed({
                ...updatingLatest("pods", current.id, state.pod(current.id), (latest) => {
                  if (Either.isLeft(outcome)) return { ...latest, applied: false, apply_error: outcome.left.message }
                  const inForce = !asked && desired(latest) === desired(current)
                  return {
                    ...latest,
                    vip: outcome.right.vip as Ipv4Address,
                    external_ip: outcome.right.external_ip as Ipv4Address | null,
                    applied: inForce,
                    apply_error: inForce ? null : latest.apply_error ?? stillApplying
                  }
                }),
                decidedOn: [current.vpc_id]
              }))
            // A pod deleted meanwhile had nothing to record.
            if (saved.result === undefined) return current
            if (saved.result.vip !== null && saved.result.vip !== current.vip) {
              // The pod's outcome stands whatever the provider says; the tunnels' reconciler retries.
              yield* tunnels.follow(saved.result).pipe(
                Effect.catchAll((e) => Effect.logWarning("publishing a pod's tunnels at its new address failed", e))
              )
            }
            return saved.result
          })

        /** Says on an applied pod that its latest change is still being applied. */
        const markStillApplying = ({ tenantId, podId }: Owner) =>
          pipeline.record(tenantId, (state) => {
            const pod = state.pod(podId)
            return Effect.succeed(
              updatingLatest("pods", podId, pod?.applied === true ? pod : undefined, (latest) => ({
                ...latest,
                applied: false,
                apply_error: stillApplying
              }))
            )
          })

        const convergence = yield* Convergence.make({
          name: "PodConvergence",
          key: ({ tenantId, podId }: Owner) => `${tenantId}/${podId}`,
          attributes: ({ podId }) => ({ "tenet.pod_id": podId }),
          workers: options.workers ?? 4,
          wait,
          apply: applyNow,
          // As for a VPC: on a store this process alone writes, a change meanwhile asked for its own.
          superseded: ({ podId, tenantId }, applied) =>
            applied === null || store.soleWriter ? Effect.succeed(false) : Effect.map(stateOf(tenantId), (state) => {
              const now = state.pod(podId)
              return now !== undefined && now.lifecycle === "active" && desired(now) !== desired(applied.current)
            }),
          record,
          caughtUp: ({ tenantId }) => readModel.catchUp(tenantId),
          markStillApplying
        })

        const ownerOf = (record: PodRecord): Owner => ({ tenantId: record.tenant_id, podId: record.id })

        const request: PodConvergenceShape["request"] = (record, mode) =>
          Effect.flatMap(convergence.request(ownerOf(record), mode), (converged) =>
            Option.isSome(converged)
              ? Effect.succeed(converged.value ?? record)
              // Still applying; said so where its convergence has not begun to mark it.
              : Effect.map(stateOf(record.tenant_id), (state) => {
                const latest = state.pod(record.id) ?? record
                return latest.applied ? { ...latest, applied: false, apply_error: stillApplying } : latest
              }))

        const converge: PodConvergenceShape["converge"] = (record, mode) =>
          Effect.map(convergence.converge(ownerOf(record), mode), (converged) => converged ?? record)

        const apply: PodConvergenceShape["apply"] = (tenantId, podId) =>
          Effect.asVoid(convergence.converge({ tenantId, podId }, "apply"))

        return PodConvergence.of({ request, converge, apply })
      })
    )
}
