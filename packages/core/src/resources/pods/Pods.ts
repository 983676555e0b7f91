/**
 * Pods (tenant): containerized workloads in one of the caller's subnets, with replicas
 * behind one virtual IP. The store holds the desired pod; the cluster is asked to run it and
 * the outcome is recorded (`PodConvergence`: `applied` / `apply_error`, retried by the
 * reconciler); a request waits for it up to a bound, as a VPC's does. A pod's status is read
 * from the cluster each time it is shown (`PodPresentation`).
 */
import { Context, DateTime, Effect, Either, Layer, Option } from "effect"
import { INVARIANTS, Pipeline, removing, updatingLatest } from "../../changes/Pipeline.js"
import * as DeleteMark from "../../domain/DeleteMark.js"
import { PodId, randomUuid } from "../../domain/Ids.js"
import type { TenantId } from "../../domain/Ids.js"
import type { Pod, PodConfigPatch, PodCreate, PodRecord, PodStatus } from "../../domain/Pod.js"
import { MIN_AUTOSCALE_REPLICAS, PodRestart } from "../../domain/Pod.js"
import type { TenantPrincipal } from "../../domain/Principal.js"
import { Conflict, InvalidInput, ServiceUnavailable } from "../../Errors.js"
import type {
  Forbidden,
  GuardrailViolated,
  IdempotencyKeyReused,
  InternalError,
  NotFound,
  PreconditionFailed,
  Unauthorized
} from "../../Errors.js"
import { clusterWaited, storeUnavailable } from "../../ports/Failures.js"
import type { PodRuntime } from "../../ports/Orchestrator.js"
import { Orchestrator } from "../../ports/Orchestrator.js"
import { Store } from "../../ports/Store.js"
import { Vault } from "../../ports/Vault.js"
import { found } from "../../readmodel/Ownership.js"
import { ReadModel } from "../../readmodel/ReadModel.js"
import * as BodyCredentials from "../../usecases/BodyCredentials.js"
import { Identity } from "../../usecases/Identity.js"
import { NetworkApplier } from "../../usecases/NetworkApplier.js"
import { ProviderConfigs } from "../../usecases/ProviderConfigs.js"
import { Resources } from "../Resources.js"
import { Tunnels } from "../tunnels/Tunnels.js"
import { Vpcs } from "../vpcs/Vpcs.js"
import { PodConvergence } from "./PodConvergence.js"
import { podOf, sameStatus, statusFrom, statusUnknown } from "./PodPresentation.js"
import * as PodStrategy from "./PodStrategy.js"

export const DEFAULT_MOUNT_PATH = "/storage"

/** What a new pod is made from: a create request without credentials and tunnels. */
export type PodFields = Omit<PodCreate, "token" | "tenant_id" | "tunnels">

type Failure = NotFound | Conflict | InvalidInput | ServiceUnavailable | InternalError

/** Failures of the writes a repeat with an `Idempotency-Key` answers instead of redoing. */
type KeyedFailure = Failure | IdempotencyKeyReused

export interface PodsShape {
  readonly create: (
    caller: TenantPrincipal,
    input: PodCreate
  ) => Effect.Effect<Pod, KeyedFailure | Unauthorized | Forbidden>
  readonly list: (caller: TenantPrincipal) => Effect.Effect<ReadonlyArray<Pod>, ServiceUnavailable>
  /** These pods of the tenant with their status, from one read of the cluster's (a list's, a topology's). */
  readonly views: (tenantId: TenantId, records: ReadonlyArray<PodRecord>) => Effect.Effect<ReadonlyArray<Pod>>
  /** `ifMatch` (here and below): the pod's `etag` the change was made against; 412 when it moved since. */
  readonly delete: (
    caller: TenantPrincipal,
    id: PodId,
    ifMatch?: string
  ) => Effect.Effect<void, Failure | PreconditionFailed | GuardrailViolated>
  readonly addReplica: (
    caller: TenantPrincipal,
    id: PodId,
    ifMatch?: string
  ) => Effect.Effect<Pod, KeyedFailure | PreconditionFailed>
  readonly removeReplica: (
    caller: TenantPrincipal,
    id: PodId,
    ifMatch?: string
  ) => Effect.Effect<Pod, KeyedFailure | PreconditionFailed>
  readonly restart: (caller: TenantPrincipal, id: PodId) => Effect.Effect<PodRestart, Failure>
  readonly configure: (
    caller: TenantPrincipal,
    id: PodId,
    patch: PodConfigPatch,
    ifMatch?: string
  ) => Effect.Effect<Pod, Failure | PreconditionFailed>
  /**
   * A new pod's record from its fields, with the spec's couplings applied (autoscaling starts
   * at 2 or more replicas and implies auto-healing); not yet stored.
   */
  readonly prepare: (caller: TenantPrincipal, input: PodFields) => Effect.Effect<PodRecord, InvalidInput>
  /** The pod as a user sees it, with its status read from the cluster. */
  readonly view: (record: PodRecord) => Effect.Effect<Pod>
  /**
   * Asks for the stored pod to be applied to the cluster (its outcome recorded), waiting for it
   * as a request does: up to the bound, past which it is still being applied.
   */
  readonly apply: (tenantId: TenantId, id: PodId) => Effect.Effect<void, ServiceUnavailable | InternalError>
  /**
   * Finishes the deletes a stopped process left marked, then applies every pod whose last apply
   * failed; returns how many it finished or applied.
   */
  readonly reconcile: Effect.Effect<number, ServiceUnavailable | InternalError>
}

export class Pods extends Context.Tag("@tenet/core/Pods")<Pods, PodsShape>() {
  static readonly layer = Layer.effect(
    Pods,
    Effect.gen(function*() {
      const store = yield* Store
      const vault = yield* Vault
      const identity = yield* Identity
      const resources = yield* Resources
      const pipeline = yield* Pipeline
      const readModel = yield* ReadModel
      const orchestrator = yield* Orchestrator
      const vpcs = yield* Vpcs
      const configs = yield* ProviderConfigs
      const applier = yield* NetworkApplier
      const tunnels = yield* Tunnels
      const convergence = yield* PodConvergence

      const stateOf = (tenantId: TenantId) => readModel.stateOf(tenantId).pipe(storeUnavailable)

      const owned = (caller: TenantPrincipal, id: PodId) => resources.get(caller.tenant_id, "pods", id)

      /** The pod an earlier request with this request's `Idempotency-Key` made or scaled. */
      const earlier = (caller: TenantPrincipal) => resources.replay(caller.tenant_id, "pods")

      const statusOf = (record: PodRecord): Effect.Effect<PodStatus> =>
        orchestrator.podStatus(record.id).pipe(
          Effect.map((runtime) => statusFrom(record, runtime)),
          Effect.catchAll((e) => Effect.succeed(statusUnknown(record, e)))
        )

      // Each record's last view, kept while its status reads the same: a list of pods whose
      // state did not change is then built, and written as JSON, once rather than per request.
      const lastViews = new WeakMap<PodRecord, Pod>()
      const toPod = (record: PodRecord, status: PodStatus) => {
        const last = lastViews.get(record)
        if (last !== undefined && sameStatus(last.status, status)) return last
        const view = podOf(record, status)
        lastViews.set(record, view)
        return view
      }
      // What a list read of each record last saw: an orchestrator that hands out the same
      // runtime object while nothing changed (the simulated one does) costs no comparison.
      const lastRead = new WeakMap<PodRecord, { readonly runtime: PodRuntime | undefined; readonly view: Pod }>()
      const view = (record: PodRecord) => Effect.map(statusOf(record), (status) => toPod(record, status))

      /** Many of a tenant's pods with their status, from one read of the cluster's statuses. */
      const views = (tenantId: TenantId, records: ReadonlyArray<PodRecord>) =>
        Effect.map(Effect.either(orchestrator.podStatuses(tenantId)), (runtimes) => {
          if (Either.isLeft(runtimes)) {
            return records.map((record) => toPod(record, statusUnknown(record, runtimes.left)))
          }
          return records.map((record) => {
            const runtime = runtimes.right.get(record.id)
            // The same record and the same runtime object: the same view, without comparing.
            const last = lastRead.get(record)
            if (last !== undefined && last.runtime === runtime) return last.view
            const view = toPod(record, statusFrom(record, Option.fromNullable(runtime)))
            lastRead.set(record, { runtime, view })
            return view
          })
        })

      const { converge, request } = convergence

      const encryptEnv = (env: Readonly<Record<string, string>> | undefined) =>
        env === undefined || Object.keys(env).length === 0
          ? Effect.succeed({ env_var_names: [] as Array<string>, env_ciphertext: null })
          : Effect.map(vault.encrypt(JSON.stringify(env)), (ciphertext) => ({
            env_var_names: Object.keys(env).sort(),
            env_ciphertext: ciphertext as string | null
          }))

      const prepare = (caller: TenantPrincipal, input: PodFields) =>
        Effect.gen(function*() {
          const initial = input.auto_scaling
            ? Math.max(input.replica_count, MIN_AUTOSCALE_REPLICAS)
            : input.replica_count
          if (input.auto_scaling && input.autoscale_max_replicas < initial) {
            return yield* InvalidInput.field(
              "autoscale_max_replicas",
              `must be at least the initial replica count ${initial}`
            )
          }
          const now = yield* DateTime.now
          return {
            id: PodId.make(randomUuid()),
            tenant_id: caller.tenant_id,
            vpc_id: input.vpc_id,
            subnet_id: input.subnet_id,
            name: input.name,
            container_image: input.container_image,
            replica_count: initial,
            service_port: input.service_port,
            use_registry_credentials: input.use_registry_credentials,
            external_access: input.external_access,
            external_inbound: input.external_inbound,
            auto_healing: input.auto_healing || input.auto_scaling,
            auto_scaling: input.auto_scaling,
            autoscale_min_replicas: MIN_AUTOSCALE_REPLICAS,
            autoscale_max_replicas: input.autoscale_max_replicas,
            autoscale_cpu_target_millicores: input.autoscale_cpu_target_millicores,
            persistent: false,
            persistent_mount_path: DEFAULT_MOUNT_PATH,
            gpu_count: input.gpu_count,
            ...(yield* encryptEnv(input.env_vars)),
            vip: null,
            external_ip: null,
            lifecycle: "active",
            deleting_since: null,
            applied: false,
            apply_error: "not yet applied",
            created_at: now,
            updated_at: now
          } satisfies PodRecord
        })

      const create = Effect.fn("Pods.create")(function*(caller: TenantPrincipal, input: PodCreate) {
        yield* BodyCredentials.check(identity, caller, input)
        const made = yield* earlier(caller)
        const record = Option.isSome(made) ? made.value : yield* insert(caller, input)
        const placed = yield* request(record, "apply")
        // A repeat of a request that got part way makes only the tunnels still missing.
        const present = new Set(
          (yield* stateOf(caller.tenant_id)).tunnelsOf(record.id).map((t) => t.tunnel_name as string)
        )
        yield* tunnels.createAll(caller, placed, input.tunnels.filter((t) => !present.has(t.tunnel_name)))
        return yield* view(placed)
      })

      /** Checks a new pod against what it refers to and saves it, with the request's idempotency key. */
      const insert = Effect.fn("Pods.insert")(function*(caller: TenantPrincipal, input: PodCreate) {
        yield* vpcs.owned(caller, input.vpc_id)
        const subnet = yield* Effect.flatMap(
          stateOf(caller.tenant_id),
          (state) => found(state.subnet(input.subnet_id), `subnet ${input.subnet_id}`)
        )
        if (subnet.vpc_id !== input.vpc_id) {
          return yield* InvalidInput.field("subnet_id", `subnet ${subnet.id} is not in VPC ${input.vpc_id}`)
        }
        if (input.external_inbound && !input.external_access) {
          return yield* InvalidInput.field("external_inbound", "requires external_access")
        }
        if (input.external_inbound && Option.isNone(yield* configs.current)) {
          return yield* new Conflict({
            detail: "external_inbound needs the provider configuration's external subnet, which is not set"
          })
        }
        yield* tunnels.check(caller, input.tunnels)
        const record = yield* prepare(caller, input)
        // A pod named by no rule yet takes the verdicts of its subnet: it moves no guardrail. It
        // is counted by the tenant's quota of pods (a `Conflict` naming it).
        yield* pipeline.create(caller.tenant_id, PodStrategy.create(record), ["Conflict", "UniqueViolation"]).pipe(
          Effect.catchTag(
            "UniqueViolation",
            () => new Conflict({ detail: `VPC ${input.vpc_id} already has a pod named '${input.name}'` })
          )
        )
        return record
      })

      /** The pod, refused with 409 while a delete is under way. */
      const active = (caller: TenantPrincipal, id: PodId) =>
        Effect.flatMap(owned(caller, id), (record) =>
          record.lifecycle === "deleting"
            ? Effect.fail(new Conflict({ detail: `pod ${id} is being deleted` }))
            : Effect.succeed(record))

      /**
       * The pod's next record by `change`, committed through the pod's strategy
       * (`PodStrategy.modify`): its replicas or configuration, which no verdict reads.
       */
      const modify = <E>(
        caller: TenantPrincipal,
        id: PodId,
        change: (record: PodRecord) => Either.Either<PodRecord, E>,
        keyed: boolean,
        ifMatch: string | undefined
      ) =>
        Effect.flatMap(active(caller, id), (first) => {
          const decide = PodStrategy.modify(id, first.vpc_id, change, keyed, ifMatch)
          return (keyed
            ? pipeline.record(caller.tenant_id, decide, "keyed")
            : pipeline.record(caller.tenant_id, decide)).pipe(
              Effect.map((committed) => committed.result)
            )
        })

      const scale = (delta: 1 | -1) =>
        Effect.fn(delta === 1 ? "Pods.addReplica" : "Pods.removeReplica")(
          function*(caller: TenantPrincipal, id: PodId, ifMatch?: string) {
            const made = yield* earlier(caller)
            const next = Option.isSome(made) ?
              made.value :
              yield* modify(caller, id, PodStrategy.rescaled(delta, yield* DateTime.now), true, ifMatch)
            return yield* Effect.flatMap(request(next, "apply"), view)
          }
        )

      const restart = Effect.fn("Pods.restart")(function*(caller: TenantPrincipal, id: PodId) {
        yield* active(caller, id)
        yield* orchestrator.restartPod(id).pipe(
          Effect.mapError((e) =>
            new ServiceUnavailable({ detail: `the cluster could not restart the pod: ${e.message}` })
          )
        )
        return PodRestart.make({ pod_id: id, detail: "restart initiated" })
      })

      const configure = Effect.fn("Pods.configure")(
        function*(caller: TenantPrincipal, id: PodId, patch: PodConfigPatch, ifMatch?: string) {
          const status = yield* Effect.flatMap(active(caller, id), statusOf)
          if (status.phase === "stopped") {
            return yield* new Conflict({ detail: `pod ${id} is stopped; restart it before changing its configuration` })
          }
          if (patch.auto_scaling === true && patch.auto_healing === false) {
            return yield* InvalidInput.field("auto_healing", "cannot be off while auto_scaling is on")
          }
          const env = patch.env_vars === undefined ? undefined : yield* encryptEnv(patch.env_vars)
          const now = yield* DateTime.now
          const next = yield* modify(caller, id, PodStrategy.reconfigured(patch, env, now), false, ifMatch)
          return yield* Effect.flatMap(request(next, "recreate"), view)
        }
      )

      const remove = Effect.fn("Pods.delete")(function*(caller: TenantPrincipal, id: PodId, ifMatch?: string) {
        // The mark is the decision: a pod being deleted has left enforcement (a rule that targets
        // it among others no longer covers it), so the mark is refused when that breaks a
        // guardrail, and of concurrent deletes one marks, the others are 409.
        const first = yield* active(caller, id)
        const { result: marked } = yield* pipeline.commit(
          caller.tenant_id,
          PodStrategy.modify(id, first.vpc_id, PodStrategy.marked(yield* DateTime.now), false, ifMatch),
          INVARIANTS
        )
        yield* finish(marked, true)
      })

      /**
       * A delete marked: the cluster lets the pod go, its tunnels are withdrawn, the store drops
       * it, and rules that targeted it are applied without it. Each step may be repeated: a
       * removal another finisher made is done. A request's delete (`request`) that the cluster
       * fails, or does not answer within `DeleteMark.CLUSTER_WAIT`, takes its mark back (nothing
       * deleted in the store, the pod applied again); the reconciler's keeps it and tries again.
       */
      const finish = (marked: PodRecord, request: boolean) =>
        Effect.gen(function*() {
          const { id, tenant_id: tenantId, vpc_id: vpcId } = marked
          const takeBack = pipeline.commit(tenantId, (state) => {
            const latest = state.pod(id)
            return Effect.succeed(
              updatingLatest(
                "pods",
                id,
                latest !== undefined && DeleteMark.same(latest.deleting_since, marked.deleting_since)
                  ? latest
                  : undefined,
                // The cluster may have removed part of the pod before it failed: applied again.
                (mine) => ({
                  ...mine,
                  lifecycle: "active" as const,
                  deleting_since: null,
                  applied: false,
                  apply_error: DeleteMark.REFUSED
                })
              )
            )
          }, INVARIANTS).pipe(
            Effect.flatMap(({ result }) =>
              result === undefined ? Effect.void : Effect.asVoid(converge(result, "apply"))
            ),
            Effect.ignore
          )
          yield* (request ? clusterWaited("deletePod", orchestrator.deletePod(id)) : orchestrator.deletePod(id)).pipe(
            Effect.tapError(() => request ? takeBack : Effect.void),
            Effect.mapError((e) =>
              new ServiceUnavailable({
                detail: `the cluster could not delete the pod (${e.message}); the pod is kept, and applied again ` +
                  "where the cluster removed part of it"
              })
            )
          )
          yield* tunnels.withdrawAll((yield* stateOf(tenantId)).tunnelsOf(id))
          // The pod left enforcement when it was marked: its removal is recorded.
          yield* pipeline.record(tenantId, (state) => removing(state, "pods", id, `pod ${id} not found`, vpcId)).pipe(
            Effect.catchTag("NotFound", () => Effect.void)
          )
          // Rules that targeted the pod can no longer be enforced.
          yield* applier.apply(tenantId, vpcId)
        })

      const reconcile = Effect.gen(function*() {
        const now = yield* DateTime.now
        // A mark within its lease is its request's to finish.
        const marked = (yield* store.pods.listDeleting.pipe(storeUnavailable)).filter((pod) =>
          DeleteMark.abandoned(pod.deleting_since, now)
        )
        const finished = yield* Effect.forEach(marked, (pod) =>
          finish(pod, false).pipe(
            Effect.as(1),
            Effect.catchAll((e) =>
              Effect.as(Effect.logWarning("finishing a pod's delete failed; next pass retries", pod.id, e), 0)
            )
          ))
        // A pod being deleted is not applied again.
        const pending = (yield* store.pods.listUnapplied.pipe(storeUnavailable)).filter((p) => p.lifecycle === "active")
        const results = yield* Effect.forEach(pending, (pod) => converge(pod, "apply"))
        return results.filter((p) => p.applied).length + finished.reduce((n, one) => n + one, 0)
      }).pipe(Effect.withSpan("Pods.reconcile"))

      return Pods.of({
        create,
        list: (caller) => Effect.flatMap(stateOf(caller.tenant_id), (state) => views(caller.tenant_id, state.pods)),
        views,
        delete: remove,
        addReplica: scale(1),
        removeReplica: scale(-1),
        restart,
        configure,
        prepare,
        view,
        apply: (tenantId, id) =>
          Effect.flatMap(stateOf(tenantId), (state) => {
            const pod = state.pod(id)
            return pod !== undefined && pod.lifecycle === "active" ? Effect.asVoid(request(pod, "apply")) : Effect.void
          }),
        reconcile
      })
    })
  )
}
