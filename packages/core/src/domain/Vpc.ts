/** Virtual private clouds. */
import { Schema } from "effect"
import { BodyTenantId, BodyToken, oncePerRecord, Timestamp, TRUSTED, wireExample } from "./Common.js"
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

/** What the store keeps of a VPC, which is also what a user sees. */
export const VpcRecord = Schema.Struct({
  id: VpcId,
  tenant_id: TenantId,
  name: DnsLabel,
  enable_internet: Schema.Boolean,
  /** Whether the cluster runs what the store holds for this VPC (network and rules). */
  applied: Schema.Boolean,
  /** Why the last apply failed; the platform retries on a schedule. */
  apply_error: Schema.NullOr(Schema.String),
  created_at: Timestamp
})
export interface VpcRecord extends Schema.Schema.Type<typeof VpcRecord> {}

export class Vpc extends Schema.Class<Vpc>("Vpc")(VpcRecord.fields) {}

export const toVpc = oncePerRecord((record: VpcRecord): Vpc => Vpc.make(record, TRUSTED))
