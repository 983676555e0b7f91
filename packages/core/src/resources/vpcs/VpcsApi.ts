/** A VPC's endpoints: the kind's HTTP contract. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../../contract/Audited.js"
import * as Exports from "../../contract/Exports.js"
import { Payloads } from "../../contract/Payloads.js"
import { TenantAuth } from "../../contract/Security.js"
import * as Etag from "../../domain/Etag.js"
import { ExplainQuery, FlowExplanation } from "../../domain/FlowExplanation.js"
import { VpcId } from "../../domain/Ids.js"
import { PageQuery } from "../../domain/Page.js"
import { MAX_PAIRS, ReachabilityMatrix, ReachabilityQuery } from "../../domain/ReachabilityMatrix.js"
import { Vpc } from "../../domain/Vpc.js"
import { Conflict, Forbidden, GuardrailViolated, NotFound, PreconditionFailed, TooManyRequests } from "../../Errors.js"

export class VpcsApi extends HttpApiGroup.make("vpcs")
  .add(
    HttpApiEndpoint.post("create", "/vpcs")
      .annotate(Audited.Audited, Audited.made("vpc"))
      .setPayload(Payloads["vpcs.create"])
      .addSuccess(Vpc)
      .addError(GuardrailViolated.Wire)
      .addError(Conflict.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Create a VPC, seeded with the 'Allow internal traffic' rule")
  )
  .add(
    HttpApiEndpoint.get("list", "/vpcs")
      .setUrlParams(PageQuery)
      .addSuccess(Schema.Array(Vpc))
      .annotate(OpenApi.Summary, "The caller's VPCs")
  )
  .add(
    HttpApiEndpoint.del("delete", "/vpcs/:vpc_id")
      .annotate(Audited.Audited, Audited.path("vpc", "vpc_id"))
      .setPath(Schema.Struct({ vpc_id: VpcId }))
      .setHeaders(Etag.IfMatchHeaders)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound.Wire)
      .addError(GuardrailViolated.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(
        OpenApi.Summary,
        "Delete a VPC with its subnets, pods, tunnels and rules (204); 412 when If-Match is not its etag"
      )
  )
  .add(
    HttpApiEndpoint.get("reachability", "/vpcs/:vpc_id/reachability")
      .annotate(Exports.Formats, Exports.REACHABILITY)
      .setPath(Schema.Struct({ vpc_id: VpcId }))
      .setUrlParams(ReachabilityQuery)
      .addSuccess(ReachabilityMatrix)
      .addError(NotFound.Wire)
      .addError(TooManyRequests.Wire)
      .annotate(
        OpenApi.Summary,
        "For pairs of the VPC's subnets (its pods too, with detail=pods), the internet and your other VPCs: the " +
          "ports and protocols on which every flow is allowed end to end (the source's egress rules and the " +
          `destination's ingress rules); at most ${MAX_PAIRS} pairs a page, the next in the Link header`
      )
  )
  .add(
    HttpApiEndpoint.get("explain", "/vpcs/:vpc_id/explain")
      .setPath(Schema.Struct({ vpc_id: VpcId }))
      .setUrlParams(ExplainQuery)
      .addSuccess(FlowExplanation)
      .addError(NotFound.Wire)
      .addError(TooManyRequests.Wire)
      .annotate(
        OpenApi.Summary,
        "A flow from one endpoint to another (a pod, subnet or VPC id of yours, internet, or an IPv4 address; one " +
          "end in this VPC), end to end: the source's egress and the destination's ingress, each with what decides it"
      )
  )
  .middleware(TenantAuth)
  .annotate(OpenApi.Title, "VPCs")
{}
