/** Tenants: the isolation boundary of every other resource. */
import type { DateTime } from "effect"
import { Schema } from "effect"
import { nullable, Secret, stringBetween, Timestamp, wireExample } from "./Common.js"
import { TenantId } from "./Ids.js"
import { DnsLabel } from "./Net.js"
import { Pod } from "./Pod.js"
import { Tunnel } from "./Tunnel.js"
import { Vpc } from "./Vpc.js"

/** Tenant passwords: 8-1024 characters (the spec is silent; NIST SP 800-63B's floor). */
export const TenantPassword = stringBetween(8, 1024).annotations({
  identifier: "TenantPassword",
  description: "Login password, 8-1024 characters; stored as a scrypt hash, never returned"
})

export const TenantCreate = Schema.Struct({
  name: DnsLabel,
  description: nullable(stringBetween(0, 1024)),
  password: TenantPassword
}).annotations({
  identifier: "TenantCreate",
  examples: wireExample({ name: "acme", description: "Acme Corp", password: "{tenant password}" })
})
export type TenantCreate = typeof TenantCreate.Type

export class Tenant extends Schema.Class<Tenant>("Tenant")({
  id: TenantId,
  name: DnsLabel,
  description: Schema.NullOr(Schema.String),
  created_at: Timestamp
}) {}

/** `GET /tenants/{id}`: the tenant with everything it runs. Pods carry their status. */
export class TenantDetail extends Schema.Class<TenantDetail>("TenantDetail")({
  ...Tenant.fields,
  vpcs: Schema.Array(Vpc),
  pods: Schema.Array(Pod),
  tunnels: Schema.Array(Tunnel)
}) {}

export const TenantLogin = Schema.Struct({
  name: Schema.String.pipe(Schema.maxLength(256)),
  password: Secret(1024)
}).annotations({
  identifier: "TenantLogin",
  examples: wireExample({ name: "acme", password: "{tenant password}" })
})

/** Returned by tenant login and rotate-token: the tenant and its current API token. */
export class TenantSession extends Schema.Class<TenantSession>("TenantSession")({
  id: TenantId,
  name: DnsLabel,
  api_token: Schema.String
}) {}

/** What the store keeps: the tenant with its password hash and its token's hash and ciphertext. */
export interface TenantRecord {
  readonly id: TenantId
  readonly name: DnsLabel
  readonly description: string | null
  readonly created_at: DateTime.Utc
  readonly password_hash: string
  readonly token_hash: string
  readonly token_ciphertext: string
}

export const toTenant = (record: TenantRecord): Tenant =>
  Tenant.make({
    id: record.id,
    name: record.name,
    description: record.description,
    created_at: record.created_at
  })
