/** A tunnel's endpoints: the kind's HTTP contract. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../../contract/Audited.js"
import { Payloads } from "../../contract/Payloads.js"
import { TenantAuth } from "../../contract/Security.js"
import * as Etag from "../../domain/Etag.js"
import { PodId, TunnelId } from "../../domain/Ids.js"
import { PageQuery } from "../../domain/Page.js"
import { Tunnel, TunnelListQuery } from "../../domain/Tunnel.js"
import { Conflict, Forbidden, NotFound, PreconditionFailed } from "../../Errors.js"

const PodPath = Schema.Struct({ pod_id: PodId })

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
