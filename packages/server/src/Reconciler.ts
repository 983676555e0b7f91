/**
 * The reconciler: a fiber that, every `interval`, applies again each VPC whose last apply
 * failed, until the cluster takes it. It stops with the server.
 */
import { NetworkApplier } from "@tenet/core"
import type { Duration } from "effect"
import { Effect, Layer, Schedule } from "effect"

export const layer = (interval: Duration.DurationInput) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const applier = yield* NetworkApplier.NetworkApplier
    yield* applier.reconcile.pipe(
      Effect.tap((converged) => converged > 0 ? Effect.logInfo("reconciler applied VPCs", converged) : Effect.void),
      Effect.catchAll((e) => Effect.logWarning("reconciler pass failed; next pass will retry", e.detail)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.delay(interval),
      Effect.forkScoped
    )
  }))
