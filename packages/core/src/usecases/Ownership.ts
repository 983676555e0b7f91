/** Tenant isolation in one place: another tenant's resource is indistinguishable from none. */
import { Effect } from "effect"
import type { TenantPrincipal } from "../domain/Principal.js"
import { NotFound } from "../Errors.js"

/**
 * A row of the caller's own state, or 404: a tenant's state holds only its own rows, so
 * another tenant's is not found there.
 */
export const found = <A>(row: A | undefined, what: string): Effect.Effect<A, NotFound> =>
  row === undefined ? Effect.fail(new NotFound({ detail: `${what} not found` })) : Effect.succeed(row)

/** Paths under `/tenants/{id}` that a tenant may use only for itself: any other id is 404. */
export const ownTenant = (caller: TenantPrincipal, tenantId: string): Effect.Effect<void, NotFound> =>
  caller.tenant_id === tenantId ? Effect.void : Effect.fail(new NotFound({ detail: `tenant ${tenantId} not found` }))
