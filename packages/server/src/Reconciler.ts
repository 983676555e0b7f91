/**
 * The reconciler: a fiber that, every `interval`, applies again each VPC and pod whose last
 * apply failed and publishes again each tunnel that is not active, until the cluster and the
 * provider take them. It stops with the server.
 */
import { NetworkApplier, Pods, Tunnels } from "@tenet/core"
import type { Duration } from "effect"
import { Effect, Layer, Schedule } from "effect"

export const layer = (interval: Duration.DurationInput) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const applier = yield* NetworkApplier.NetworkApplier
    const pods = yield* Pods.Pods
    const tunnels = yield* Tunnels.Tunnels
    yield* Effect.all({ vpcs: applier.reconcile, pods: pods.reconcile, tunnels: tunnels.reconcile }).pipe(
      Effect.tap((converged) =>
        converged.vpcs + converged.pods + converged.tunnels > 0
          ? Effect.logInfo("reconciler applied", converged)
          : Effect.void
      ),
      Effect.catchAll((e) => Effect.logWarning("reconciler pass failed; next pass will retry", e.detail)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.delay(interval),
      Effect.forkScoped
    )
  }))
