/**
 * Who is calling: decided once per request by the contract's authentication (contract/Security.ts),
 * provided to handlers, read by use-cases.
 */
import { Context } from "effect"
import type { TenantId } from "./Ids.js"
import type { DnsLabel } from "./Net.js"

export interface AdminPrincipal {
  readonly _tag: "Admin"
  readonly username: string
  /** Authenticated by a sign-in session's token, not the API token (which it may not rotate). */
  readonly session?: true
}

export interface TenantPrincipal {
  readonly _tag: "Tenant"
  readonly tenant_id: TenantId
  readonly name: DnsLabel
  /** Authenticated by a sign-in session's token, not the API token (which it may not rotate). */
  readonly session?: true
}

export type Principal = AdminPrincipal | TenantPrincipal

export class CurrentAdmin extends Context.Tag("@tenet/core/CurrentAdmin")<CurrentAdmin, AdminPrincipal>() {}

export class CurrentTenant extends Context.Tag("@tenet/core/CurrentTenant")<CurrentTenant, TenantPrincipal>() {}

/** Either kind of caller, for endpoints both may call (tenant token rotation). */
export class CurrentPrincipal extends Context.Tag("@tenet/core/CurrentPrincipal")<CurrentPrincipal, Principal>() {}

/** Facts about the request that use-cases record (the operations log's source address). */
export interface RequestOrigin {
  readonly source_address: string | null
}
