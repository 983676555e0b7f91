/** Tenant workloads: pods, tunnels and registry credentials (each its kind's group, `resources/<kind>/`), and topology. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../contract/Audited.js"
import { Payloads } from "../contract/Payloads.js"
import { TenantAuth } from "../contract/Security.js"
import { TenantId } from "../domain/Ids.js"
import { DryRunQuery } from "../domain/SecurityRule.js"
import { TopologyImpact, TopologyView } from "../domain/Topology.js"
import { Conflict, Forbidden, GuardrailViolated, NotFound, TooManyRequests } from "../Errors.js"

export { PodsApi } from "../resources/pods/PodsApi.js"
export { RegistryCredentialsApi } from "../resources/registryCredentials/RegistryCredentialsApi.js"
export { TunnelsApi } from "../resources/tunnels/TunnelsApi.js"

const TenantPath = Schema.Struct({ tenant_id: TenantId })

export class TopologyApi extends HttpApiGroup.make("topology")
  .add(
    HttpApiEndpoint.post("deploy", "/tenants/:tenant_id/topology")
      .annotate(Audited.Audited, Audited.path("topology", "tenant_id"))
      .setPath(TenantPath)
      .setPayload(Payloads["topology.deploy"])
      .setUrlParams(DryRunQuery)
      .addSuccess(TopologyView)
      .addSuccess(TopologyImpact)
      .addError(NotFound.Wire)
      .addError(GuardrailViolated.Wire)
      .addError(Conflict.Wire)
      .addError(Forbidden.Wire)
      .addError(TooManyRequests.Wire)
      .annotate(OpenApi.Summary, "Deploy VPCs, subnets and pods by name in one all-or-nothing request")
  )
  .add(
    HttpApiEndpoint.get("get", "/tenants/:tenant_id/topology")
      .setPath(TenantPath)
      .addSuccess(TopologyView)
      .addError(NotFound.Wire)
      .addError(TooManyRequests.Wire)
      .annotate(OpenApi.Summary, "The tenant's VPCs with their subnets, pods and tunnels")
  )
  .middleware(TenantAuth)
  .annotate(OpenApi.Title, "Topology")
{}
