/**
 * What the changes to a pod are, decided on the tenant's state: pure functions to a
 * `Decision` or the refusal. A change to an existing pod is made to the pod as the state holds
 * it, refused while a delete is under way, and decided on the pod's VPC, so concurrent
 * changes to one pod (scaling, configuration, deletion) follow one another instead of
 * overwriting each other.
 */
import type { DateTime } from "effect"
import { Either } from "effect"
import type { Decision } from "../../changes/Pipeline.js"
import { creating } from "../../changes/Pipeline.js"
import type { PodId, VpcId } from "../../domain/Ids.js"
import type { PodConfigPatch, PodRecord } from "../../domain/Pod.js"
import { etagOf, MAX_REPLICAS, MIN_REPLICAS } from "../../domain/Pod.js"
import { Conflict, InvalidInput, NotFound, PreconditionFailed } from "../../Errors.js"
import * as Change from "../../kinds/Change.js"
import type { TenantState } from "../../readmodel/TenantState.js"

/** A new pod, in a subnet the state still holds. */
export const create = (record: PodRecord) => (state: TenantState): Either.Either<Decision<PodRecord>, NotFound> =>
  state.subnet(record.subnet_id) === undefined
    ? Either.left(new NotFound({ detail: `subnet ${record.subnet_id} not found` }))
    : Either.right(creating({ part: "pods", record }))

/**
 * The pod's next record by `change`, made to the pod as the state holds it; `keyed`: the
 * request's idempotency key records the pod (a scale repeated with its key is not repeated).
 */
export const modify = <E>(
  id: PodId,
  vpcId: VpcId,
  change: (current: PodRecord) => Either.Either<PodRecord, E>,
  keyed = false,
  ifMatch?: string
) =>
(state: TenantState): Either.Either<Decision<PodRecord>, NotFound | Conflict | PreconditionFailed | E> => {
  const current = state.pod(id)
  if (current === undefined) return Either.left(new NotFound({ detail: `pod ${id} not found` }))
  if (current.lifecycle === "deleting") return Either.left(new Conflict({ detail: `pod ${id} is being deleted` }))
  const moved = PreconditionFailed.unmoved(`pod ${id}`, etagOf(current), ifMatch)
  if (Either.isLeft(moved)) return Either.left(moved.left)
  return Either.map(change(current), (next) => ({
    writes: [Change.update({ part: "pods", record: next })],
    decidedOn: [vpcId],
    subject: id,
    ...(keyed ? { made: id } : {}),
    result: next
  }))
}

/** One replica more or fewer, within 1-10; refused while the autoscaler manages them. */
export const rescaled =
  (delta: 1 | -1, now: DateTime.Utc) => (record: PodRecord): Either.Either<PodRecord, Conflict> => {
    if (record.auto_scaling) {
      return Either.left(new Conflict({ detail: "replicas are managed by the autoscaler while auto_scaling is on" }))
    }
    const count = record.replica_count + delta
    if (count > MAX_REPLICAS) {
      return Either.left(
        new Conflict({ detail: `pod ${record.id} already has ${MAX_REPLICAS} replicas, the most it may have` })
      )
    }
    if (count < MIN_REPLICAS) {
      return Either.left(
        new Conflict({ detail: `pod ${record.id} already has ${MIN_REPLICAS} replica, the fewest it may have` })
      )
    }
    return Either.right({ ...record, replica_count: count, updated_at: now })
  }

/**
 * The configuration patched: auto_scaling forces auto_healing on, auto_healing off turns
 * auto_scaling off, and the replica count stays within the autoscaler's bounds.
 */
export const reconfigured = (
  patch: PodConfigPatch,
  env: Pick<PodRecord, "env_var_names" | "env_ciphertext"> | undefined,
  now: DateTime.Utc
) =>
(record: PodRecord): Either.Either<PodRecord, InvalidInput> => {
  const autoScaling = patch.auto_healing === false ? false : patch.auto_scaling ?? record.auto_scaling
  const autoHealing = autoScaling ? true : patch.auto_healing ?? record.auto_healing
  const min = patch.autoscale_min_replicas ?? record.autoscale_min_replicas
  const max = patch.autoscale_max_replicas ?? record.autoscale_max_replicas
  if (min > max) {
    return Either.left(
      InvalidInput.field("autoscale_min_replicas", `${min} is above autoscale_max_replicas ${max}`)
    )
  }
  return Either.right({
    ...record,
    ...(env ?? {}),
    auto_scaling: autoScaling,
    auto_healing: autoHealing,
    autoscale_min_replicas: min,
    autoscale_max_replicas: max,
    autoscale_cpu_target_millicores: patch.autoscale_cpu_target_millicores ?? record.autoscale_cpu_target_millicores,
    persistent: patch.persistent ?? record.persistent,
    persistent_mount_path: patch.persistent_mount_path ?? record.persistent_mount_path,
    replica_count: autoScaling ? Math.min(Math.max(record.replica_count, min), max) : record.replica_count,
    updated_at: now
  })
}

/** Marked for deletion at `now`: of concurrent deletes, one marks it, the others find it being deleted. */
export const marked = (now: DateTime.Utc) => (record: PodRecord): Either.Either<PodRecord> =>
  Either.right({ ...record, lifecycle: "deleting" as const, deleting_since: now })
