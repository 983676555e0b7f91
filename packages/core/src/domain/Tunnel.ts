/** Tunnels: a pod's port exposed at a public hostname through the tunnel provider. */
import type { DateTime } from "effect"
import { Schema } from "effect"
import { nullable, Port, Timestamp, wireExample } from "./Common.js"
import { PodId, TenantId, TunnelId } from "./Ids.js"
import type { VpcId } from "./Ids.js"
import { DnsLabel, DomainName } from "./Net.js"

export const TunnelProtocol = Schema.Literal("http", "https", "ssh", "tcp", "udp").annotations({
  identifier: "TunnelProtocol"
})
export type TunnelProtocol = typeof TunnelProtocol.Type

export const TunnelCreate = Schema.Struct({
  tunnel_name: DnsLabel,
  subdomain: DnsLabel,
  protocol_type: TunnelProtocol,
  service_port: Schema.optionalWith(Port, { default: () => 80 }),
  domain: nullable(DomainName).annotations({
    description: "A domain the admin assigned to this tenant; defaults to the provider's edge_domain"
  })
}).annotations({
  identifier: "TunnelCreate",
  examples: wireExample({
    tunnel_name: "storefront",
    subdomain: "shop",
    protocol_type: "https",
    service_port: 443,
    domain: null
  })
})
export type TunnelCreate = typeof TunnelCreate.Type

/** Body of `POST /tunnels?pod_id=`: everything optional, derived from the pod when absent. */
export const TunnelAutoCreate = Schema.NullOr(
  Schema.Struct({
    subdomain: Schema.optional(DnsLabel),
    protocol_type: Schema.optional(TunnelProtocol),
    service_port: Schema.optional(Port),
    domain: Schema.optional(Schema.NullOr(DomainName))
  }).annotations({ examples: wireExample({ subdomain: "shop", protocol_type: "http" }) })
).annotations({
  identifier: "TunnelAutoCreate"
})

export const TunnelStatus = Schema.Literal("active", "pending", "error").annotations({
  identifier: "TunnelStatus",
  description: "active: traffic flows; pending: being set up or retried; error: the provider refused it (see error)"
})
export type TunnelStatus = typeof TunnelStatus.Type

/** How a client reaches the tunnel, per the spec's protocol table. */
export const TunnelAccess = Schema.Struct({
  kind: Schema.Literal("url", "command", "address"),
  value: Schema.String
}).annotations({ identifier: "TunnelAccess" })

export class Tunnel extends Schema.Class<Tunnel>("Tunnel")({
  id: TunnelId,
  tenant_id: TenantId,
  pod_id: PodId,
  tunnel_name: DnsLabel,
  subdomain: DnsLabel,
  domain: DomainName,
  hostname: DomainName,
  protocol_type: TunnelProtocol,
  service_port: Schema.Int,
  status: TunnelStatus,
  error: Schema.NullOr(Schema.String),
  access: TunnelAccess,
  created_at: Timestamp
}) {}

export const TunnelListQuery = Schema.Struct({ pod_id: PodId })

/** What the store keeps about a tunnel. */
export interface TunnelRecord {
  readonly id: TunnelId
  readonly tenant_id: TenantId
  readonly pod_id: PodId
  readonly vpc_id: VpcId
  readonly tunnel_name: DnsLabel
  readonly subdomain: DnsLabel
  readonly domain: DomainName
  readonly hostname: DomainName
  readonly protocol_type: TunnelProtocol
  readonly service_port: number
  readonly status: TunnelStatus
  readonly error: string | null
  readonly created_at: DateTime.Utc
}

/** How a client reaches the tunnel (the spec's protocol table). */
export const accessOf = (
  protocol: TunnelProtocol,
  hostname: string,
  port: number
): typeof TunnelAccess.Type => {
  switch (protocol) {
    case "http":
    case "https":
      return { kind: "url", value: `https://${hostname}` }
    case "ssh":
      return { kind: "command", value: `cloudflared access ssh --hostname ${hostname}` }
    case "tcp":
      return { kind: "command", value: `cloudflared access tcp --hostname ${hostname} --url localhost:${port}` }
    case "udp":
      return { kind: "address", value: `${hostname}:${port}` }
  }
}

export const toTunnel = (record: TunnelRecord): Tunnel => {
  const { vpc_id: _vpc, ...fields } = record
  return Tunnel.make({ ...fields, access: accessOf(record.protocol_type, record.hostname, record.service_port) })
}
