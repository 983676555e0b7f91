/**
 * Idempotency keys: a client names a write with an `Idempotency-Key` header so that it can
 * send it again after a lost answer (a timeout, a 503, a dropped connection) without the
 * write happening twice. What a key made is recorded in the same transaction as the write.
 */
import { Duration, Schema } from "effect"
import { Timestamp } from "./Common.js"

/** How long a key is remembered: a repeat after this is a new request. */
export const RETENTION = Duration.hours(24)

/** Keys are 1 to 255 visible ASCII characters (a UUID is the usual choice). */
export const KEY = /^[\x21-\x7e]{1,255}$/

/** Who a key belongs to: keys of different scopes never meet. */
export type Scope = string

/** The scope of the admin's keys; a tenant's scope is its id. */
export const ADMIN_SCOPE: Scope = "admin"

export const IdempotencyKeyRecord = Schema.Struct({
  scope: Schema.String,
  key: Schema.String,
  /** A keyed digest of the request (method, path, body): a repeat must match it. */
  fingerprint: Schema.String,
  /** What the request made or changed, so that a repeat can answer with it. */
  resource_id: Schema.String,
  created_at: Timestamp
})
export interface IdempotencyKeyRecord extends Schema.Schema.Type<typeof IdempotencyKeyRecord> {}
