/** Virtual private clouds. */
import { Schema } from "effect"
import { Timestamp } from "./Common.js"
import { TenantId, VpcId } from "./Ids.js"
import { DnsLabel } from "./Net.js"

export const VpcCreate = Schema.Struct({
  tenant_id: TenantId,
  token: Schema.String.annotations({
    description: "The tenant's API token; must name the same tenant as X-Auth-Token"
  }),
  name: DnsLabel,
  enable_internet: Schema.Boolean
}).annotations({ identifier: "VpcCreate" })
export type VpcCreate = typeof VpcCreate.Type

export class Vpc extends Schema.Class<Vpc>("Vpc")({
  id: VpcId,
  tenant_id: TenantId,
  name: DnsLabel,
  enable_internet: Schema.Boolean,
  created_at: Timestamp
}) {}
