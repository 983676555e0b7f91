/**
 * Sign-in sessions: a token a login hands out on asking (`session: true`) in place of the
 * principal's API token, for a person at a browser (the console) rather than for automation. It
 * acts as the principal's API token does, and ends when it is signed out (`logout` with it), when
 * the principal's API token is rotated (every session of that principal), when its tenant is
 * deleted, or when it expires. The store keeps its token's digest only.
 */
import { Duration, Schema } from "effect"
import { nullable, Timestamp } from "./Common.js"
import { TenantId } from "./Ids.js"

/** A login's `session`: a sign-in session's token in the answer, not the API token. */
export const SessionFlag = Schema.optional(Schema.Boolean).annotations({
  description: "true: answer a new sign-in session's token (ended by logout, by rotation, or after " +
    "TENET_SESSION_TTL) instead of the API token"
})

/** When an answered token stops working by itself: a session's expiry; null for an API token. */
export const ExpiresAt = nullable(Timestamp).annotations({
  description: "When the token stops working by itself: a session's expiry; null for an API token"
})

/** How long a session lasts unless signed out first: a working day. */
export const DEFAULT_TTL = Duration.hours(12)

export const SessionRecord = Schema.Struct({
  token_hash: Schema.String,
  /** The tenant it signs in as; null for the admin's. */
  tenant_id: Schema.NullOr(TenantId),
  /** The admin it signs in as; null for a tenant's. */
  admin_username: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  expires_at: Timestamp
})
export interface SessionRecord extends Schema.Schema.Type<typeof SessionRecord> {}

/** Whose sessions: a tenant's, or the admin's. */
export type Owner = { readonly tenant_id: TenantId } | { readonly admin_username: string }
