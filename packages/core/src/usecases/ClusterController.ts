/**
 * The controller: what the cluster holds is brought back to what the committed state wants
 * whenever the cluster changes behind Tenet's back. The orchestrator's watches announce each
 * change Tenet did not make (`Orchestrator.changes`); the change enqueues its owner (the VPC,
 * or the pod), and a worker converges the owner from the committed state as it is when the
 * worker takes it (level-triggered: many changes to one owner are one convergence).
 *
 * A deletion or a field taken from Tenet's manager is drift: the owner is recorded
 * `applied: false` with an `apply_error` naming what changed and who changed it (so the change
 * stream and every read say so) until the repair is in force, counted and timed in metrics and
 * logged. A replica's addresses moving is not drift: the pod's SNAT rules and its VPC's ACLs
 * follow it. One replica repairs an owner at a time (the store's lock); an owner the committed
 * state no longer wants (deleted, or being deleted) is nobody's to repair.
 */
import type { Duration } from "effect"
import { Cause, Context, Effect, Layer, Metric, MetricBoundaries, Option, Stream } from "effect"
import type { Decision } from "../changes/Pipeline.js"
import { Pipeline, updatingLatest } from "../changes/Pipeline.js"
import type { PodId, TenantId, VpcId } from "../domain/Ids.js"
import type { ClusterChange } from "../ports/Orchestrator.js"
import { Orchestrator } from "../ports/Orchestrator.js"
import { Store } from "../ports/Store.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import type { TenantState } from "../readmodel/TenantState.js"
import { storeUnavailable } from "./Failures.js"
import { NetworkApplier } from "./NetworkApplier.js"
import { PodConvergence } from "./PodConvergence.js"
import * as Workqueue from "./Workqueue.js"

export interface Options {
  /** Owners converged at once. */
  readonly workers?: number
  /** The first retry's delay after a repair fails; doubles per failure, up to `maxBackoff`. */
  readonly backoff?: Duration.DurationInput
  readonly maxBackoff?: Duration.DurationInput
}

/** What a worker converges: a VPC (its router, subnets, egress and ACLs) or a pod. */
type Owner =
  | { readonly _tag: "vpc"; readonly tenant_id: TenantId; readonly id: VpcId }
  | { readonly _tag: "pod"; readonly tenant_id: TenantId; readonly id: PodId }

const keyOf = (owner: Owner) => `${owner._tag}/${owner.tenant_id}/${owner.id}`
/** Ids are UUIDs: a key splits back into its owner. */
const ownerOf = (key: string): Owner => {
  const [tag, tenant_id, id] = key.split("/") as [Owner["_tag"], TenantId, string]
  return tag === "vpc" ? { _tag: tag, tenant_id, id: id as VpcId } : { _tag: "pod", tenant_id, id: id as PodId }
}

/** The owners a change moves: its pod or VPC; a replica's addresses, the pod and its VPC's ACLs. */
export const ownersOf = (change: ClusterChange): ReadonlyArray<Owner> => {
  const vpc: Owner = { _tag: "vpc", tenant_id: change.tenant_id, id: change.vpc_id }
  if (change.pod_id === null) return [vpc]
  const pod: Owner = { _tag: "pod", tenant_id: change.tenant_id, id: change.pod_id }
  return change.change === "addresses" ? [pod, vpc] : [pod]
}

/** One drift, as `apply_error` and the log say it. */
export const describe = (change: ClusterChange): string =>
  change.change === "deleted"
    ? `${change.object} was deleted outside Tenet`
    : `${change.object} was changed by ${change.manager ?? "another field manager"}` +
      (change.fields.length === 0 ? "" : ` (${change.fields.join(", ")})`)

/** Whether the committed state still wants what the change touched (a deleted subnet's objects are not). */
const wanted = (state: TenantState, change: ClusterChange): boolean =>
  change.subnet_id === null || state.subnet(change.subnet_id) !== undefined

const repairs = Metric.counter("tenet_drift_repairs", {
  description: "Drift repaired: objects changed or deleted outside Tenet and put back, by owner kind (vpc, pod)",
  incremental: true
})

/** Seconds from the change observed to the repair in force, 10 ms to about 10 minutes. */
const repairLatency = Metric.histogram(
  "tenet_drift_repair_duration_seconds",
  MetricBoundaries.exponential({ start: 0.01, factor: 2, count: 16 }),
  "Time from a change made outside Tenet being observed to its repair being in force"
)

const failedRepairs = Metric.counter("tenet_drift_repair_failures", {
  description: "Convergences of an owner that failed and will be retried with backoff, by owner kind",
  incremental: true
})

export class ClusterController extends Context.Tag("@tenet/core/ClusterController")<ClusterController, {
  /** Owners waiting, and being converged. */
  readonly depth: () => { readonly waiting: number; readonly processing: number }
}>() {
  /** The controller, running until the layer's scope closes. */
  static readonly layer = (options: Options = {}) =>
    Layer.scoped(
      ClusterController,
      Effect.gen(function*() {
        const orchestrator = yield* Orchestrator
        const store = yield* Store
        const readModel = yield* ReadModel
        const pipeline = yield* Pipeline
        const applier = yield* NetworkApplier
        const pods = yield* PodConvergence

        /** Drift seen per owner since its last convergence began, with when it was first seen. */
        const drifts = new Map<string, { readonly since: number; readonly changes: Array<ClusterChange> }>()

        /** Records the drift on the owner: `applied: false`, naming it, until the repair records otherwise. */
        const recordDrift = (owner: Owner, detail: string) => {
          const drifted = <R extends { readonly applied: boolean; readonly apply_error: string | null }>(
            latest: R
          ) => ({
            ...latest,
            applied: false,
            apply_error: detail
          })
          return pipeline.record(owner.tenant_id, (state) =>
            Effect.succeed<Decision<unknown>>(
              owner._tag === "vpc"
                ? updatingLatest("vpcs", owner.id, state.vpc(owner.id), drifted)
                : updatingLatest("pods", owner.id, state.pod(owner.id), drifted)
            )).pipe(Effect.catchTag("UniqueViolation", Effect.die))
        }

        const converge = (owner: Owner) =>
          Effect.gen(function*() {
            const key = keyOf(owner)
            const seen = drifts.get(key)
            drifts.delete(key)
            const state = yield* readModel.stateOf(owner.tenant_id).pipe(storeUnavailable)
            const record = owner._tag === "vpc" ? state.vpc(owner.id) : state.pod(owner.id)
            if (record === undefined || record.lifecycle !== "active") return
            const drift = (seen?.changes ?? []).filter((c) => wanted(state, c))
            if (drift.length > 0) {
              const detail = `${drift.map(describe).join("; ")}; repairing`
              yield* Effect.logWarning("drift", { owner: key, detail })
              yield* recordDrift(owner, detail)
            }
            const applied = owner._tag === "vpc"
              ? (yield* applier.apply(owner.tenant_id, owner.id)).applied
              : yield* Effect.map(
                Effect.zipRight(pods.apply(owner.tenant_id, owner.id), readModel.stateOf(owner.tenant_id)),
                (after) => after.pod(owner.id)?.applied ?? true
              ).pipe(storeUnavailable)
            if (!applied) {
              // Kept for the retry, which still has it to repair.
              if (seen !== undefined) drifts.set(key, { since: seen.since, changes: [...drift] })
              return yield* Effect.fail(`${owner._tag} ${owner.id} is not applied yet`)
            }
            if (drift.length > 0 && seen !== undefined) {
              const seconds = (Date.now() - seen.since) / 1000
              yield* Metric.increment(Metric.tagged(repairs, "kind", owner._tag))
              yield* Metric.update(repairLatency, seconds)
              yield* Effect.logInfo("drift repaired", { owner: key, seconds, changes: drift.map(describe) })
            }
          })

        const queue = yield* Workqueue.make<string, unknown>({
          workers: options.workers ?? 4,
          baseDelay: options.backoff ?? "200 millis",
          maxDelay: options.maxBackoff ?? "30 seconds",
          process: (key) =>
            Effect.flatMap(
              store.exclusive(`tenet.controller/${key}`, converge(ownerOf(key))),
              // Another replica is converging it, from the same committed state, and reports the drift.
              (done) =>
                Option.isNone(done)
                  ? Effect.zipRight(
                    Effect.sync(() => drifts.delete(key)),
                    Effect.logDebug("another replica converges", key)
                  )
                  : Effect.void
            ),
          onFailure: (key, cause, retryIn) =>
            Effect.zipRight(
              Metric.increment(Metric.tagged(failedRepairs, "kind", ownerOf(key)._tag)),
              Effect.logWarning("converging failed; retrying", {
                owner: key,
                retry_in: retryIn,
                cause: Cause.pretty(cause)
              })
            )
        })

        const enqueue = (change: ClusterChange) =>
          Effect.forEach(ownersOf(change), (owner) =>
            Effect.suspend(() => {
              const key = keyOf(owner)
              if (change.change !== "addresses") {
                const seen = drifts.get(key) ?? { since: Date.now(), changes: [] }
                drifts.set(key, { since: seen.since, changes: [...seen.changes, change] })
              }
              return queue.add(key)
            }), { discard: true })

        // Served at 0 from the start, as every series whose labels are known in advance.
        yield* Effect.sync(() => {
          for (const kind of ["vpc", "pod"]) {
            Metric.tagged(repairs, "kind", kind).unsafeValue([])
            Metric.tagged(failedRepairs, "kind", kind).unsafeValue([])
          }
          repairLatency.unsafeValue([])
        })
        yield* Effect.forkScoped(Stream.runForEach(orchestrator.changes, enqueue))
        return ClusterController.of({ depth: queue.depth })
      })
    )
}
