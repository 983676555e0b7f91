/** A registry credential's endpoints: the kind's HTTP contract. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../../contract/Audited.js"
import { Payloads } from "../../contract/Payloads.js"
import { TenantAuth } from "../../contract/Security.js"
import * as Etag from "../../domain/Etag.js"
import { TenantId } from "../../domain/Ids.js"
import { PageQuery } from "../../domain/Page.js"
import { RegistryCredential, RegistryCredentialPath } from "../../domain/RegistryCredential.js"
import { Conflict, NotFound, PreconditionFailed } from "../../Errors.js"

const TenantPath = Schema.Struct({ tenant_id: TenantId })

export class RegistryCredentialsApi extends HttpApiGroup.make("registryCredentials")
  .add(
    HttpApiEndpoint.post("create", "/tenants/:tenant_id/registry-credentials")
      .annotate(Audited.Audited, Audited.made("registry_credential"))
      .setPath(TenantPath)
      .setPayload(Payloads["registryCredentials.create"])
      .addSuccess(RegistryCredential)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .annotate(OpenApi.Summary, "Store a registry credential (the password is encrypted, never returned)")
  )
  .add(
    HttpApiEndpoint.get("list", "/tenants/:tenant_id/registry-credentials")
      .setUrlParams(PageQuery)
      .setPath(TenantPath)
      .addSuccess(Schema.Array(RegistryCredential))
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "The tenant's registry credentials, passwords hidden")
  )
  .add(
    HttpApiEndpoint.del("delete", "/tenants/:tenant_id/registry-credentials/:name")
      .annotate(Audited.Audited, Audited.path("registry_credential", "name"))
      .setPath(RegistryCredentialPath)
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(RegistryCredential)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(
        OpenApi.Summary,
        "Delete a credential by name; returns what was deleted; 412 when If-Match is not its etag"
      )
  )
  .middleware(TenantAuth)
  .annotate(OpenApi.Title, "Registry credentials")
{}
