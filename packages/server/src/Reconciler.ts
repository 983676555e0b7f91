/**
 * The reconciler: a fiber that, every `interval` (and those deletes once at start), finishes the
 * VPC deletes a stopped process left marked, applies again each VPC and pod whose last apply failed and publishes again each tunnel that is not active, until the cluster and the
 * provider take them, and forgets the idempotency keys past their retention and the login
 * attempts past every throttling window and the change stream's events past its retention. It
 * stops with the server.
 *
 * Each pass is counted and timed, and leaves the backlog it could not clear (and the tunnels
 * by status) in gauges: every replica measures them, also while another one holds the pass.
 */
import { ChangeFeed, Idempotency, Identity, NetworkApplier, Pods, Store, Tunnels, Vpcs } from "@tenet/core"
import type { Duration } from "effect"
import { Effect, Exit, Layer, Metric, MetricBoundaries, Option, Schedule } from "effect"

/** The store-wide lock a reconciler pass runs under. */
export const RECONCILER_LOCK = "tenet.reconciler"

/**
 * One pass: every VPC and pod whose last apply failed, every tunnel not active, and the
 * expired idempotency keys. None when another replica is running a pass right now.
 */
export const pass = Effect.gen(function*() {
  const applier = yield* NetworkApplier.NetworkApplier
  const vpcs = yield* Vpcs.Vpcs
  const pods = yield* Pods.Pods
  const tunnels = yield* Tunnels.Tunnels
  const store = yield* Store.Store
  const idempotency = yield* Idempotency.Idempotency
  const identity = yield* Identity.Identity
  const feed = yield* ChangeFeed.ChangeFeed
  return yield* store.exclusive(
    RECONCILER_LOCK,
    Effect.all({
      // Deletes a stopped process left marked are finished first: they are not to be applied.
      vpcs: Effect.zipWith(vpcs.reconcile, applier.reconcile, (finished, applied) => finished + applied),
      pods: pods.reconcile,
      tunnels: tunnels.reconcile,
      expired_keys: idempotency.purgeExpired,
      expired_login_attempts: identity.purgeAttempts,
      expired_sessions: identity.purgeSessions,
      expired_events: feed.compact
    })
  )
})

const passes = Metric.counter("tenet_reconciler_passes", {
  description: "Reconciler passes, by outcome (completed; skipped: another replica was running one; failed: the " +
    "store failed)",
  incremental: true
})

/** Seconds, from 1 ms to about 30 minutes. */
const passDuration = Metric.histogram(
  "tenet_reconciler_pass_duration_seconds",
  MetricBoundaries.exponential({ start: 0.001, factor: 4, count: 11 }),
  "Time a reconciler pass took, skipped passes left out"
)

const converged = Metric.counter("tenet_reconciler_converged", {
  description: "What the reconciler brought to its desired state, by kind (vpc, pod, tunnel)",
  incremental: true
})

const backlog = Metric.gauge("tenet_reconciler_backlog", {
  description: "What is still not in its desired state after the last pass, by kind: VPCs and pods whose apply " +
    "failed (vpc, pod), tunnels not active (tunnel)"
})

const tunnelsByStatus = Metric.gauge("tenet_tunnels", {
  description: "Tunnels (every tenant's), by status (active, pending, error), as of the last reconciler pass"
})

/** The backlog and the tunnels by status, as the store has them now. */
const measureBacklog = Effect.gen(function*() {
  const store = yield* Store.Store
  const vpcs = yield* store.vpcs.listUnapplied
  const pods = yield* store.pods.listUnapplied
  const tunnels = yield* store.tunnels.countByStatus
  yield* Effect.all([
    Metric.set(Metric.tagged(backlog, "kind", "vpc"), vpcs.length),
    Metric.set(Metric.tagged(backlog, "kind", "pod"), pods.length),
    Metric.set(Metric.tagged(backlog, "kind", "tunnel"), tunnels.pending + tunnels.error),
    Metric.set(Metric.tagged(tunnelsByStatus, "status", "active"), tunnels.active),
    Metric.set(Metric.tagged(tunnelsByStatus, "status", "pending"), tunnels.pending),
    Metric.set(Metric.tagged(tunnelsByStatus, "status", "error"), tunnels.error)
  ], { discard: true })
})

const countPass = (outcome: "completed" | "skipped" | "failed") =>
  Metric.increment(Metric.tagged(passes, "outcome", outcome))

/** `pass`, counted and timed, then the backlog measured. */
export const measuredPass = Effect.suspend(() => {
  const started = performance.now()
  const timed = Effect.suspend(() => Metric.update(passDuration, (performance.now() - started) / 1000))
  return pass.pipe(
    Effect.onExit(Exit.match({
      onFailure: () => Effect.zipRight(countPass("failed"), timed),
      onSuccess: Option.match({
        onNone: () => countPass("skipped"),
        onSome: (done) =>
          Effect.all([
            countPass("completed"),
            timed,
            Metric.incrementBy(Metric.tagged(converged, "kind", "vpc"), done.vpcs),
            Metric.incrementBy(Metric.tagged(converged, "kind", "pod"), done.pods),
            Metric.incrementBy(Metric.tagged(converged, "kind", "tunnel"), done.tunnels)
          ], { discard: true })
      })
    })),
    Effect.tap(() => measureBacklog)
  )
})

/**
 * The reconciler's series before its first pass: the counters at 0, the backlog and the
 * tunnels as the store has them now (a restart must not read as "no data" for a whole interval).
 */
const registerInitial = Effect.suspend(() => {
  for (const outcome of ["completed", "skipped", "failed"]) Metric.tagged(passes, "outcome", outcome).unsafeValue([])
  for (const kind of ["vpc", "pod", "tunnel"]) Metric.tagged(converged, "kind", kind).unsafeValue([])
  passDuration.unsafeValue([])
  return measureBacklog.pipe(
    Effect.catchAll((e) => Effect.logWarning("could not measure the reconciler's backlog at start", e.detail))
  )
})

/**
 * At start, the VPC deletes a stopped server left marked are finished at once (those whose
 * server is known gone, as this one's predecessor on the host after a restart), not a pass later.
 */
const finishLeftDeletes = Effect.gen(function*() {
  const vpcs = yield* Vpcs.Vpcs
  const store = yield* Store.Store
  const finished = yield* store.exclusive(RECONCILER_LOCK, vpcs.reconcile)
  if (Option.getOrElse(finished, () => 0) > 0) {
    yield* Effect.logInfo("finished the VPC deletes a stopped server left", Option.getOrThrow(finished))
  }
}).pipe(
  Effect.catchAll((e) =>
    Effect.logWarning("finishing the deletes a stopped server left failed; next pass retries", e.detail)
  )
)

export const layer = (interval: Duration.DurationInput) => {
  const logged = measuredPass.pipe(
    Effect.tap(Option.match({
      onNone: () => Effect.logDebug("another replica is reconciling; skipping this pass"),
      onSome: (converged) =>
        converged.vpcs + converged.pods + converged.tunnels + converged.expired_keys +
              converged.expired_login_attempts + converged.expired_events > 0
          ? Effect.logInfo("reconciler applied", converged)
          : Effect.void
    })),
    Effect.catchAll((e) => Effect.logWarning("reconciler pass failed; next pass will retry", e.detail))
  )
  return Layer.scopedDiscard(
    // Each pass's log lines share an id, as a request's do.
    Effect.zipRight(
      Effect.zipRight(registerInitial, Effect.forkScoped(finishLeftDeletes)),
      Effect.suspend(() => Effect.annotateLogs(logged, "reconcile_pass", crypto.randomUUID())).pipe(
        Effect.repeat(Schedule.spaced(interval)),
        Effect.delay(interval),
        Effect.forkScoped
      )
    )
  )
}
