/** Guardrails: a VPC's (the tenant's) and tenant-wide ones (the administrator's). */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../../contract/Audited.js"
import { Payloads } from "../../contract/Payloads.js"
import { AdminAuth, TenantAuth } from "../../contract/Security.js"
import * as Etag from "../../domain/Etag.js"
import { Guardrail } from "../../domain/Guardrail.js"
import { GuardrailId, TenantId, VpcId } from "../../domain/Ids.js"
import { PageQuery } from "../../domain/Page.js"
import { Conflict, Forbidden, GuardrailViolated, NotFound, PreconditionFailed, RuleValidation } from "../../Errors.js"

const VpcPath = Schema.Struct({ vpc_id: VpcId })
const TenantPath = Schema.Struct({ tenant_id: TenantId })

export class GuardrailsApi extends HttpApiGroup.make("guardrails")
  .add(
    HttpApiEndpoint.post("create", "/vpcs/:vpc_id/guardrails")
      .annotate(Audited.Audited, Audited.made("guardrail"))
      .setPath(VpcPath)
      .setPayload(Payloads["guardrails.create"])
      .addSuccess(Guardrail, { status: 201 })
      .addError(NotFound.Wire)
      .addError(GuardrailViolated.Wire)
      .addError(Conflict.Wire)
      .addError(RuleValidation.Wire)
      .annotate(
        OpenApi.Summary,
        "Require a verdict of every flow of a region of the VPC (201): any change that would break it is refused. " +
          "409 with the violations when the rules break it already; 409 at 50 guardrails"
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/vpcs/:vpc_id/guardrails")
      .setUrlParams(PageQuery)
      .setPath(VpcPath)
      .addSuccess(Schema.Array(Guardrail))
      .addError(NotFound.Wire)
      .annotate(
        OpenApi.Summary,
        "The guardrails that hold in the VPC: its own (scope vpc) and tenant-wide ones (scope tenant)"
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/guardrails/:guardrail_id")
      .annotate(Audited.Audited, Audited.path("guardrail", "guardrail_id"))
      .setPath(Schema.Struct({ guardrail_id: GuardrailId }))
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound.Wire)
      .addError(Forbidden.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(
        OpenApi.Summary,
        "Delete one of the VPC's guardrails (204); a tenant-wide one is the administrator's (403); 412 when If-Match " +
          "is not its etag"
      )
  )
  .middleware(TenantAuth)
  .annotate(OpenApi.Title, "Guardrails")
{}

export class TenantGuardrailsApi extends HttpApiGroup.make("tenantGuardrails")
  .add(
    HttpApiEndpoint.post("create", "/tenants/:tenant_id/guardrails")
      .annotate(Audited.Audited, Audited.made("guardrail"))
      .setPath(TenantPath)
      .setPayload(Payloads["tenantGuardrails.create"])
      .addSuccess(Guardrail, { status: 201 })
      .addError(NotFound.Wire)
      .addError(GuardrailViolated.Wire)
      .addError(Conflict.Wire)
      .addError(RuleValidation.Wire)
      .annotate(
        OpenApi.Summary,
        "A guardrail on every VPC of the tenant, now and future (201); the tenant reads it and cannot change it. " +
          "409 with the violations when a VPC's rules break it already"
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/tenants/:tenant_id/guardrails")
      .setUrlParams(PageQuery)
      .setPath(TenantPath)
      .addSuccess(Schema.Array(Guardrail))
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "The tenant's tenant-wide guardrails")
  )
  .add(
    HttpApiEndpoint.del("delete", "/tenants/:tenant_id/guardrails/:guardrail_id")
      .annotate(Audited.Audited, Audited.path("guardrail", "guardrail_id"))
      .setPath(Schema.Struct({ tenant_id: TenantId, guardrail_id: GuardrailId }))
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(OpenApi.Summary, "Delete a tenant-wide guardrail (204); 412 when If-Match is not its etag")
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Guardrails (admin)")
{}
