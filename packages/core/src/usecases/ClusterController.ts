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
 * follow it. One replica leads (`Leadership`: a Lease on Kubernetes, the store's lock elsewhere) and repairs; the others watch and wait to lead.
 * An owner the committed state no longer wants (deleted, or being deleted) is nobody's to repair.
 * A resync (first when a replica starts leading) compares what the cluster holds with the
 * committed state, for what no watch could tell.
 */
import { Cause, Context, DateTime, Duration, Effect, Layer, Metric, MetricBoundaries, Schedule, Stream } from "effect"
import * as Audit from "../changes/Audit.js"
import type { Decision } from "../changes/Pipeline.js"
import { Pipeline, updatingLatest } from "../changes/Pipeline.js"
import type { PodId, TenantId, VpcId } from "../domain/Ids.js"
import { storeUnavailable } from "../ports/Failures.js"
import { Leadership } from "../ports/Leadership.js"
import type { ClusterChange, ClusterOwner } from "../ports/Orchestrator.js"
import { Orchestrator } from "../ports/Orchestrator.js"
import { Store } from "../ports/Store.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import type { TenantState } from "../readmodel/TenantState.js"
import { PodConvergence } from "../resources/pods/PodConvergence.js"
import { NetworkApplier } from "./NetworkApplier.js"
import * as Workqueue from "./Workqueue.js"

export interface Options {
  /** Owners converged at once. */
  readonly workers?: number
  /** The first retry's delay after a repair fails; doubles per failure, up to `maxBackoff`. */
  readonly backoff?: Duration.DurationInput
  readonly maxBackoff?: Duration.DurationInput
  /**
   * How often the whole cluster is compared with the committed state (first at start): what
   * changed while no replica watched is found then, not only at its owner's next change.
   */
  readonly resync?: Duration.DurationInput
  /**
   * What was made or changed this recently may still be on its way to the cluster: a resync
   * leaves it to its own request (1 minute).
   */
  readonly settle?: Duration.DurationInput
  /**
   * How often a replica that does not lead asks to (the Leadership's own period: 5 s for the
   * store's lock, 2 s for a Lease): a leader that died is replaced within it.
   */
  readonly leaderRetry?: Duration.DurationInput
  /**
   * Whether what a known tenant's committed state no longer wants is deleted (the default) or
   * only logged and counted, left in place: for a store restored from a backup older than the
   * cluster, whose newer workloads would otherwise read as orphans.
   */
  readonly deleteOrphans?: boolean
}

/** The store-wide lock the leading replica holds. */
export const LEADER_LOCK = "tenet.controller"

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

/** Pods before subnets before VPCs. */
const rank = (o: ClusterOwner) => o.pod_id !== null ? 0 : o.subnet_id !== null ? 1 : 2

/** The drift of one owner as one line: each change once, the first few named. */
export const summarize = (changes: ReadonlyArray<ClusterChange>): string => {
  const lines = [...new Set(changes.map(describe))]
  return lines.length <= 3 ? lines.join("; ") : `${lines.slice(0, 3).join("; ")}; and ${lines.length - 3} more`
}

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

const orphansDeleted = Metric.counter("tenet_drift_orphans_deleted", {
  description: "Cluster objects of a known tenant that no committed state wants, deleted by a resync, by owner kind " +
    "(vpc, subnet, pod)",
  incremental: true
})

const orphansKept = Metric.counter("tenet_drift_orphans_kept", {
  description: "Cluster objects of a known tenant that no committed state wants, found by a resync and left in " +
    "place (TENET_CONTROLLER_DELETE_ORPHANS=false), by owner kind (vpc, subnet, pod)",
  incremental: true
})

const failedRepairs = Metric.counter("tenet_drift_repair_failures", {
  description: "Convergences of an owner that failed and will be retried with backoff, by owner kind",
  incremental: true
})

export class ClusterController extends Context.Tag("@tenet/core/ClusterController")<ClusterController, {
  /** Whether this replica leads: it converges owners and runs the resync. */
  readonly leading: () => boolean
  /** Owners waiting, and being converged (none while not leading). */
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
        const leadership = yield* Leadership

        const settling = Duration.toMillis(options.settle ?? Duration.minutes(1))
        const settled = (at: DateTime.Utc, now: number) => now - DateTime.toEpochMillis(at) >= settling

        /** Drift seen per owner since its last convergence began, with when it was first seen. */
        const drifts = new Map<string, { readonly since: number; readonly changes: Array<ClusterChange> }>()

        /** Records the drift on the owner: `applied: false`, naming it, until the repair records otherwise. */
        const recordDrift = (owner: Owner, detail: string, managers: string) => {
          const drifted = <R extends { readonly applied: boolean; readonly apply_error: string | null }>(
            latest: R
          ) => ({
            ...latest,
            applied: false,
            apply_error: detail
          })
          // The audit trail names who changed it, as the entry of the change it records.
          const entry = new Audit.Pending(
            "cluster.drift",
            { kind: owner._tag, from: "change" },
            `drift-${crypto.randomUUID()}`,
            { tenant_id: owner.tenant_id }
          )
          entry.actor = { type: "cluster", name: managers, tenant_id: owner.tenant_id }
          return pipeline.record(owner.tenant_id, (state) =>
            Effect.succeed<Decision<unknown>>(
              owner._tag === "vpc"
                ? updatingLatest("vpcs", owner.id, state.vpc(owner.id), drifted)
                : updatingLatest("pods", owner.id, state.pod(owner.id), drifted)
            )).pipe(
              Effect.locally(Audit.CurrentEntry, entry)
            )
        }

        /** Puts drift back for the next convergence of its owner, with what came meanwhile. */
        const keep = (key: string, seen: { readonly since: number; readonly changes: Array<ClusterChange> }) =>
          Effect.sync(() => {
            const since = drifts.get(key)
            const changes = [...seen.changes, ...(since?.changes ?? [])]
            drifts.set(key, {
              since: seen.since,
              changes: changes.filter((c, i) => changes.findIndex((d) => describe(d) === describe(c)) === i)
            })
          })

        const converge = (owner: Owner) => {
          const key = keyOf(owner)
          const seen = drifts.get(key)
          drifts.delete(key)
          return Effect.gen(function*() {
            const state = yield* readModel.stateOf(owner.tenant_id).pipe(storeUnavailable)
            const record = owner._tag === "vpc" ? state.vpc(owner.id) : state.pod(owner.id)
            if (record === undefined || record.lifecycle !== "active") return
            // A pod changed a moment ago is being applied by the replica that changed it: what
            // went from the cluster meanwhile is that apply's doing (a recreate, a prune), not
            // drift. A field another manager took is never Tenet's doing.
            const pod = owner._tag === "pod" ? state.pod(owner.id) : undefined
            const applying = pod !== undefined && !settled(pod.updated_at, Date.now())
            const drift = (seen?.changes ?? []).filter((c) => wanted(state, c) && !(applying && c.change === "deleted"))
            // Recorded once per episode: an owner already shown as not applied says so already.
            if (drift.length > 0 && record.applied) {
              const detail = `${summarize(drift)}; repairing`
              yield* Effect.logWarning("drift", { owner: key, detail })
              const managers = [...new Set(drift.map((c) => c.manager ?? "unknown"))].join(", ")
              yield* recordDrift(owner, detail, managers)
            }
            const applied = owner._tag === "vpc"
              ? (yield* applier.converge(owner.tenant_id, owner.id)).applied
              : yield* Effect.map(
                Effect.zipRight(pods.apply(owner.tenant_id, owner.id), readModel.stateOf(owner.tenant_id)),
                (after) => after.pod(owner.id)?.applied ?? true
              ).pipe(storeUnavailable)
            if (!applied) return yield* Effect.fail(`${owner._tag} ${owner.id} is not applied yet`)
            if (drift.length > 0 && seen !== undefined) {
              const seconds = (Date.now() - seen.since) / 1000
              yield* Metric.increment(Metric.tagged(repairs, "kind", owner._tag))
              yield* Metric.update(repairLatency, seconds)
              yield* Effect.logInfo("drift repaired", { owner: key, seconds, changes: summarize(drift) })
            }
          }).pipe(
            // Not converged (not applied, or the store failed): the retry still has the drift to repair.
            Effect.onError(() => seen === undefined ? Effect.void : keep(key, seen))
          )
        }

        /** The work queue, while this replica leads; changes seen while it does not are the leader's. */
        let queue: Workqueue.Workqueue<string> | undefined
        const makeQueue = Workqueue.make<string, unknown>({
          workers: options.workers ?? 4,
          baseDelay: options.backoff ?? "200 millis",
          maxDelay: options.maxBackoff ?? "30 seconds",
          process: (key) => Effect.suspend(() => converge(ownerOf(key))),
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
              if (queue === undefined) return Effect.void
              if (change.change !== "addresses") {
                const seen = drifts.get(key) ?? { since: Date.now(), changes: [] }
                const known = seen.changes.some((c) => describe(c) === describe(change))
                drifts.set(key, { since: seen.since, changes: known ? seen.changes : [...seen.changes, change] })
              }
              return queue.add(key)
            }), { discard: true })

        /** A change as a resync finds it: what the committed state wants is not in the cluster. */
        const missing = (
          owner: Omit<ClusterOwner, "tenant_id">,
          tenant_id: ClusterOwner["tenant_id"],
          object: string
        ) => ({ ...owner, tenant_id, object, change: "deleted", manager: null, fields: [] }) satisfies ClusterChange

        /**
         * The cluster compared with the committed state: each owner with something missing is
         * converged; what a known tenant's committed state does not want (a delete lost while no
         * replica ran) is deleted. The inventory is read first: what it holds was committed before
         * it was applied, so the states read after it have it unless it was deleted since.
         */
        const resyncOnce = Effect.gen(function*() {
          const held = yield* orchestrator.inventory
          const tenants = yield* store.tenants.list.pipe(storeUnavailable)
          const now = Date.now()
          const known = new Map<string, TenantState>()
          for (const tenant of tenants) {
            const state = yield* readModel.stateOf(tenant.id).pipe(storeUnavailable)
            known.set(tenant.id, state)
            const mine = held.filter((o) => o.tenant_id === tenant.id)
            const vpcs = new Set(mine.filter((o) => o.subnet_id === null && o.pod_id === null).map((o) => o.vpc_id))
            const subnets = new Set(mine.filter((o) => o.pod_id === null).flatMap((o) => o.subnet_id ?? []))
            const pods = new Set(mine.flatMap((o) => o.pod_id ?? []))
            for (const vpc of state.vpcs) {
              // Not applied: its apply is failing, which it says already, and the reconciler retries.
              if (vpc.lifecycle !== "active" || !vpc.applied || !settled(vpc.created_at, now)) continue
              const absent = [
                ...(vpcs.has(vpc.id)
                  ? []
                  : [missing({ vpc_id: vpc.id, subnet_id: null, pod_id: null }, tenant.id, `VPC ${vpc.id}`)]),
                ...state.subnetsOf(vpc.id).filter((s) => !subnets.has(s.id) && settled(s.created_at, now)).map((s) =>
                  missing({ vpc_id: vpc.id, subnet_id: s.id, pod_id: null }, tenant.id, `subnet ${s.id}`)
                )
              ]
              yield* Effect.forEach(absent, enqueue, { discard: true })
            }
            for (const pod of state.pods) {
              if (pod.lifecycle !== "active" || !pod.applied || pods.has(pod.id) || !settled(pod.updated_at, now)) {
                continue
              }
              yield* enqueue(
                missing({ vpc_id: pod.vpc_id, subnet_id: pod.subnet_id, pod_id: pod.id }, tenant.id, `pod ${pod.id}`)
              )
            }
          }
          // Pods first, then subnets, then VPCs: what runs in a thing goes before it.
          const orphans = held.filter((o) => {
            const state = known.get(o.tenant_id)
            if (state === undefined) return false
            return o.pod_id !== null
              ? state.pod(o.pod_id) === undefined
              : o.subnet_id !== null
              ? state.subnet(o.subnet_id) === undefined
              : state.vpc(o.vpc_id) === undefined
          }).sort((a, b) => rank(a) - rank(b))
          const done = new Set<string>()
          yield* Effect.forEach(orphans, (o) => {
            const kind = o.pod_id !== null ? "pod" : o.subnet_id !== null ? "subnet" : "vpc"
            const id = o.pod_id ?? o.subnet_id ?? o.vpc_id
            if (done.has(id)) return Effect.void
            done.add(id)
            if (options.deleteOrphans === false) {
              return Effect.zipRight(
                Metric.increment(Metric.tagged(orphansKept, "kind", kind)),
                Effect.logWarning("orphan left in place (orphans are not deleted)", { kind, id, tenant: o.tenant_id })
              )
            }
            const deleting = o.pod_id !== null
              ? orchestrator.deletePod(o.pod_id)
              : o.subnet_id !== null
              ? orchestrator.deleteSubnet(o.vpc_id, o.subnet_id)
              : orchestrator.deleteVpc(o.vpc_id)
            return deleting.pipe(
              Effect.zipRight(Metric.increment(Metric.tagged(orphansDeleted, "kind", kind))),
              Effect.zipRight(Effect.logInfo("orphan deleted", { kind, id, tenant: o.tenant_id })),
              Effect.catchAll((e) =>
                Effect.logWarning("could not delete an orphan; the next resync tries again", e.message)
              )
            )
          }, { discard: true })
        })

        const resync = resyncOnce.pipe(
          Effect.catchAll((e) => Effect.logWarning("resync failed; the next one tries again", e.message)),
          Effect.repeat(Schedule.spaced(options.resync ?? Duration.minutes(10)))
        )

        /**
         * Leading: the work queue and its workers, and the resync (first at once: what changed
         * while no replica led is found), until the scope closes.
         */
        const lead = Effect.scoped(Effect.gen(function*() {
          yield* Effect.addFinalizer(() =>
            Effect.sync(() => {
              queue = undefined
              drifts.clear()
            })
          )
          queue = yield* makeQueue
          yield* Effect.logInfo("leading the cluster controller")
          // What changed while this replica did not lead (fields too, which the resync does not
          // compare) is converged once, from the committed state: each applied VPC, then each
          // applied pod (a pod needs its subnet), in the background of the lead.
          yield* Effect.forkScoped(
            Effect.gen(function*() {
              for (const tenant of yield* store.tenants.list.pipe(storeUnavailable)) {
                const state = yield* readModel.stateOf(tenant.id).pipe(storeUnavailable)
                for (const vpc of state.vpcs) {
                  if (vpc.lifecycle === "active" && vpc.applied) yield* applier.converge(tenant.id, vpc.id)
                }
                for (const pod of state.pods) {
                  if (pod.lifecycle === "active" && pod.applied) yield* pods.apply(tenant.id, pod.id)
                }
              }
            }).pipe(
              Effect.catchAll((e) => Effect.logWarning("could not converge every owner on leading", e.message))
            )
          )
          return yield* resync.pipe(Effect.zipRight(Effect.never))
        }))

        // Served at 0 from the start, as every series whose labels are known in advance.
        yield* Effect.sync(() => {
          for (const kind of ["vpc", "pod"]) {
            Metric.tagged(repairs, "kind", kind).unsafeValue([])
            Metric.tagged(failedRepairs, "kind", kind).unsafeValue([])
          }
          for (const kind of ["vpc", "subnet", "pod"]) {
            Metric.tagged(orphansDeleted, "kind", kind).unsafeValue([])
            Metric.tagged(orphansKept, "kind", kind).unsafeValue([])
          }
          repairLatency.unsafeValue([])
        })
        yield* Effect.forkScoped(Stream.runForEach(orchestrator.changes, enqueue))
        // One replica leads (the store's lock, held while it lives: a replica that dies lets it
        // go, or a Lease on Kubernetes); the others watch too, and try to lead every few seconds.
        yield* leadership.lead(LEADER_LOCK, lead).pipe(
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.logWarning("leading the cluster controller ended; asking again", Cause.pretty(cause))
          ),
          Effect.zipRight(Effect.sleep(options.leaderRetry ?? leadership.retry)),
          Effect.forever,
          Effect.forkScoped
        )
        return ClusterController.of({
          leading: () => queue !== undefined,
          depth: () => queue?.depth() ?? { waiting: 0, processing: 0 }
        })
      })
    )
}
