/**
 * Creates of VPCs, subnets, pods and topologies repeat the caller's credentials in the body
 * (`token`, and `tenant_id`). The header stays the primary check; the body must name the same
 * tenant.
 */
import { Effect } from "effect"
import type { TenantId } from "../domain/Ids.js"
import type { TenantPrincipal } from "../domain/Principal.js"
import { Forbidden, Unauthorized } from "../Errors.js"
import type { ServiceUnavailable } from "../Errors.js"
import type { IdentityShape } from "./Identity.js"

export const check = (
  identity: IdentityShape,
  caller: TenantPrincipal,
  body: { readonly token: string; readonly tenant_id?: TenantId }
): Effect.Effect<void, Unauthorized | Forbidden | ServiceUnavailable> =>
  Effect.gen(function*() {
    const named = yield* identity.authenticateTenant(body.token).pipe(
      Effect.catchTag("Unauthorized", () => new Unauthorized({ detail: "token: not a valid tenant token" }))
    )
    if (named.tenant_id !== caller.tenant_id) {
      return yield* new Unauthorized({ detail: "token: names a different tenant than X-Auth-Token" })
    }
    if (body.tenant_id !== undefined && body.tenant_id !== caller.tenant_id) {
      return yield* new Forbidden({ detail: "tenant_id: must be the caller's own tenant id" })
    }
  })
