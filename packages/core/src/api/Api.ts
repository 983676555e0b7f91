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
  .annotate(OpenApi.Title, "Tenet")
  .annotate(OpenApi.Version, API_VERSION)
  .annotate(
    OpenApi.Description,
    "Multi-tenant cloud networking and workloads: tenants, VPCs, subnets, security rules, pods, " +
      "tunnels, registry credentials, custom domains, provider configuration and topology. " +
      "Every error is a JSON object with a `detail` field."
  )
{}
