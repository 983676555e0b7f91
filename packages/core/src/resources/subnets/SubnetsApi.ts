/** A subnet's endpoints: the kind's HTTP contract. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../../contract/Audited.js"
import { Payloads } from "../../contract/Payloads.js"
import { TenantAuth } from "../../contract/Security.js"
import { PageQuery } from "../../domain/Page.js"
import { Subnet } from "../../domain/Subnet.js"
import { Conflict, Forbidden, GuardrailViolated, NotFound } from "../../Errors.js"

export class SubnetsApi extends HttpApiGroup.make("subnets")
  .add(
    HttpApiEndpoint.post("create", "/subnets")
      .annotate(Audited.Audited, Audited.made("subnet"))
      .setPayload(Payloads["subnets.create"])
      .addSuccess(Subnet)
      .addError(NotFound.Wire)
      .addError(GuardrailViolated.Wire)
      .addError(Conflict.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Create a subnet in one of the caller's VPCs")
  )
  .add(
    HttpApiEndpoint.get("list", "/subnets")
      .setUrlParams(PageQuery)
      .addSuccess(Schema.Array(Subnet))
      .annotate(OpenApi.Summary, "The caller's subnets")
  )
  .middleware(TenantAuth)
  .annotate(OpenApi.Title, "Subnets")
{}
