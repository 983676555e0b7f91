/**
 * The provider's half of the controller. The tunnel provider has no watch: a periodic resync
 * lists what the account holds of Tenet's (`EdgeTunnels.held`, found by Tenet's tag) and
 * compares it with the committed tunnels. A route the provider no longer serves as published
 * (removed, or sent elsewhere, outside Tenet) is recorded on its tunnel (`status: "error"`
 * naming the drift) and published again; a route no committed tunnel wants (its delete lost
 * while the provider was down) is withdrawn. One replica resyncs at a time (the store's lock).
 *
 * Tunnels that are not active are the reconciler's (it publishes them again every pass); a
 * service tunnel whose publish failed has no other retry, so the resync publishes it again.
 */
import { Context, DateTime, Duration, Effect, Layer, Metric, Option, Schedule } from "effect"
import type { ServiceTunnelRecord } from "../domain/ServiceTunnel.js"
import type { TunnelRecord } from "../domain/Tunnel.js"
import type { InternalError, ServiceUnavailable } from "../Errors.js"
import type { EdgeRoute, HeldRoute } from "../ports/EdgeTunnels.js"
import { EdgeTunnels } from "../ports/EdgeTunnels.js"
import { storeUnavailable } from "../ports/Failures.js"
import { Store } from "../ports/Store.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import * as Tunnels from "../resources/tunnels/Tunnels.js"
import { ProviderConfigs } from "./ProviderConfigs.js"
import * as ServiceTunnels from "./ServiceTunnels.js"

export interface Options {
  /** How often the provider is compared with the committed tunnels (first at start); 10 minutes. */
  readonly resync?: Duration.DurationInput
  /** A service tunnel not yet published that was made this recently is its request's to publish (1 minute). */
  readonly settle?: Duration.DurationInput
  /**
   * Whether what a known tenant's committed state no longer wants is deleted (the default) or
   * only logged and counted, left in place: for a store restored from a backup older than the
   * cluster, whose newer workloads would otherwise read as orphans.
   */
  readonly deleteOrphans?: boolean
}

/** The store-wide lock a resync runs under. */
export const LOCK = "tenet.edge-controller"

/**
 * How the provider's route differs from the one wanted, in words; null when it serves it as
 * published. A `udp` route's target is the cluster's: only its presence is compared.
 */
export const driftOf = (wanted: EdgeRoute, held: HeldRoute | undefined): string | null => {
  if (held === undefined) return `${wanted.hostname} was removed at the tunnel provider outside Tenet`
  if (held.hostname !== wanted.hostname) {
    return `the provider publishes route ${wanted.key} as ${held.hostname}, not ${wanted.hostname}`
  }
  if (wanted.protocol === "udp" || held.service_url === wanted.service_url) return null
  return held.service_url === null
    ? `${wanted.hostname} has no route in its tunnel at the tunnel provider (removed outside Tenet)`
    : `${wanted.hostname} was sent to ${held.service_url} at the tunnel provider outside Tenet, not ${wanted.service_url}`
}

/** What one resync found and did. */
export interface Resync {
  readonly repaired: number
  readonly orphans_withdrawn: number
  /** Orphans found and left at the provider (`deleteOrphans: false`). */
  readonly orphans_kept: number
}

const repairs = Metric.counter("tenet_edge_repairs", {
  description: "Routes the tunnel provider did not serve as published (removed or changed outside Tenet, or a " +
    "service tunnel's failed publish), published again by a resync, by kind (tunnel, service_tunnel)",
  incremental: true
})

const orphansWithdrawn = Metric.counter("tenet_edge_orphans_withdrawn", {
  description: "Routes Tenet had published that no committed tunnel wants, withdrawn from the provider by a resync",
  incremental: true
})

const orphansKept = Metric.counter("tenet_edge_orphans_kept", {
  description: "Routes Tenet had published that no committed tunnel wants, found by a resync and left at the " +
    "provider (TENET_CONTROLLER_DELETE_ORPHANS=false)",
  incremental: true
})

export class EdgeController extends Context.Tag("@tenet/core/EdgeController")<EdgeController, {
  /** One resync now; none when another replica is running one. */
  readonly resync: Effect.Effect<Option.Option<Resync>, ServiceUnavailable | InternalError>
}>() {
  /** The resync, every `resync`, until the layer's scope closes. */
  static readonly layer = (options: Options = {}) =>
    Layer.scoped(
      EdgeController,
      Effect.gen(function*() {
        const store = yield* Store
        const readModel = yield* ReadModel
        const edge = yield* EdgeTunnels
        const configs = yield* ProviderConfigs
        const tunnels = yield* Tunnels.Tunnels
        const serviceTunnels = yield* ServiceTunnels.ServiceTunnels
        const settling = Duration.toMillis(options.settle ?? Duration.minutes(1))

        const logged = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>) =>
          effect.pipe(
            Effect.asVoid,
            Effect.catchAll((e) =>
              Effect.logWarning(`${what} failed; the next resync tries again`, e instanceof Error ? e.message : e)
            )
          )

        /**
         * The routes committed tunnels want (active ones, by key, as JSON), each tunnel's key, and
         * the service tunnels.
         */
        const wantedRoutes = Effect.gen(function*() {
          const routes = new Map<string, string>()
          const known = new Set<string>()
          const tunnelsWanted: Array<{ readonly tunnel: TunnelRecord; readonly route: EdgeRoute }> = []
          for (const tenant of yield* store.tenants.list.pipe(storeUnavailable)) {
            const state = yield* readModel.stateOf(tenant.id).pipe(storeUnavailable)
            for (const tunnel of state.tunnels) {
              known.add(tunnel.id)
              const route = tunnel.status === "active" ? Tunnels.routeOf(tunnel, state.pod(tunnel.pod_id)) : null
              if (route === null) continue
              routes.set(tunnel.id, JSON.stringify(route))
              tunnelsWanted.push({ tunnel, route })
            }
          }
          const services = yield* store.serviceTunnels.list.pipe(storeUnavailable)
          for (const record of services) {
            known.add(record.id)
            if (record.status === "active") routes.set(record.id, JSON.stringify(ServiceTunnels.routeOf(record)))
          }
          return { routes, known, tunnels: tunnelsWanted, services }
        })

        /**
         * What the provider holds is read after the first read of what is wanted: each route it
         * holds was committed before it was published, so the tunnels read after it have it
         * unless it was deleted since.
         */
        const resyncOnce = Effect.gen(function*() {
          const config = yield* configs.current
          const account = Option.isSome(config) ? yield* configs.edgeAccount(config.value) : Option.none()
          if (Option.isNone(account)) return { repaired: 0, orphans_withdrawn: 0, orphans_kept: 0 }
          // What is wanted is read before and after the provider is listed: a tunnel published,
          // changed or deleted meanwhile is its request's, not drift.
          const before = yield* wantedRoutes
          const held = yield* edge.held(account.value)
          const after = yield* wantedRoutes
          const heldByKey = new Map(held.map((h) => [h.key, h]))
          const settled = (key: string, route: EdgeRoute) => before.routes.get(key) === JSON.stringify(route)
          const drifted: Array<{ readonly tunnel: TunnelRecord; readonly drift: string }> = []
          for (const { route, tunnel } of after.tunnels) {
            const drift = settled(tunnel.id, route) ? driftOf(route, heldByKey.get(tunnel.id)) : null
            if (drift !== null) drifted.push({ tunnel, drift })
          }
          const now = Date.now()
          const services: Array<{ readonly record: ServiceTunnelRecord; readonly drift: string | null }> = []
          for (const record of after.services) {
            if (record.status !== "active") {
              // One made a moment ago is still being published by its request.
              if (now - DateTime.toEpochMillis(record.created_at) >= settling) services.push({ record, drift: null })
              continue
            }
            const route = ServiceTunnels.routeOf(record)
            const drift = settled(record.id, route) ? driftOf(route, heldByKey.get(record.id)) : null
            if (drift !== null) services.push({ record, drift })
          }
          let repaired = 0
          /** Counts a republish that left its tunnel active. */
          const counted = (kind: "tunnel" | "service_tunnel") => (after: { readonly status: string }) =>
            after.status !== "active" ? Effect.void : Effect.zipRight(
              Metric.increment(Metric.tagged(repairs, "kind", kind)),
              Effect.sync(() => repaired++)
            )
          for (const { drift, tunnel } of drifted) {
            yield* Effect.logWarning("tunnel drift", { tunnel: tunnel.id, drift })
            yield* logged("republishing a tunnel", Effect.tap(tunnels.repair(tunnel, drift), counted("tunnel")))
          }
          for (const { drift, record } of services) {
            if (drift !== null) yield* Effect.logWarning("service tunnel drift", { service_tunnel: record.id, drift })
            yield* logged(
              "republishing a service tunnel",
              Effect.tap(serviceTunnels.republish(record, drift), counted("service_tunnel"))
            )
          }
          let withdrawn = 0
          let kept = 0
          for (const orphan of held.filter((h) => !after.known.has(h.key))) {
            if (options.deleteOrphans === false) {
              kept++
              yield* Metric.increment(orphansKept)
              yield* Effect.logWarning("orphaned route left at the provider (orphans are not deleted)", {
                key: orphan.key,
                hostname: orphan.hostname
              })
              continue
            }
            yield* logged(
              "withdrawing an orphaned route",
              edge.unpublish(account.value, orphan).pipe(
                Effect.zipRight(Metric.increment(orphansWithdrawn)),
                Effect.zipRight(Effect.sync(() => withdrawn++)),
                Effect.zipRight(
                  Effect.logInfo("orphaned route withdrawn", { key: orphan.key, hostname: orphan.hostname })
                )
              )
            )
          }
          return { repaired, orphans_withdrawn: withdrawn, orphans_kept: kept }
        }).pipe(Effect.withSpan("EdgeController.resync"))

        const resync = store.exclusive(
          LOCK,
          resyncOnce.pipe(
            Effect.catchTag("EdgeError", (e) =>
              Effect.as(
                Effect.logWarning("could not list the tunnel provider; the next resync tries again", e.message),
                { repaired: 0, orphans_withdrawn: 0, orphans_kept: 0 }
              ))
          )
        ).pipe(storeUnavailable)

        // Served at 0 from the start, as every series whose labels are known in advance.
        yield* Effect.sync(() => {
          for (const kind of ["tunnel", "service_tunnel"]) Metric.tagged(repairs, "kind", kind).unsafeValue([])
          orphansWithdrawn.unsafeValue([])
          orphansKept.unsafeValue([])
        })
        yield* resync.pipe(
          Effect.catchAll((e) => Effect.logWarning("resync of the tunnel provider failed", e.detail)),
          Effect.repeat(Schedule.spaced(options.resync ?? Duration.minutes(10))),
          Effect.forkScoped
        )
        return EdgeController.of({ resync })
      })
    )
}
