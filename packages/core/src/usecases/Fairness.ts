/**
 * Expensive work shared fairly between tenants (`FairShare`): a use case whose cost grows with
 * what the tenant owns (a VPC's reachability, explain, the analysis, a topology read or post)
 * runs it as `expensive(tenant, work)`. It takes a seat when one is free and it is the tenant's
 * turn; it waits in its tenant's queue otherwise, and is refused (429, `TooManyRequests`) when
 * that queue is full or it has waited `wait`. The seats are this process's: each replica shares
 * its own CPU.
 */
import { Context, Deferred, Duration, Effect, Exit, FiberId, Layer } from "effect"
import * as FairShare from "../domain/FairShare.js"
import type { TenantId } from "../domain/Ids.js"
import { TooManyRequests } from "../Errors.js"
import * as Metrics from "../observability/Metrics.js"

export interface Options extends FairShare.Policy {
  /** How long a request may wait for its turn before it is refused. */
  readonly wait: Duration.DurationInput
}

/** Four seats (two cores' worth, with room for the waits on I/O), one a tenant, sixteen waiting a tenant, 10 s. */
export const DEFAULTS: Options = { seats: 4, perTenant: 1, queue: 16, wait: Duration.seconds(10) }

export interface FairnessShape {
  /** `work`, once a seat is `tenant`'s: it never runs beside more of the tenant's than the policy allows. */
  readonly expensive: <A, E, R>(
    tenant: TenantId,
    work: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | TooManyRequests, R>
  /** Expensive requests running or waiting for a seat now, every tenant's. */
  readonly occupancy: () => number
}

const refused = (reason: string) =>
  new TooManyRequests({ detail: `too many expensive requests: ${reason}; retry after a second`, retry_after: 1 })

export class Fairness extends Context.Tag("@tenet/core/Fairness")<Fairness, FairnessShape>() {
  static readonly make = (options: Partial<Options> = {}) =>
    Effect.sync((): FairnessShape => {
      const policy = { ...DEFAULTS, ...options }
      // One thread changes it, and only in synchronous steps: no other fiber sees a step half made.
      let state = FairShare.empty
      let nextId = 0
      const turns = new Map<number, Deferred.Deferred<void>>()

      const dispatch = () => {
        const next = FairShare.dispatch(policy, state)
        state = next.state
        for (const id of next.start) {
          const turn = turns.get(id)!
          turns.delete(id)
          Deferred.unsafeDone(turn, Exit.void)
        }
      }

      // Arrival and the wait's end are one uninterruptible step: an interruption between them
      // would leave a place in the queue, or a seat, that no one gives back.
      const expensive: FairnessShape["expensive"] = (tenant, work) =>
        Effect.uninterruptibleMask((restore) => {
          const id = nextId++
          const arrival = FairShare.arrive(policy, state, tenant, id)
          if (arrival._tag === "Refused") {
            return Effect.zipRight(Metrics.recordExpensiveRefused("queue_full"), Effect.fail(refused(arrival.reason)))
          }
          state = arrival.state
          const turn = Deferred.unsafeMake<void>(FiberId.none)
          turns.set(id, turn)
          dispatch()
          const release = Effect.sync(() => {
            state = FairShare.finish(state, tenant)
            dispatch()
          })
          /** Leaves the queue; true when its turn had come meanwhile (its seat is then to give back). */
          const leave = Effect.sync(() => {
            if (!turns.has(id)) return true
            turns.delete(id)
            state = FairShare.leave(state, tenant, id)
            dispatch()
            return false
          })
          return restore(Deferred.await(turn)).pipe(
            Effect.timeoutFail({
              duration: policy.wait,
              onTimeout: () => refused(`waited ${Duration.format(policy.wait)} for a turn`)
            }),
            Effect.onExit((exit) =>
              Exit.isSuccess(exit) ? Effect.void : Effect.flatMap(leave, (seated) => seated ? release : Effect.void)
            ),
            Effect.tapError(() => Metrics.recordExpensiveRefused("waited_too_long")),
            Effect.zipRight(restore(work).pipe(Effect.ensuring(release)))
          )
        })

      return { expensive, occupancy: () => FairShare.occupancy(state) }
    })

  static readonly layer = (options?: Partial<Options>) => Layer.effect(Fairness, Fairness.make(options))
}
