/** Tenant isolation in one place: another tenant's resource is indistinguishable from none. */
import { Effect, Option } from "effect"
import type { TenantPrincipal } from "../domain/Principal.js"
import { NotFound } from "../Errors.js"

export const ownedBy =
  <A extends { readonly tenant_id: string }>(caller: TenantPrincipal, what: string) =>
  (found: Option.Option<A>): Effect.Effect<A, NotFound> =>
    Option.isSome(found) && found.value.tenant_id === caller.tenant_id
      ? Effect.succeed(found.value)
      : Effect.fail(new NotFound({ detail: `${what} not found` }))

/** The caller's own resource, if there is one: for lookups where absence is an answer. */
export const ownedOrNone =
  <A extends { readonly tenant_id: string }>(caller: TenantPrincipal) => (found: Option.Option<A>): Option.Option<A> =>
    Option.filter(found, (a) => a.tenant_id === caller.tenant_id)

/** Paths under `/tenants/{id}` that a tenant may use only for itself: any other id is 404. */
export const ownTenant = (caller: TenantPrincipal, tenantId: string): Effect.Effect<void, NotFound> =>
  caller.tenant_id === tenantId ? Effect.void : Effect.fail(new NotFound({ detail: `tenant ${tenantId} not found` }))
