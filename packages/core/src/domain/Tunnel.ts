/** Tunnels: a pod's port exposed at a public hostname through the tunnel provider. */
import { Schema, Struct } from "effect"
import { nullable, oncePerRecord, Port, Timestamp, TRUSTED, wireExample } from "./Common.js"
import * as Etag from "./Etag.js"
import { PodId, TenantId, TunnelId, VpcId } from "./Ids.js"
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

/** What the store keeps about a tunnel. */
export const TunnelRecord = Schema.Struct({
  id: TunnelId,
  tenant_id: TenantId,
  pod_id: PodId,
  /** The pod's VPC, where the tunnel's connector runs. */
  vpc_id: VpcId,
  tunnel_name: DnsLabel,
  subdomain: DnsLabel,
  domain: DomainName,
  hostname: DomainName,
  protocol_type: TunnelProtocol,
  service_port: Schema.Int,
  status: TunnelStatus,
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp
})
export interface TunnelRecord extends Schema.Schema.Type<typeof TunnelRecord> {}

/** The record's fields no answer carries. */
export const HIDDEN_FIELDS = ["vpc_id"] as const

/** The record with how a client reaches it. */
export class Tunnel extends Schema.Class<Tunnel>("Tunnel")({
  ...Struct.omit(TunnelRecord.fields, ...HIDDEN_FIELDS),
  access: TunnelAccess,
  etag: Etag.Field
}) {}

/** The tunnel's version: what it declares, not its status at the provider. */
export const etagOf = oncePerRecord((record: TunnelRecord): string => Etag.of(record, ["status", "error"]))

export const TunnelListQuery = Schema.Struct({ pod_id: PodId })

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

export const toTunnel = oncePerRecord((record: TunnelRecord): Tunnel =>
  Tunnel.make({
    ...Struct.omit(record, ...HIDDEN_FIELDS),
    access: accessOf(record.protocol_type, record.hostname, record.service_port),
    etag: etagOf(record)
  }, TRUSTED)
)
