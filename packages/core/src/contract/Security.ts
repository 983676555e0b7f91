/**
 * Authentication as part of the contract: which header each kind of caller sends, and what
 * the server provides to handlers once it has checked it. The server implements these tags.
 */
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CurrentAdmin, CurrentPrincipal, CurrentTenant } from "../domain/Principal.js"
import { ServiceUnavailable, Unauthorized } from "../Errors.js"

const AuthFailure = Schema.Union(Unauthorized.Wire, ServiceUnavailable.Wire)

const adminToken = HttpApiSecurity.apiKey({ in: "header", key: "X-Admin-Token" }).pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "Admin API token from POST /admin/login")
)
const tenantToken = HttpApiSecurity.apiKey({ in: "header", key: "X-Auth-Token" }).pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "Tenant API token from POST /tenants/login")
)
const tenantLogoutToken = HttpApiSecurity.apiKey({ in: "header", key: "X-API-Token" }).pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "Tenant API token; the header the spec names for tenant logout")
)

/**
 * The headers that carry tokens, as `Headers` keys them (lower case): whoever records
 * requests (spans, logs) redacts them, the server and the client alike.
 */
export const TOKEN_HEADERS: ReadonlyArray<string> = [adminToken, tenantToken, tenantLogoutToken].map((security) =>
  security.key.toLowerCase()
)

/** `X-Admin-Token`: admin endpoints. */
export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("AdminAuth", {
  failure: AuthFailure,
  provides: CurrentAdmin,
  security: { adminToken }
}) {}

/** `X-Auth-Token`: tenant endpoints. */
export class TenantAuth extends HttpApiMiddleware.Tag<TenantAuth>()("TenantAuth", {
  failure: AuthFailure,
  provides: CurrentTenant,
  security: { tenantToken }
}) {}

/** `X-API-Token` (the spec's header for tenant logout), or `X-Auth-Token` as everywhere else. */
export class TenantLogoutAuth extends HttpApiMiddleware.Tag<TenantLogoutAuth>()("TenantLogoutAuth", {
  failure: AuthFailure,
  provides: CurrentTenant,
  security: { tenantLogoutToken, tenantToken }
}) {}

/** Either an admin (operator override) or a tenant: tenant token rotation. */
export class AdminOrTenantAuth extends HttpApiMiddleware.Tag<AdminOrTenantAuth>()("AdminOrTenantAuth", {
  failure: AuthFailure,
  provides: CurrentPrincipal,
  security: { adminToken, tenantToken }
}) {}
