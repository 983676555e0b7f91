/**
 * The reconciler: a fiber that, every `interval`, applies again each VPC and each pod whose
 * last apply failed, until the cluster takes it. It stops with the server.
 */
import { NetworkApplier, Pods } from "@tenet/core"
import type { Duration } from "effect"
import { Effect, Layer, Schedule } from "effect"

export const layer = (interval: Duration.DurationInput) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const applier = yield* NetworkApplier.NetworkApplier
    const pods = yield* Pods.Pods
    yield* Effect.all({ vpcs: applier.reconcile, pods: pods.reconcile }).pipe(
      Effect.tap((converged) =>
        converged.vpcs + converged.pods > 0 ? Effect.logInfo("reconciler applied", converged) : Effect.void
      ),
      Effect.catchAll((e) => Effect.logWarning("reconciler pass failed; next pass will retry", e.detail)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.delay(interval),
      Effect.forkScoped
    )
  }))
