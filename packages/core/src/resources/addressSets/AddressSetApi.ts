/** Address sets: a tenant's named lists of networks. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../../contract/Audited.js"
import { Payloads } from "../../contract/Payloads.js"
import { TenantAuth } from "../../contract/Security.js"
import { AddressSet, AddressSetChanged, AddressSetPlan, AddressSetUsage } from "../../domain/AddressSet.js"
import * as Etag from "../../domain/Etag.js"
import { AddressSetId } from "../../domain/Ids.js"
import { PageQuery } from "../../domain/Page.js"
import { DryRunQuery } from "../../domain/SecurityRule.js"
import { Conflict, GuardrailViolated, NotFound, PreconditionFailed } from "../../Errors.js"

const AddressSetPath = Schema.Struct({ address_set_id: AddressSetId })

export class AddressSetsApi extends HttpApiGroup.make("addressSets")
  .add(
    HttpApiEndpoint.post("create", "/address-sets")
      .annotate(Audited.Audited, Audited.made("address_set"))
      .setPayload(Payloads["addressSets.create"])
      .addSuccess(AddressSet, { status: 201 })
      .addError(Conflict.Wire)
      .annotate(
        OpenApi.Summary,
        "A named list of IPv4 networks (201): at most 256 entries, host bits cleared, each network once; 409 when " +
          "the tenant has a set of that name or 100 sets"
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/address-sets")
      .setUrlParams(PageQuery)
      .addSuccess(Schema.Array(AddressSet))
      .annotate(OpenApi.Summary, "The tenant's address sets, oldest first")
  )
  .add(
    HttpApiEndpoint.get("get", "/address-sets/:address_set_id")
      .setPath(AddressSetPath)
      .addSuccess(AddressSet)
      .addError(NotFound.Wire)
      .annotate(
        OpenApi.Summary,
        "One address set; the ETag header is its version, for If-Match on PATCH and DELETE; 404 when missing or " +
          "another tenant's"
      )
  )
  .add(
    HttpApiEndpoint.get("usage", "/address-sets/:address_set_id/rules")
      .setPath(AddressSetPath)
      .addSuccess(AddressSetUsage)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Every rule whose remote is the set, in any VPC: where an edit of it takes effect")
  )
  .add(
    HttpApiEndpoint.patch("update", "/address-sets/:address_set_id")
      .annotate(Audited.Audited, Audited.path("address_set", "address_set_id"))
      .setPath(AddressSetPath)
      .setPayload(Payloads["addressSets.update"])
      .setUrlParams(DryRunQuery)
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(AddressSetChanged)
      .addSuccess(AddressSetPlan)
      .addError(GuardrailViolated.Wire)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(
        OpenApi.Summary,
        "Change the description and/or the entries (the whole list, replaced) in one change with every VPC whose " +
          "rules name the set; the set answered with applied (every one of them in force with it) and apply_error " +
          "(each not yet, and why); 409 when it would break a guardrail in any of them; 412 when If-Match is not the " +
          "set's ETag (the answer's ETag is the new one). dry_run=true: the edit's impact in each of those VPCs"
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/address-sets/:address_set_id")
      .annotate(Audited.Audited, Audited.path("address_set", "address_set_id"))
      .setPath(AddressSetPath)
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(Conflict.Wire)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(
        OpenApi.Summary,
        "Delete an address set (204); 409 while any rule names it (the rules named); 412 when If-Match is not its ETag"
      )
  )
  .middleware(TenantAuth)
  .annotate(OpenApi.Title, "Address sets")
{}
