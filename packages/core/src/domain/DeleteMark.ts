/**
 * A delete's mark: the VPC or pod leaves enforcement and takes no more writes from the commit
 * that marks it, and the process that marked it finishes it (the cluster, then the store).
 * That process holds the delete for `LEASE`; only after it does the reconciler take over a mark
 * (its process stopped). Its wait on the cluster ends well inside the lease, so the marking
 * process's take-back of a delete the cluster failed does not race the reconciler's finish
 * (unless the request outlives the lease: a store that stalls it for most of a minute, or
 * clocks a minute apart between replicas). A take-back the store refuses leaves the mark, and
 * the reconciler finishes the delete after the lease.
 */
import { DateTime, Duration } from "effect"

/** How long the marking process owns its delete. */
export const LEASE = Duration.minutes(1)

/** How long the marking process waits on the cluster before it counts the delete as refused. */
export const CLUSTER_WAIT = Duration.seconds(20)

/**
 * Why a VPC or pod whose delete the cluster failed is applied again: the cluster may have
 * removed part of it before failing (its `apply_error` until the apply succeeds).
 */
export const REFUSED = "the cluster failed a delete that was taken back; applying it again"

/** Whether a mark made at `since` is the reconciler's to finish (rows marked before marks had a time are). */
export const abandoned = (since: DateTime.Utc | null, now: DateTime.Utc): boolean =>
  since === null || DateTime.toEpochMillis(now) - DateTime.toEpochMillis(since) >= Duration.toMillis(LEASE)

/** Whether two marks are one: a take-back leaves a mark alone that is not the one it made. */
export const same = (a: DateTime.Utc | null, b: DateTime.Utc | null): boolean =>
  a === null || b === null ? a === b : DateTime.Equivalence(a, b)
