/**
 * The audit trail: who changed what, when, through which request, and how it ended. An
 * extension of the spec's operations log (which records logins and logouts): one entry per
 * request to an endpoint that changes something, written in the store in the same transaction
 * as the change. Entries hold names and ids, never a secret.
 */
import { Schema, Struct } from "effect"
import { intBetween, stringBetween, Timestamp } from "./Common.js"

/**
 * Who made the change: the admin, a tenant, or the cluster (`actor` is the field manager that
 * changed Tenet's objects behind its back, or `unknown` for a delete, as the controller found it).
 */
export const ActorType = Schema.Literal("admin", "tenant", "cluster").annotations({ identifier: "AuditActorType" })
export type ActorType = typeof ActorType.Type

/** What a change was made to: the resource kinds of the API, and the platform-wide configuration. */
export const ResourceKind = Schema.Literal(
  "admin",
  "tenant",
  "domain",
  "provider_config",
  "service_tunnel",
  "vpc",
  "subnet",
  "security_rule",
  "guardrail",
  "address_set",
  "pod",
  "tunnel",
  "registry_credential",
  "topology"
).annotations({ identifier: "AuditResourceKind" })
export type ResourceKind = typeof ResourceKind.Type

/** Where an action's resource id comes from: an endpoint's `Audited` annotation (`contract/Audited`). */
export type Subject =
  /** A parameter of the request's path. */
  | { readonly kind: ResourceKind; readonly from: "path"; readonly param: string }
  /** The change the request commits: what it makes or the resource it is about (the pipeline names it). */
  | { readonly kind: ResourceKind; readonly from: "change" }
  /** The caller itself (logins, logouts, the admin's rotation). */
  | { readonly kind: ResourceKind; readonly from: "actor" }
  /** Nothing with an id (the provider configuration). */
  | { readonly kind: ResourceKind; readonly from: "none" }

export class AuditEntry extends Schema.Class<AuditEntry>("AuditEntry")({
  /** Monotonic sequence number; newer entries have larger ones. */
  seq: Schema.Int,
  at: Timestamp,
  /** The request's id (its `X-Request-Id`), which its log lines carry too. */
  request_id: Schema.String,
  actor_type: ActorType,
  /** The admin's username, the tenant's name, or the cluster's field manager. */
  actor: Schema.String,
  /** The tenant the change belongs to (the acting tenant, or the one an admin acted on); null for the platform's own. */
  tenant_id: Schema.NullOr(Schema.String),
  /** The contract's endpoint, `group.endpoint` (e.g. `vpcs.create`); `cluster.drift` for drift the controller found. */
  action: Schema.String,
  resource_kind: ResourceKind,
  /** The resource's id (a domain and a registry credential: its name); null where there is none. */
  resource_id: Schema.NullOr(Schema.String),
  /** `success`, or the contract error the change was refused with (e.g. `Conflict`, `NotFound`). */
  outcome: Schema.String
}) {}

/** An entry as appended: the store numbers it. */
export const NewAuditEntry = Schema.Struct(Struct.omit(AuditEntry.fields, "seq"))
export interface NewAuditEntry extends Schema.Schema.Type<typeof NewAuditEntry> {}

const filters = {
  /** Entries at or after this instant. */
  since: Schema.optional(Timestamp),
  /** Entries before this instant. */
  until: Schema.optional(Timestamp),
  resource_kind: Schema.optional(ResourceKind),
  resource_id: Schema.optional(stringBetween(0, 255)),
  action: Schema.optional(stringBetween(0, 64)),
  limit: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.compose(intBetween(1, 500))), { default: () => 50 }),
  before: Schema.optional(Schema.NumberFromString.pipe(Schema.compose(Schema.Int)))
}

/** A tenant's trail: its own entries, filtered. */
// Query schemas carry no identifier: the OpenAPI document would list a reference, not the parameters.
export const TenantAuditQuery = Schema.Struct(filters)

/** The whole trail, for the admin: optionally one tenant's. */
export const AuditQuery = Schema.Struct({
  ...filters,
  tenant_id: Schema.optional(stringBetween(0, 64))
})
export type AuditQuery = typeof AuditQuery.Type

/** What the store filters by; every field narrows. */
export interface AuditFilter {
  readonly tenant_id?: string | undefined
  readonly since?: AuditQuery["since"]
  readonly until?: AuditQuery["until"]
  readonly resource_kind?: ResourceKind | undefined
  readonly resource_id?: string | undefined
  readonly action?: string | undefined
  readonly limit: number
  readonly before?: number | undefined
}

/** A page of entries, newest first; pass `next_before` as `before` for the next page. */
export class AuditPage extends Schema.Class<AuditPage>("AuditPage")({
  entries: Schema.Array(AuditEntry),
  next_before: Schema.NullOr(Schema.Int)
}) {}

/** Whether `entry` passes every filter of `filter` (but the page's `before` and `limit`). */
export const matches = (filter: AuditFilter) => (entry: NewAuditEntry): boolean =>
  (filter.tenant_id === undefined || entry.tenant_id === filter.tenant_id) &&
  (filter.since === undefined || entry.at.epochMillis >= filter.since.epochMillis) &&
  (filter.until === undefined || entry.at.epochMillis < filter.until.epochMillis) &&
  (filter.resource_kind === undefined || entry.resource_kind === filter.resource_kind) &&
  (filter.resource_id === undefined || entry.resource_id === filter.resource_id) &&
  (filter.action === undefined || entry.action === filter.action)
