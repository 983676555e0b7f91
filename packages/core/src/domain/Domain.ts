/** Custom tunnel domains an administrator assigns to a tenant. */
import { Schema } from "effect"
import { Timestamp, wireExample } from "./Common.js"
import { DomainId, TenantId } from "./Ids.js"
import { DomainName } from "./Net.js"

export const DomainCreate = Schema.Struct({ domain: DomainName }).annotations({
  identifier: "DomainCreate",
  examples: wireExample({ domain: "apps.acme.example" })
})

/**
 * A domain assigned to one tenant; a domain belongs to at most one tenant at a time. The store
 * keeps what a user sees (the spec's "domain record").
 */
export const DomainRecord = Schema.Struct({
  id: DomainId,
  tenant_id: TenantId,
  domain: DomainName,
  created_at: Timestamp
}).annotations({ identifier: "DomainRecord" })
export interface DomainRecord extends Schema.Schema.Type<typeof DomainRecord> {}
