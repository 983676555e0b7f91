/** A domain's endpoints (the administrator's): the kind's HTTP contract. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../../contract/Audited.js"
import { Payloads } from "../../contract/Payloads.js"
import { AdminAuth, AdminOrTenantAuth } from "../../contract/Security.js"
import { DomainRecord } from "../../domain/Domain.js"
import { TenantId } from "../../domain/Ids.js"
import { DomainName } from "../../domain/Net.js"
import { PageQuery } from "../../domain/Page.js"
import { Conflict, NotFound } from "../../Errors.js"

const TenantPath = Schema.Struct({ tenant_id: TenantId })

export class DomainsApi extends HttpApiGroup.make("domains")
  .add(
    HttpApiEndpoint.post("assign", "/tenants/:tenant_id/domains")
      .annotate(Audited.Audited, Audited.made("domain"))
      .setPath(TenantPath)
      .setPayload(Payloads["domains.assign"])
      .addSuccess(DomainRecord)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .middleware(AdminAuth)
      .annotate(OpenApi.Summary, "Assign a custom tunnel domain to a tenant; 409 when any tenant has it")
  )
  .add(
    HttpApiEndpoint.get("list", "/tenants/:tenant_id/domains")
      .setUrlParams(PageQuery)
      .setPath(TenantPath)
      .addSuccess(Schema.Array(DomainRecord))
      .addError(NotFound.Wire)
      .middleware(AdminOrTenantAuth)
      .annotate(
        OpenApi.Summary,
        "The tenant's domains, which its tunnels may use: the admin's view of any tenant, or a tenant's of its own " +
          "(another tenant's is 404)"
      )
  )
  .add(
    HttpApiEndpoint.del("remove", "/tenants/:tenant_id/domains/:domain")
      .annotate(Audited.Audited, Audited.path("domain", "domain"))
      .setPath(Schema.Struct({ tenant_id: TenantId, domain: DomainName }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound.Wire)
      .middleware(AdminAuth)
      .annotate(OpenApi.Summary, "Take a domain back from a tenant (204)")
  )
  .annotate(OpenApi.Title, "Domains")
{}
