/**
 * How a pod reads in the API: its status from what the cluster reports (or could not), and its
 * view, the record without what is hidden. Pure.
 */
import { Option, Struct } from "effect"
import { TRUSTED } from "../../domain/Common.js"
import type { PodRecord, PodStatus } from "../../domain/Pod.js"
import { etagOf, HIDDEN_FIELDS, Pod } from "../../domain/Pod.js"
import type { OrchestratorError, PodRuntime } from "../../ports/Orchestrator.js"

/** Statuses are flat: equal when every field is (a time by its value). */
export const sameStatus = (a: PodStatus, b: PodStatus) =>
  (Object.keys(b) as Array<keyof PodStatus>).every((k) => {
    const x = a[k]
    const y = b[k]
    return x === y || (x instanceof Date && y instanceof Date && x.getTime() === y.getTime())
  })

/** The replica count a pod starts with: at least 2 when autoscaling (the spec's minimum). */
export const initialReplicas = (record: Pick<PodRecord, "auto_scaling" | "replica_count" | "autoscale_min_replicas">) =>
  record.auto_scaling ? Math.max(record.replica_count, record.autoscale_min_replicas) : record.replica_count

/** The pod as the cluster reports it (none: the cluster does not know it). */
export const statusFrom = (record: PodRecord, runtime: Option.Option<PodRuntime>): PodStatus =>
  Option.match(runtime, {
    onNone: (): PodStatus => ({
      phase: record.applied ? "failed" : "pending",
      ready_replicas: 0,
      desired_replicas: initialReplicas(record),
      vip: record.vip,
      external_ip: record.external_ip,
      last_error: record.applied ? "the cluster has no workload for this pod" : record.apply_error,
      stale_since: null
    }),
    onSome: (runtime): PodStatus => ({
      ...runtime,
      phase: record.lifecycle === "deleting" ? "deleting" : runtime.phase,
      last_error: runtime.last_error ?? (record.applied ? null : record.apply_error)
    })
  })

/** The pod when the cluster could not be asked. */
export const statusUnknown = (record: PodRecord, error: OrchestratorError): PodStatus => ({
  phase: "unknown",
  ready_replicas: 0,
  desired_replicas: initialReplicas(record),
  vip: record.vip,
  external_ip: record.external_ip,
  last_error: error.message,
  stale_since: null
})

/** The pod as a user sees it, with `status`. */
export const podOf = (record: PodRecord, status: PodStatus) =>
  Pod.make({ ...Struct.omit(record, ...HIDDEN_FIELDS), status, etag: etagOf(record) }, TRUSTED)
