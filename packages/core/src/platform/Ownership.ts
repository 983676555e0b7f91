/** Tenant isolation in one place: another tenant's resource is indistinguishable from none. */
import { Effect, Option } from "effect"
import { NotFound } from "../Errors.js"
import type { TenantPrincipal } from "./Principal.js"

export const ownedBy =
  <A extends { readonly tenant_id: string }>(caller: TenantPrincipal, what: string) =>
  (found: Option.Option<A>): Effect.Effect<A, NotFound> =>
    Option.isSome(found) && found.value.tenant_id === caller.tenant_id
      ? Effect.succeed(found.value)
      : Effect.fail(new NotFound({ detail: `${what} not found` }))
