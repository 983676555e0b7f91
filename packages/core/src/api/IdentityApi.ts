/** Login, logout and token rotation for admins and tenants (spec section 5). */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../contract/Audited.js"
import { Payloads } from "../contract/Payloads.js"
import { AdminAuth, AdminOrTenantAuth, TenantLogoutAuth } from "../contract/Security.js"
import { AdminSession } from "../domain/Admin.js"
import { TenantId } from "../domain/Ids.js"
import { TenantSession } from "../domain/Tenant.js"
import { Forbidden, NotFound, TooManyRequests, Unauthorized } from "../Errors.js"

export class AdminIdentityApi extends HttpApiGroup.make("adminIdentity")
  .add(
    HttpApiEndpoint.post("login", "/admin/login")
      .annotate(Audited.Audited, Audited.actor("admin"))
      .setPayload(Payloads["adminIdentity.login"])
      .addSuccess(AdminSession)
      .addError(Unauthorized.Wire)
      .addError(TooManyRequests.Wire)
      .annotate(OpenApi.Summary, "Admin login: returns the admin's current API token")
  )
  .add(
    HttpApiEndpoint.post("logout", "/admin/logout")
      .annotate(Audited.Audited, Audited.actor("admin"))
      .addSuccess(HttpApiSchema.NoContent)
      .middleware(AdminAuth)
      .annotate(OpenApi.Summary, "Admin logout: records the logout; with a sign-in session's token, ends that session")
  )
  .add(
    HttpApiEndpoint.post("rotateToken", "/admin/rotate-token")
      .annotate(Audited.Audited, Audited.actor("admin"))
      .addSuccess(AdminSession)
      .addError(Forbidden.Wire)
      .middleware(AdminAuth)
      .annotate(
        OpenApi.Summary,
        "Issue a new admin token; the old one and every sign-in session stop working at once (403 with a session's token)"
      )
  )
  .annotate(OpenApi.Title, "Admin authentication")
{}

export class TenantIdentityApi extends HttpApiGroup.make("tenantIdentity")
  .add(
    HttpApiEndpoint.post("login", "/tenants/login")
      .annotate(Audited.Audited, Audited.actor("tenant"))
      .setPayload(Payloads["tenantIdentity.login"])
      .addSuccess(TenantSession)
      .addError(Unauthorized.Wire)
      .addError(TooManyRequests.Wire)
      .annotate(OpenApi.Summary, "Tenant login: returns the tenant's id, name and current API token")
  )
  .add(
    HttpApiEndpoint.post("logout", "/tenants/logout")
      .annotate(Audited.Audited, Audited.actor("tenant"))
      .addSuccess(HttpApiSchema.NoContent)
      .middleware(TenantLogoutAuth)
      .annotate(
        OpenApi.Summary,
        "Tenant logout (header X-API-Token): records the logout; with a sign-in session's token, ends that session"
      )
  )
  .add(
    HttpApiEndpoint.post("rotateToken", "/tenants/:tenant_id/rotate-token")
      .annotate(Audited.Audited, Audited.path("tenant", "tenant_id"))
      .setPath(Schema.Struct({ tenant_id: TenantId }))
      .addSuccess(TenantSession)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .middleware(AdminOrTenantAuth)
      .annotate(
        OpenApi.Summary,
        "Issue a new tenant token (admin, or the tenant itself); the old one and every sign-in session stop working " +
          "at once (403 with a session's token)"
      )
  )
  .annotate(OpenApi.Title, "Tenant authentication")
{}
