/**
 * The audit trail (an extension of the spec's operations log): every change, who made it,
 * through which request, and how it ended. The admin reads everyone's; a tenant its own.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AdminAuth, AdminOrTenantAuth } from "../contract/Security.js"
import { AuditPage, AuditQuery, TenantAuditQuery } from "../domain/AuditLog.js"
import { TenantId } from "../domain/Ids.js"
import { NotFound } from "../Errors.js"

export class AuditLogApi extends HttpApiGroup.make("auditLog")
  .add(
    HttpApiEndpoint.get("list", "/audit-log")
      .setUrlParams(AuditQuery)
      .addSuccess(AuditPage)
      .middleware(AdminAuth)
      .annotate(
        OpenApi.Summary,
        "Every change by anyone (admin): filter by tenant, time, resource kind and id, action; newest first, paginated"
      )
  )
  .add(
    HttpApiEndpoint.get("listForTenant", "/tenants/:tenant_id/audit-log")
      .setPath(Schema.Struct({ tenant_id: TenantId }))
      .setUrlParams(TenantAuditQuery)
      .addSuccess(AuditPage)
      .addError(NotFound.Wire)
      .middleware(AdminOrTenantAuth)
      .annotate(
        OpenApi.Summary,
        "The changes to a tenant's resources, by it or by the admin (the admin, or the tenant itself); newest first, paginated"
      )
  )
  .annotate(OpenApi.Title, "Audit trail")
  .annotate(
    OpenApi.Description,
    "One entry per request that changes something (create, update, delete, rotate, login, logout), written in the " +
      "same transaction as the change: who (admin or tenant, by name), what (action, resource kind and id), the " +
      "request id, the time and the outcome (`success`, or the error a refused change got). Never a secret."
  )
{}
