/** The operations log: an append-only record of logins and logouts (spec section 5). */
import { Schema, Struct } from "effect"
import { intBetween, Timestamp } from "./Common.js"

export const OperationKind = Schema.Literal(
  "admin.login",
  "admin.logout",
  "admin.rotate_token",
  "tenant.login",
  "tenant.logout",
  "tenant.rotate_token"
).annotations({ identifier: "OperationKind" })
export type OperationKind = typeof OperationKind.Type

export const Outcome = Schema.Literal("success", "failure", "throttled").annotations({ identifier: "Outcome" })
export type Outcome = typeof Outcome.Type

export class OperationLogEntry extends Schema.Class<OperationLogEntry>("OperationLogEntry")({
  /** Monotonic sequence number; newer entries have larger ones. */
  seq: Schema.Int,
  at: Timestamp,
  kind: OperationKind,
  outcome: Outcome,
  /** The name the caller gave or acted as (admin username or tenant name). */
  principal: Schema.String,
  /** The tenant's id when the principal is a known tenant. */
  tenant_id: Schema.NullOr(Schema.String),
  /** The caller's address as the server saw it. */
  source_address: Schema.NullOr(Schema.String),
  /** Why a failure failed, or who acted on behalf of whom; never a secret. */
  detail: Schema.NullOr(Schema.String)
}) {}

/** An entry as appended: the log numbers it. */
export const NewOperation = Schema.Struct(Struct.omit(OperationLogEntry.fields, "seq"))
export interface NewOperation extends Schema.Schema.Type<typeof NewOperation> {}

export const OperationLogQuery = Schema.Struct({
  limit: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.compose(intBetween(1, 500))), { default: () => 50 }),
  before: Schema.optional(Schema.NumberFromString.pipe(Schema.compose(Schema.Int)))
})

/** A page of entries, newest first; pass `next_before` as `before` for the next page. */
export class OperationLogPage extends Schema.Class<OperationLogPage>("OperationLogPage")({
  entries: Schema.Array(OperationLogEntry),
  next_before: Schema.NullOr(Schema.Int)
}) {}
