/**
 * A simulated tunnel provider. Like the real one it wants an account and token, refuses a
 * hostname another route already serves, and can be down; its switches make each of those
 * failures happen on demand.
 */
import type { Ids, Tunnel } from "@tenet/core"
import { EdgeTunnels } from "@tenet/core"
import { Context, Duration, Effect, Layer } from "effect"

export interface PublishedRoute {
  readonly account_id: string
  readonly key: string
  readonly hostname: string
  readonly protocol: Tunnel.TunnelProtocol
  readonly service_url: string
  readonly vpc_id: Ids.VpcId | null
}

export class EdgeSwitches extends Context.Tag("@tenet/adapters-memory/EdgeSwitches")<EdgeSwitches, {
  /** While false, every call fails with reason `unavailable`. */
  readonly setAvailable: (available: boolean) => Effect.Effect<void>
  /** Every call takes this long. */
  readonly setLatency: (latency: Duration.DurationInput) => Effect.Effect<void>
  /** The routes the provider currently serves. */
  readonly routes: Effect.Effect<ReadonlyArray<PublishedRoute>>
  /** Drift: the route is removed at the provider, as someone with the account's token would. */
  readonly removeBehindTenet: (key: string) => Effect.Effect<void>
  /** Drift: the route's traffic is sent elsewhere at the provider. */
  readonly redirectBehindTenet: (key: string, service_url: string) => Effect.Effect<void>
}>() {}

export const make = Effect.sync(() => {
  const routes = new Map<string, PublishedRoute>()
  let available = true
  let latency = Duration.zero

  const call = <A>(body: Effect.Effect<A, EdgeTunnels.EdgeError>) =>
    Effect.suspend(() => Duration.isZero(latency) ? Effect.void : Effect.sleep(latency)).pipe(
      Effect.zipRight(Effect.suspend(() =>
        available
          ? body
          : Effect.fail(new EdgeTunnels.EdgeError({ reason: "unavailable", detail: "the tunnel provider is down" }))
      ))
    )

  const authorize = (account: EdgeTunnels.EdgeAccount) =>
    account.account_id === "" || account.api_token === ""
      ? Effect.fail(new EdgeTunnels.EdgeError({ reason: "unauthorized", detail: "missing account id or API token" }))
      : Effect.void

  const edge = EdgeTunnels.EdgeTunnels.of({
    backend: "simulated",
    publish: (account, route) =>
      call(Effect.zipRight(
        authorize(account),
        Effect.suspend(() => {
          const taken = [...routes.values()].find((r) => r.hostname === route.hostname && r.key !== route.key)
          if (taken !== undefined) {
            return Effect.fail(
              new EdgeTunnels.EdgeError({ reason: "conflict", detail: `hostname ${route.hostname} is already routed` })
            )
          }
          routes.set(route.key, {
            account_id: account.account_id,
            key: route.key,
            hostname: route.hostname,
            protocol: route.protocol,
            service_url: route.service_url,
            // A udp route has no connector: no VPC serves it at the provider.
            vpc_id: route.protocol === "udp" ? null : route.vpc?.vpc_id ?? null
          })
          return Effect.void
        })
      )),
    unpublish: (account, route) =>
      call(Effect.zipRight(authorize(account), Effect.sync(() => void routes.delete(route.key)))),
    held: (account) =>
      call(Effect.zipRight(
        authorize(account),
        Effect.sync(() =>
          [...routes.values()].filter((r) => r.account_id === account.account_id).map((r) => ({
            key: r.key,
            hostname: r.hostname,
            protocol: r.protocol,
            vpc_id: r.vpc_id,
            service_url: r.protocol === "udp" ? null : r.service_url
          }))
        )
      ))
  })

  const switches = EdgeSwitches.of({
    setAvailable: (value) => Effect.sync(() => void (available = value)),
    setLatency: (value) => Effect.sync(() => void (latency = Duration.decode(value))),
    routes: Effect.sync(() => [...routes.values()]),
    removeBehindTenet: (key) => Effect.sync(() => void routes.delete(key)),
    redirectBehindTenet: (key, service_url) =>
      Effect.sync(() => {
        const route = routes.get(key)
        if (route !== undefined) routes.set(key, { ...route, service_url })
      })
  })
  return { edge, switches }
})

/** The simulated provider as EdgeTunnels, with its switches. */
export const layer: Layer.Layer<EdgeTunnels.EdgeTunnels | EdgeSwitches> = Layer.effectContext(
  Effect.map(
    make,
    ({ edge, switches }) => Context.make(EdgeTunnels.EdgeTunnels, edge).pipe(Context.add(EdgeSwitches, switches))
  )
)
