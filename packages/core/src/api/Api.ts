/**
 * The whole HTTP contract, shared by the server (which implements it), the client (which is
 * derived from it) and the OpenAPI document (which is generated from it).
 */
import { HttpApi, OpenApi } from "@effect/platform"
import {
  InternalError,
  InvalidInput,
  LengthRequired,
  NotFound,
  PayloadTooLarge,
  ServiceUnavailable,
  UnsupportedMediaType
} from "../Errors.js"
import { DomainsApi, OperationsLogApi, ProviderConfigApi, ServiceTunnelsApi, TenantsApi } from "./AdminApi.js"
import { AdminIdentityApi, TenantIdentityApi } from "./IdentityApi.js"
import { SecurityRulesApi, SubnetsApi, VpcsApi } from "./NetworkApi.js"
import { SystemApi } from "./SystemApi.js"
import { PodsApi, RegistryCredentialsApi, TopologyApi, TunnelsApi } from "./WorkloadApi.js"

/**
 * The body failures (411, 413, 415) are declared for the whole API, so the client decodes them
 * wherever they come from, but only an operation that takes a body can meet them: the OpenAPI
 * document lists them there alone.
 */
type Operations = Record<string, Record<string, { requestBody?: unknown; responses?: Record<string, unknown> }>>

const bodyFailuresOnlyWithBodies = (spec: Record<string, unknown>): Record<string, unknown> => {
  for (const operations of Object.values(spec.paths as Operations)) {
    for (const operation of Object.values(operations)) {
      if (operation.requestBody !== undefined) continue
      for (const status of ["411", "413", "415"]) delete operation.responses?.[status]
    }
  }
  return spec
}

/** The version of this contract, reported by `GET /version`. */
export const API_VERSION = "2026-11-22"

export class TenetApi extends HttpApi.make("tenet")
  .add(SystemApi)
  .add(AdminIdentityApi)
  .add(TenantIdentityApi)
  .add(TenantsApi)
  .add(DomainsApi)
  .add(ProviderConfigApi)
  .add(ServiceTunnelsApi)
  .add(OperationsLogApi)
  .add(VpcsApi)
  .add(SubnetsApi)
  .add(SecurityRulesApi)
  .add(PodsApi)
  .add(TunnelsApi)
  .add(RegistryCredentialsApi)
  .add(TopologyApi)
  // Failures any request can meet, whatever its endpoint.
  .addError(InvalidInput.Wire)
  .addError(NotFound.Wire)
  .addError(LengthRequired.Wire)
  .addError(PayloadTooLarge.Wire)
  .addError(UnsupportedMediaType.Wire)
  .addError(InternalError.Wire)
  .addError(ServiceUnavailable.Wire)
  .annotate(OpenApi.Transform, bodyFailuresOnlyWithBodies)
  .annotate(OpenApi.Title, "Tenet")
  .annotate(OpenApi.Version, API_VERSION)
  .annotate(
    OpenApi.Description,
    "Multi-tenant cloud networking and workloads: tenants, VPCs, subnets, security rules, pods, " +
      "tunnels, registry credentials, custom domains, provider configuration and topology. " +
      "Every error is a JSON object with a `detail` field."
  )
{}
