/**
 * The platform's single provider configuration: external and peering networks, pod DNS,
 * and the tunnel provider's account.
 */
import { Schema, Struct } from "effect"
import { intBetween, nullable, Secret, stringBetween, Timestamp, wireExample } from "./Common.js"
import { DomainName, Ipv4Address, Ipv4Network } from "./Net.js"

export const ProviderConfigInput = Schema.Struct({
  external_subnet_cidr: Ipv4Network,
  external_subnet_gateway: Ipv4Address,
  peering_subnet_cidr: Ipv4Network,
  pod_dns_nameservers: Schema.optionalWith(Schema.Array(Ipv4Address).pipe(Schema.maxItems(3)), {
    default: () => []
  }).annotations({ description: "External DNS resolvers for pods; at most 3 (the resolv.conf limit)" }),
  pod_dns_ndots: nullable(intBetween(1, 15)),
  edge_account_id: nullable(stringBetween(1, 128)),
  /** Omitted keeps the stored token; `null` removes it. */
  edge_api_token: Schema.optional(Schema.NullOr(Secret(1024))).annotations({
    description: "Tunnel-provider API token. Omit to keep the stored token, null to remove it. Never returned."
  }),
  edge_domain: nullable(DomainName)
}).annotations({
  identifier: "ProviderConfigInput",
  examples: wireExample({
    external_subnet_cidr: "203.0.113.0/24",
    external_subnet_gateway: "203.0.113.1",
    peering_subnet_cidr: "100.64.0.0/16",
    pod_dns_nameservers: ["10.96.0.10"],
    pod_dns_ndots: 2,
    edge_account_id: "{provider account id}",
    edge_api_token: "{provider API token}",
    edge_domain: "apps.example.com"
  })
})
export type ProviderConfigInput = typeof ProviderConfigInput.Type

/** What the store keeps: the provider token only as an AES-256-GCM ciphertext. */
export const ProviderConfigRecord = Schema.Struct({
  external_subnet_cidr: Ipv4Network,
  external_subnet_gateway: Ipv4Address,
  peering_subnet_cidr: Ipv4Network,
  pod_dns_nameservers: Schema.Array(Ipv4Address),
  pod_dns_ndots: Schema.NullOr(Schema.Int),
  edge_account_id: Schema.NullOr(Schema.String),
  edge_api_token_ciphertext: Schema.NullOr(Schema.String),
  edge_domain: Schema.NullOr(DomainName),
  updated_at: Timestamp
})
export interface ProviderConfigRecord extends Schema.Schema.Type<typeof ProviderConfigRecord> {}

/** The record's fields no answer carries. */
export const HIDDEN_FIELDS = ["edge_api_token_ciphertext"] as const

/** The configuration as returned: the API token is never shown, only whether one is set. */
export class ProviderConfig extends Schema.Class<ProviderConfig>("ProviderConfig")({
  ...Struct.omit(ProviderConfigRecord.fields, ...HIDDEN_FIELDS),
  edge_api_token_set: Schema.Boolean
}) {}

export const toProviderConfig = (record: ProviderConfigRecord): ProviderConfig =>
  ProviderConfig.make({
    ...Struct.omit(record, ...HIDDEN_FIELDS),
    edge_api_token_set: record.edge_api_token_ciphertext !== null
  })
