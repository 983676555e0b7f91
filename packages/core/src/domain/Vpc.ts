/** Virtual private clouds. */
import { Schema } from "effect"
import { BodyTenantId, BodyToken, oncePerRecord, Timestamp, TRUSTED, wireExample } from "./Common.js"
import * as Etag from "./Etag.js"
import { TenantId, VpcId } from "./Ids.js"
import { DnsLabel } from "./Net.js"

export const VpcCreate = Schema.Struct({
  tenant_id: BodyTenantId,
  token: BodyToken,
  name: DnsLabel,
  enable_internet: Schema.Boolean
}).annotations({
  identifier: "VpcCreate",
  examples: wireExample({
    tenant_id: "2f9c6a1e-4b7d-4c3a-9e8f-1a2b3c4d5e6f",
    token: "{token}",
    name: "prod",
    enable_internet: true
  })
})
export type VpcCreate = typeof VpcCreate.Type

/**
 * Whether a delete is under way (`deleting`: committed before the cluster is asked, so a refused
 * delete touches nothing; a VPC being deleted has left enforcement, and no write goes into it).
 */
export const Lifecycle = Schema.Literal("active", "deleting")

/** What a user sees of a VPC. */
const VpcFields = {
  id: VpcId,
  tenant_id: TenantId,
  name: DnsLabel,
  enable_internet: Schema.Boolean,
  /** Whether the cluster runs what the store holds for this VPC (network and rules). */
  applied: Schema.Boolean,
  /** Why the last apply failed; the platform retries on a schedule. */
  apply_error: Schema.NullOr(Schema.String),
  /**
   * `deleting` from the moment a delete is accepted until the VPC is gone (seconds). Absent from
   * the answers of servers before it, so read as `active` there (a client beside a rolling update).
   */
  lifecycle: Schema.optionalWith(Lifecycle, { default: () => "active" as const }),
  created_at: Timestamp
}

/**
 * What the store keeps of a VPC: what a user sees, and since when a delete is under way and
 * which server marked it (`DeleteMark`; `ProcessIdentity.self`, null where it cannot be told).
 */
export const VpcRecord = Schema.Struct({
  ...VpcFields,
  deleting_since: Schema.NullOr(Timestamp),
  deleting_by: Schema.NullOr(Schema.String)
})
export interface VpcRecord extends Schema.Schema.Type<typeof VpcRecord> {}

export class Vpc extends Schema.Class<Vpc>("Vpc")({ ...VpcFields, etag: Etag.Field }) {}

/** The VPC's version: what it declares, not whether it is applied. */
export const etagOf = oncePerRecord((record: VpcRecord): string =>
  Etag.of(record, ["applied", "apply_error", "lifecycle", "deleting_since", "deleting_by"])
)

export const toVpc = oncePerRecord((record: VpcRecord): Vpc => {
  const { deleting_by: _by, deleting_since: _since, ...view } = record
  return Vpc.make({ ...view, etag: etagOf(record) }, TRUSTED)
})
