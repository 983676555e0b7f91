/** Tenant workloads: pods, tunnels, registry credentials and topology. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Etag from "../domain/Etag.js"
import { PodId, TenantId, TunnelId } from "../domain/Ids.js"
import { PageQuery } from "../domain/Page.js"
import { Pod, PodRestart } from "../domain/Pod.js"
import { RegistryCredential, RegistryCredentialPath } from "../domain/RegistryCredential.js"
import { DryRunQuery } from "../domain/SecurityRule.js"
import { TopologyImpact, TopologyView } from "../domain/Topology.js"
import { Tunnel, TunnelListQuery } from "../domain/Tunnel.js"
import { Conflict, Forbidden, GuardrailViolated, NotFound, PreconditionFailed, TooManyRequests } from "../Errors.js"
import * as Audited from "./Audited.js"
import { Payloads } from "./Payloads.js"
import { TenantAuth } from "./Security.js"

const PodPath = Schema.Struct({ pod_id: PodId })

export class PodsApi extends HttpApiGroup.make("pods")
  .add(
    HttpApiEndpoint.post("create", "/pods")
      .annotate(Audited.Audited, Audited.made("pod"))
      .setPayload(Payloads["pods.create"])
      .addSuccess(Pod)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Create a pod with its virtual-IP service and inline tunnels")
  )
  .add(
    HttpApiEndpoint.get("list", "/pods")
      .setUrlParams(PageQuery)
      .addSuccess(Schema.Array(Pod))
      .annotate(OpenApi.Summary, "The caller's pods with status")
  )
  .add(
    HttpApiEndpoint.del("delete", "/pods/:pod_id")
      .annotate(Audited.Audited, Audited.path("pod", "pod_id"))
      .setPath(PodPath)
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound.Wire)
      .addError(GuardrailViolated.Wire)
      .addError(Conflict.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(OpenApi.Summary, "Delete a pod with its service and tunnels (204); 412 when If-Match is not its etag")
  )
  .add(
    HttpApiEndpoint.post("addReplica", "/pods/:pod_id/replicas")
      .annotate(Audited.Audited, Audited.path("pod", "pod_id"))
      .setPath(PodPath)
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(Pod)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(
        OpenApi.Summary,
        "One more replica (at most 10); 409 while autoscaling; 412 when If-Match is not its etag"
      )
  )
  .add(
    HttpApiEndpoint.del("removeReplica", "/pods/:pod_id/replicas")
      .annotate(Audited.Audited, Audited.path("pod", "pod_id"))
      .setPath(PodPath)
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(Pod)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(
        OpenApi.Summary,
        "One replica fewer (at least 1); 409 while autoscaling; 412 when If-Match is not its etag"
      )
  )
  .add(
    HttpApiEndpoint.post("restart", "/pods/:pod_id/restart")
      .annotate(Audited.Audited, Audited.path("pod", "pod_id"))
      .setPath(PodPath)
      .addSuccess(PodRestart)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .annotate(OpenApi.Summary, "Restart the pod's replicas")
  )
  .add(
    HttpApiEndpoint.patch("configure", "/pods/:pod_id/config")
      .annotate(Audited.Audited, Audited.path("pod", "pod_id"))
      .setPath(PodPath)
      .setPayload(Payloads["pods.configure"])
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(Pod)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(
        OpenApi.Summary,
        "Change configuration and recreate the workload; 409 when stopped or being deleted; 412 when If-Match is not " +
          "its etag"
      )
  )
  .middleware(TenantAuth)
  .annotate(OpenApi.Title, "Pods")
{}

export class TunnelsApi extends HttpApiGroup.make("tunnels")
  .add(
    HttpApiEndpoint.post("createForPod", "/pods/:pod_id/tunnel")
      .annotate(Audited.Audited, Audited.made("tunnel"))
      .setPath(PodPath)
      .setPayload(Payloads["tunnels.createForPod"])
      .addSuccess(Tunnel, { status: 201 })
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Expose a pod port at <subdomain>.<domain> (201)")
  )
  .add(
    HttpApiEndpoint.post("create", "/tunnels")
      .annotate(Audited.Audited, Audited.made("tunnel"))
      .setUrlParams(TunnelListQuery)
      .setPayload(Payloads["tunnels.create"])
      .addSuccess(Tunnel)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Create a tunnel whose name and defaults are derived from the pod")
  )
  .add(
    HttpApiEndpoint.get("listForPod", "/pods/:pod_id/tunnels")
      .setUrlParams(PageQuery)
      .setPath(PodPath)
      .addSuccess(Schema.Array(Tunnel))
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "The pod's tunnels")
  )
  .add(
    HttpApiEndpoint.get("list", "/tunnels")
      .setUrlParams(PageQuery)
      .addSuccess(Schema.Array(Tunnel))
      .annotate(OpenApi.Summary, "The caller's tunnels")
  )
  .add(
    HttpApiEndpoint.del("delete", "/tunnels/:tunnel_id")
      .annotate(Audited.Audited, Audited.path("tunnel", "tunnel_id"))
      .setPath(Schema.Struct({ tunnel_id: TunnelId }))
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(OpenApi.Summary, "Delete a tunnel (204); 412 when If-Match is not its etag")
  )
  .middleware(TenantAuth)
  .annotate(OpenApi.Title, "Tunnels")
{}

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
