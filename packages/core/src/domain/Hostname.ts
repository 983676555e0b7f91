/**
 * Routed hostnames: every hostname the tunnel provider routes for Tenet belongs to exactly one
 * holder, a tenant's tunnel or a platform service tunnel, in one index the store keeps
 * (`Store.HostnameRepository`; a clash is refused inside the commit that would make it). Some
 * names under the platform's own domain are kept for the platform: a tenant cannot take them
 * even before the admin publishes a service there.
 */
import type { ServiceTunnelId, TenantId, TunnelId } from "./Ids.js"

/**
 * Subdomains of the provider configuration's `edge_domain` that only platform service tunnels
 * may use: where an operator publishes the API, its console and docs, and names people trust
 * as the platform's own.
 */
export const RESERVED_SUBDOMAINS: ReadonlyArray<string> = [
  "api",
  "console",
  "docs",
  "admin",
  "auth",
  "login",
  "status",
  "www"
]

/** Whether a tenant may not take `hostname`: a reserved subdomain of the platform's `edgeDomain`. */
export const isReserved = (hostname: string, edgeDomain: string | null): boolean =>
  edgeDomain !== null && RESERVED_SUBDOMAINS.some((subdomain) => hostname === `${subdomain}.${edgeDomain}`)

/** Who holds a routed hostname. */
export type Holder =
  | {
    readonly kind: "tunnel"
    readonly tenant_id: TenantId
    readonly tunnel_id: TunnelId
    readonly tunnel_name: string
  }
  | { readonly kind: "service"; readonly service_tunnel_id: ServiceTunnelId; readonly service: string }
