/** Admin endpoints: tenants, domains (the kind's group, `resources/domains/`), provider configuration, service tunnels, operations log. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../contract/Audited.js"
import { Payloads } from "../contract/Payloads.js"
import { AdminAuth, AdminOrTenantAuth } from "../contract/Security.js"
import * as Etag from "../domain/Etag.js"
import { ServiceTunnelId, TenantId } from "../domain/Ids.js"
import { OperationLogPage, OperationLogQuery } from "../domain/OperationLog.js"
import { PageQuery } from "../domain/Page.js"
import { ProviderConfig } from "../domain/ProviderConfig.js"
import { TenantQuotas } from "../domain/Quota.js"
import { ServiceTunnel } from "../domain/ServiceTunnel.js"
import { Tenant, TenantDetail } from "../domain/Tenant.js"
import { Conflict, NotFound, PreconditionFailed } from "../Errors.js"

export { DomainsApi } from "../resources/domains/DomainsApi.js"

const TenantPath = Schema.Struct({ tenant_id: TenantId })

export class TenantsApi extends HttpApiGroup.make("tenants")
  .add(
    HttpApiEndpoint.post("create", "/tenants")
      .annotate(Audited.Audited, Audited.made("tenant"))
      .setPayload(Payloads["tenants.create"])
      .addSuccess(Tenant, { status: 201 })
      .addError(Conflict.Wire)
      .annotate(OpenApi.Summary, "Create a tenant (201); 409 when the name is taken")
  )
  .add(
    HttpApiEndpoint.get("list", "/tenants")
      .setUrlParams(PageQuery)
      .addSuccess(Schema.Array(Tenant))
      .annotate(OpenApi.Summary, "List tenants, oldest first")
  )
  .add(
    HttpApiEndpoint.get("get", "/tenants/:tenant_id")
      .setPath(TenantPath)
      .addSuccess(TenantDetail)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "A tenant with its VPCs, pods (with status) and tunnels")
  )
  .add(
    HttpApiEndpoint.del("delete", "/tenants/:tenant_id")
      .annotate(Audited.Audited, Audited.path("tenant", "tenant_id"))
      .setPath(TenantPath)
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(
        OpenApi.Summary,
        "Delete a tenant and everything it owns (204); 412 when If-Match is not its etag (a token or password rotated since)"
      )
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Tenants (admin)")
{}

export class QuotasApi extends HttpApiGroup.make("quotas")
  .add(
    HttpApiEndpoint.get("get", "/tenants/:tenant_id/quotas")
      .setPath(TenantPath)
      .addSuccess(TenantQuotas)
      .addError(NotFound.Wire)
      .middleware(AdminOrTenantAuth)
      .annotate(
        OpenApi.Summary,
        "A tenant's quotas (the admin, or the tenant itself): each limit, how much of it is used, and whether it is " +
          "the server's default"
      )
  )
  .add(
    HttpApiEndpoint.put("set", "/tenants/:tenant_id/quotas")
      .annotate(Audited.Audited, Audited.path("tenant", "tenant_id"))
      .setPath(TenantPath)
      .setPayload(Payloads["quotas.set"])
      .addSuccess(TenantQuotas)
      .addError(NotFound.Wire)
      .middleware(AdminAuth)
      .annotate(
        OpenApi.Summary,
        "Set a tenant's quotas (null: the server's default); a quota below what the tenant has only refuses its next " +
          "create"
      )
  )
  .annotate(OpenApi.Title, "Quotas")
{}

export class ProviderConfigApi extends HttpApiGroup.make("providerConfig")
  .add(
    HttpApiEndpoint.post("put", "/provider-config")
      .annotate(Audited.Audited, Audited.unnamed("provider_config"))
      .setPayload(Payloads["providerConfig.put"])
      .addSuccess(ProviderConfig)
      .annotate(
        OpenApi.Summary,
        "Create or replace the provider configuration; an omitted edge_api_token keeps the stored one"
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/provider-config")
      .addSuccess(ProviderConfig)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "The provider configuration (the API token is never returned); 404 until set")
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Provider configuration (admin)")
{}

export class ServiceTunnelsApi extends HttpApiGroup.make("serviceTunnels")
  .add(
    HttpApiEndpoint.post("create", "/service-tunnels")
      .annotate(Audited.Audited, Audited.made("service_tunnel"))
      .setPayload(Payloads["serviceTunnels.create"])
      .addSuccess(ServiceTunnel, { status: 201 })
      .addError(Conflict.Wire)
      .annotate(
        OpenApi.Summary,
        "Expose a platform service (by default this API) at <subdomain>.<domain> through the tunnel provider"
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/service-tunnels")
      .setUrlParams(PageQuery)
      .addSuccess(Schema.Array(ServiceTunnel))
      .annotate(OpenApi.Summary, "Platform service tunnels")
  )
  .add(
    HttpApiEndpoint.del("delete", "/service-tunnels/:service_tunnel_id")
      .annotate(Audited.Audited, Audited.path("service_tunnel", "service_tunnel_id"))
      .setPath(Schema.Struct({ service_tunnel_id: ServiceTunnelId }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .annotate(OpenApi.Summary, "Withdraw a service tunnel at the provider and delete it (204)")
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Platform service tunnels (admin)")
{}

export class OperationsLogApi extends HttpApiGroup.make("operationsLog")
  .add(
    HttpApiEndpoint.get("list", "/operations-log")
      .setUrlParams(OperationLogQuery)
      .addSuccess(OperationLogPage)
      .annotate(OpenApi.Summary, "Logins, failed logins, logouts and token rotations, newest first, paginated")
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Operations log (admin)")
{}
