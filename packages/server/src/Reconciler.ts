/**
 * The reconciler: a fiber that, every `interval`, applies again each VPC and pod whose last
 * apply failed and publishes again each tunnel that is not active, until the cluster and the
 * provider take them, and forgets the idempotency keys past their retention. It stops with
 * the server.
 */
import { Idempotency, NetworkApplier, Pods, Store, Tunnels } from "@tenet/core"
import type { Duration } from "effect"
import { Effect, Layer, Option, Schedule } from "effect"

/** The store-wide lock a reconciler pass runs under. */
export const RECONCILER_LOCK = "tenet.reconciler"

/**
 * One pass: every VPC and pod whose last apply failed, every tunnel not active, and the
 * expired idempotency keys. None when another replica is running a pass right now.
 */
export const pass = Effect.gen(function*() {
  const applier = yield* NetworkApplier.NetworkApplier
  const pods = yield* Pods.Pods
  const tunnels = yield* Tunnels.Tunnels
  const store = yield* Store.Store
  const idempotency = yield* Idempotency.Idempotency
  return yield* store.exclusive(
    RECONCILER_LOCK,
    Effect.all({
      vpcs: applier.reconcile,
      pods: pods.reconcile,
      tunnels: tunnels.reconcile,
      expired_keys: idempotency.purgeExpired
    })
  )
})

export const layer = (interval: Duration.DurationInput) => {
  const logged = pass.pipe(
    Effect.tap(Option.match({
      onNone: () => Effect.logDebug("another replica is reconciling; skipping this pass"),
      onSome: (converged) =>
        converged.vpcs + converged.pods + converged.tunnels + converged.expired_keys > 0
          ? Effect.logInfo("reconciler applied", converged)
          : Effect.void
    })),
    Effect.catchAll((e) => Effect.logWarning("reconciler pass failed; next pass will retry", e.detail))
  )
  return Layer.scopedDiscard(
    // Each pass's log lines share an id, as a request's do.
    Effect.suspend(() => Effect.annotateLogs(logged, "reconcile_pass", crypto.randomUUID())).pipe(
      Effect.repeat(Schedule.spaced(interval)),
      Effect.delay(interval),
      Effect.forkScoped
    )
  )
}
