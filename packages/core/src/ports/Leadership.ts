/**
 * The Leadership port: which one replica acts where only one may (the controller). On
 * Kubernetes a `coordination.k8s.io` Lease (client-go's leader election); elsewhere the store's
 * lock (`fromStore`): on PostgreSQL an advisory lock held on a connection of its own, so a
 * replica that dies lets it go; in process for the memory and embedded stores (one process).
 */
import type { Duration, Option } from "effect"
import { Context, Effect, Layer, Schema } from "effect"
import { Store, StoreUnavailable } from "./Store.js"

/** Leadership could not be asked for, or was lost while held (the work was interrupted). */
export class LeadershipError extends Schema.TaggedError<LeadershipError>()("LeadershipError", {
  detail: Schema.String
}) {}

export interface LeadershipShape {
  /** Which implementation runs, for the startup line (`leadership=`). */
  readonly backend: string
  /** How often a replica that does not lead should ask again: a leader that died is replaced within it. */
  readonly retry: Duration.DurationInput
  /**
   * Runs `self` while this replica leads `name`, interrupting it (and failing) if leadership is
   * lost; none, without running it, while another replica leads.
   */
  readonly lead: <A, E, R>(
    name: string,
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<Option.Option<A>, E | LeadershipError, R>
}

export class Leadership extends Context.Tag("@tenet/core/Leadership")<Leadership, LeadershipShape>() {
  /** Leadership as the store's lock (`Store.exclusive`): a replica asks again every 5 s. */
  static readonly fromStore: Layer.Layer<Leadership, never, Store> = Layer.effect(
    Leadership,
    Effect.map(Store, (store) =>
      Leadership.of({
        backend: "store",
        retry: "5 seconds",
        lead: (name, self) =>
          store.exclusive(name, self).pipe(
            Effect.catchIf(
              (e): e is StoreUnavailable => e instanceof StoreUnavailable,
              (e) => new LeadershipError({ detail: `the store is unavailable: ${e.detail}` })
            )
          )
      }))
  )
}
