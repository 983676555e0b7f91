/**
 * Platform service tunnels: the administrator exposes the API (or a GUI the operator runs)
 * at a public hostname through the tunnel provider. The spec leaves the shape open; this is
 * Tenet's.
 */
import { Schema } from "effect"
import { nullable, Timestamp, wireExample } from "./Common.js"
import { ServiceTunnelId } from "./Ids.js"
import { DnsLabel, DomainName } from "./Net.js"

/** Where the tunnel's connector sends traffic: an http(s) origin. */
export const ServiceUrl = Schema.String.pipe(
  Schema.filter((s) => {
    try {
      const url = new URL(s)
      return (url.protocol === "http:" || url.protocol === "https:") && url.username === "" &&
          url.password === "" || "must be an http:// or https:// URL without credentials"
    } catch {
      return "must be an http:// or https:// URL"
    }
  }),
  Schema.maxLength(2048),
  Schema.brand("ServiceUrl"),
  Schema.annotations({
    identifier: "ServiceUrl",
    examples: ["http://tenet-api.tenet-system:8080" as never],
    arbitrary: () => (fc) =>
      fc.tuple(fc.constantFrom("http", "https"), fc.domain(), fc.integer({ min: 1, max: 65535 }))
        .map(([scheme, host, port]) => `${scheme}://${host}:${port}` as never)
  })
)
export type ServiceUrl = typeof ServiceUrl.Type

export const ServiceTunnelStatus = Schema.Literal("active", "error").annotations({
  identifier: "ServiceTunnelStatus",
  description: "active: the provider serves the hostname; error: the provider refused or failed (see `error`)"
})
export type ServiceTunnelStatus = typeof ServiceTunnelStatus.Type

export const ServiceTunnelCreate = Schema.Struct({
  /** A name for this platform service, e.g. `api` or `console`; unique. */
  service: DnsLabel,
  subdomain: DnsLabel,
  /** Defaults to the provider configuration's `edge_domain`. */
  domain: nullable(DomainName),
  /** Defaults to this server's own URL (`TENET_PUBLIC_URL`), i.e. the API itself. */
  target_url: nullable(ServiceUrl)
}).annotations({
  identifier: "ServiceTunnelCreate",
  examples: wireExample({ service: "api", subdomain: "api", domain: null, target_url: null })
})
export type ServiceTunnelCreate = typeof ServiceTunnelCreate.Type

/** What the store keeps of a service tunnel. */
export const ServiceTunnelRecord = Schema.Struct({
  id: ServiceTunnelId,
  service: DnsLabel,
  hostname: DomainName,
  target_url: ServiceUrl,
  status: ServiceTunnelStatus,
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp
})
export interface ServiceTunnelRecord extends Schema.Schema.Type<typeof ServiceTunnelRecord> {}

/** The record with the URL it serves at. */
export class ServiceTunnel extends Schema.Class<ServiceTunnel>("ServiceTunnel")({
  ...ServiceTunnelRecord.fields,
  url: Schema.String
}) {}

export const toServiceTunnel = (record: ServiceTunnelRecord): ServiceTunnel =>
  ServiceTunnel.make({ ...record, url: `https://${record.hostname}` })
