/** Custom tunnel domains an administrator assigns to a tenant. */
import type { DateTime } from "effect"
import { Schema } from "effect"
import { Timestamp, wireExample } from "./Common.js"
import { DomainId, TenantId } from "./Ids.js"
import { DomainName } from "./Net.js"

export const DomainCreate = Schema.Struct({ domain: DomainName }).annotations({
  identifier: "DomainCreate",
  examples: wireExample({ domain: "apps.acme.example" })
})

/** A domain assigned to one tenant. A domain belongs to at most one tenant at a time. */
export class DomainRecord extends Schema.Class<DomainRecord>("DomainRecord")({
  id: DomainId,
  tenant_id: TenantId,
  domain: DomainName,
  created_at: Timestamp
}) {}

export interface DomainRow {
  readonly id: DomainId
  readonly tenant_id: TenantId
  readonly domain: DomainName
  readonly created_at: DateTime.Utc
}
