/** Tenants: the isolation boundary of every other resource. */
import { Schema, Struct } from "effect"
import { nullable, oncePerRecord, Secret, stringBetween, Timestamp, wireExample } from "./Common.js"
import * as Etag from "./Etag.js"
import { TenantId } from "./Ids.js"
import { DnsLabel } from "./Net.js"
import { Pod } from "./Pod.js"
import { QuotaOverrides } from "./Quota.js"
import { ExpiresAt, SessionFlag } from "./Session.js"
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

/** What the store keeps: the tenant with its password hash and its token's hash and ciphertext. */
export const TenantRecord = Schema.Struct({
  id: TenantId,
  name: DnsLabel,
  description: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  password_hash: Schema.String,
  token_hash: Schema.String,
  token_ciphertext: Schema.String,
  /** The tenant's own quotas (`Quota`): null where the server's default holds. */
  quotas: QuotaOverrides
})
export interface TenantRecord extends Schema.Schema.Type<typeof TenantRecord> {}

/**
 * The record's fields no tenant answer carries: secrets, kept only as hashes and ciphertext; and
 * the quotas, which `GET /tenants/{id}/quotas` answers with what is used of each.
 */
export const HIDDEN_FIELDS = ["password_hash", "token_hash", "token_ciphertext", "quotas"] as const

export class Tenant extends Schema.Class<Tenant>("Tenant")({
  ...Struct.omit(TenantRecord.fields, ...HIDDEN_FIELDS),
  etag: Etag.Field
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
  password: Secret(1024),
  session: SessionFlag
}).annotations({
  identifier: "TenantLogin",
  examples: wireExample({ name: "acme", password: "{tenant password}" })
})

/** Returned by tenant login and rotate-token: the tenant and its current API token (or a session's token). */
export class TenantSession extends Schema.Class<TenantSession>("TenantSession")({
  id: TenantId,
  name: DnsLabel,
  api_token: Schema.String,
  expires_at: ExpiresAt
}) {}

/** The tenant's version (a rotated token or password moves it), for `If-Match` on its delete. */
export const etagOf = oncePerRecord((record: TenantRecord): string => Etag.of(record))

export const toTenant = (record: TenantRecord): Tenant =>
  Tenant.make({ ...Struct.omit(record, ...HIDDEN_FIELDS), etag: etagOf(record) })
