/** The contract's authentication middlewares, implemented with the Identity use-case. */
import { Audit, Errors, Identity, Security } from "@tenet/core"
import type { Principal } from "@tenet/core"
import { Effect, Layer, Redacted } from "effect"

const token = (value: Redacted.Redacted<string>) => Redacted.value(value).trim()

/** The authenticated caller, named for the request's audit entry too. */
const noted = <P extends Principal.Principal, E>(authenticated: Effect.Effect<P, E>) =>
  Effect.tap(authenticated, Audit.noteActor)

export const AdminAuthLive = Layer.effect(
  Security.AdminAuth,
  Effect.map(
    Identity.Identity,
    (identity) => Security.AdminAuth.of({ adminToken: (value) => noted(identity.authenticateAdmin(token(value))) })
  )
)

export const TenantAuthLive = Layer.effect(
  Security.TenantAuth,
  Effect.map(
    Identity.Identity,
    (identity) => Security.TenantAuth.of({ tenantToken: (value) => noted(identity.authenticateTenant(token(value))) })
  )
)

export const TenantLogoutAuthLive = Layer.effect(
  Security.TenantLogoutAuth,
  Effect.map(Identity.Identity, (identity) =>
    Security.TenantLogoutAuth.of({
      tenantLogoutToken: (value) => noted(identity.authenticateTenant(token(value))),
      tenantToken: (value) =>
        token(value) === ""
          ? Effect.fail(new Errors.Unauthorized({ detail: "missing X-API-Token header" }))
          : noted(identity.authenticateTenant(token(value)))
    }))
)

export const AdminOrTenantAuthLive = Layer.effect(
  Security.AdminOrTenantAuth,
  Effect.map(Identity.Identity, (identity) =>
    Security.AdminOrTenantAuth.of({
      adminToken: (value) =>
        noted(Effect.map(identity.authenticateAdmin(token(value)), (admin): Principal.Principal => admin)),
      // Tried when the admin token is missing or wrong: the tenant's own token.
      tenantToken: (value) =>
        token(value) === ""
          ? Effect.fail(new Errors.Unauthorized({ detail: "send a valid X-Admin-Token or X-Auth-Token header" }))
          : noted(identity.authenticateTenant(token(value)))
    }))
)

export const layer = Layer.mergeAll(AdminAuthLive, TenantAuthLive, TenantLogoutAuthLive, AdminOrTenantAuthLive)
