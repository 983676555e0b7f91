/** A pod's endpoints: the kind's HTTP contract. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../../contract/Audited.js"
import { Payloads } from "../../contract/Payloads.js"
import { TenantAuth } from "../../contract/Security.js"
import * as Etag from "../../domain/Etag.js"
import { PodId } from "../../domain/Ids.js"
import { PageQuery } from "../../domain/Page.js"
import { Pod, PodRestart } from "../../domain/Pod.js"
import { Conflict, Forbidden, GuardrailViolated, NotFound, PreconditionFailed } from "../../Errors.js"

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
