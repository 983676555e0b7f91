/**
 * The EdgeTunnels port: the tunnel provider that publishes a hostname and carries its
 * traffic to a service inside the platform.
 */
import type { Effect } from "effect"
import { Context, Schema } from "effect"
import type { TenantId, VpcId } from "../domain/Ids.js"
import type { TunnelProtocol } from "../domain/Tunnel.js"

export const EdgeFailure = Schema.Literal("unavailable", "unauthorized", "conflict", "rejected")
export type EdgeFailure = typeof EdgeFailure.Type

/**
 * unavailable: the provider is down or rate-limiting (retry later); unauthorized: the
 * account or token is wrong; conflict: the hostname or name is taken at the provider;
 * rejected: the provider refused the request as invalid.
 */
export class EdgeError extends Schema.TaggedError<EdgeError>()("EdgeError", {
  reason: EdgeFailure,
  detail: Schema.String
}) {
  override get message() {
    return `${this.reason}: ${this.detail}`
  }
}

/** The provider account calls are made with (from the provider configuration). */
export interface EdgeAccount {
  readonly account_id: string
  readonly api_token: string
}

export interface EdgeRoute {
  /** Tenet's stable key for the route (a tunnel or service-tunnel id). */
  readonly key: string
  readonly hostname: string
  readonly protocol: TunnelProtocol
  /** Where the provider's connector sends traffic, e.g. `http://10.96.0.12:80`. */
  readonly service_url: string
  /**
   * The VPC the service lives in (its connector runs there); null for platform services,
   * which the platform's own connector serves.
   */
  readonly vpc: { readonly tenant_id: TenantId; readonly vpc_id: VpcId } | null
}

/** What identifies a published route when it is withdrawn. */
export interface PublishedRoute extends Pick<EdgeRoute, "key" | "hostname" | "protocol"> {
  /** The VPC whose connector serves it; null for platform services. */
  readonly vpc_id: VpcId | null
}

/** What withdraws a route that was published. */
export const withdrawalOf = (route: EdgeRoute): PublishedRoute => ({
  key: route.key,
  hostname: route.hostname,
  protocol: route.protocol,
  vpc_id: route.vpc?.vpc_id ?? null
})

/**
 * A route the provider holds that Tenet published (found by Tenet's tag on it), as the
 * provider has it now: what a resync compares with the committed tunnels.
 */
export interface HeldRoute extends PublishedRoute {
  /**
   * Where the provider sends the hostname's traffic; null when it sends it nowhere (the
   * hostname's record is there, its tunnel has no ingress for it). A `udp` route's target is
   * the cluster's DNAT, not the provider's: its `service_url` is null and only its presence counts.
   */
  readonly service_url: string | null
}

export interface EdgeTunnelsShape {
  /** Which implementation runs, for the startup line and `/healthz`. */
  readonly backend: string
  /** Publishes the route, or updates it when the key is already published. */
  readonly publish: (account: EdgeAccount, route: EdgeRoute) => Effect.Effect<void, EdgeError>
  /** Withdraws the route. Absent is success. */
  readonly unpublish: (account: EdgeAccount, route: PublishedRoute) => Effect.Effect<void, EdgeError>
  /** Every route Tenet published that the account holds now, found by Tenet's tag. */
  readonly held: (account: EdgeAccount) => Effect.Effect<ReadonlyArray<HeldRoute>, EdgeError>
}

export class EdgeTunnels extends Context.Tag("@tenet/core/EdgeTunnels")<EdgeTunnels, EdgeTunnelsShape>() {}
