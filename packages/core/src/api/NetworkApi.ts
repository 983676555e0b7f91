/** Tenant networking: VPCs, subnets and security rules. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Etag from "../domain/Etag.js"
import { ExplainQuery, FlowExplanation } from "../domain/FlowExplanation.js"
import { FlowVerdict } from "../domain/FlowReach.js"
import { SecurityRuleId, VpcId } from "../domain/Ids.js"
import { PageQuery } from "../domain/Page.js"
import { MAX_PAIRS, ReachabilityMatrix, ReachabilityQuery } from "../domain/ReachabilityMatrix.js"
import {
  DryRunQuery,
  IfMatchHeaders,
  RuleAnalysis,
  RuleIfMatchHeaders,
  RuleImpact,
  RuleList,
  RuleListQuery,
  RuleMutation,
  RulePageQuery,
  RuleRemoval,
  RulesPlan,
  RulesReplaced,
  SecurityRule
} from "../domain/SecurityRule.js"
import { Subnet } from "../domain/Subnet.js"
import { Vpc } from "../domain/Vpc.js"
import {
  Conflict,
  Forbidden,
  GuardrailViolated,
  NotFound,
  PreconditionFailed,
  RuleValidation,
  TooManyRequests
} from "../Errors.js"
import * as Audited from "./Audited.js"
import * as Exports from "./Exports.js"
import { Payloads } from "./Payloads.js"
import { TenantAuth } from "./Security.js"

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

const RulePath = Schema.Struct({ rule_id: SecurityRuleId })

export class SecurityRulesApi extends HttpApiGroup.make("securityRules")
  .add(
    HttpApiEndpoint.get("list", "/security-rules")
      .annotate(Exports.Formats, Exports.RULE_LIST)
      .setUrlParams(RulePageQuery)
      .addSuccess(RuleList)
      .addError(NotFound.Wire)
      .annotate(
        OpenApi.Summary,
        "A VPC's rules in evaluation order, with the implied rules and apply state; the ETag header is the rules' " +
          "version, for If-Match on PUT /vpcs/{vpc_id}/security-rules"
      )
  )
  .add(
    HttpApiEndpoint.get("analysis", "/security-rules/analysis")
      .annotate(Exports.Formats, Exports.ANALYSIS)
      .setUrlParams(RuleListQuery)
      .addSuccess(RuleAnalysis)
      .addError(NotFound.Wire)
      .addError(TooManyRequests.Wire)
      .annotate(OpenApi.Summary, "Shadowed, redundant and conflicting rules, computed exactly")
  )
  .add(
    HttpApiEndpoint.get("get", "/security-rules/:rule_id")
      .setPath(RulePath)
      .addSuccess(SecurityRule)
      .addError(NotFound.Wire)
      .annotate(
        OpenApi.Summary,
        "One rule; the ETag header is its version, for If-Match on PATCH and DELETE; 404 when missing or another tenant's"
      )
  )
  .add(
    HttpApiEndpoint.post("create", "/security-rules")
      .annotate(Audited.Audited, Audited.made("security_rule"))
      .setPayload(Payloads["securityRules.create"])
      .setUrlParams(DryRunQuery)
      .addSuccess(RuleMutation, { status: 201 })
      .addSuccess(RuleImpact)
      .addError(GuardrailViolated.Wire)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .addError(RuleValidation.Wire)
      .annotate(
        OpenApi.Summary,
        "Create a rule (201); 409 when the VPC already has 200 rules, or when it names a VPC whose blocks overlap this one's (the rule would peer them). dry_run=true: 200 with the traffic it would open and close"
      )
  )
  .add(
    HttpApiEndpoint.patch("update", "/security-rules/:rule_id")
      .annotate(Audited.Audited, Audited.path("security_rule", "rule_id"))
      .setPath(RulePath)
      .setPayload(Payloads["securityRules.update"])
      .setUrlParams(DryRunQuery)
      .setHeaders(RuleIfMatchHeaders)
      .addSuccess(RuleMutation)
      .addSuccess(RuleImpact)
      .addError(GuardrailViolated.Wire)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .addError(PreconditionFailed.Wire)
      .addError(RuleValidation.Wire)
      .annotate(
        OpenApi.Summary,
        "Change the fields present; vpc_id cannot change; 412 when If-Match is not the rule's ETag (the answer's ETag " +
          "is the new one); 409 when it would peer two VPCs whose blocks overlap. dry_run=true: the change's impact"
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/security-rules/:rule_id")
      .annotate(Audited.Audited, Audited.path("security_rule", "rule_id"))
      .setPath(RulePath)
      .setUrlParams(DryRunQuery)
      .setHeaders(RuleIfMatchHeaders)
      .addSuccess(RuleRemoval)
      .addSuccess(RuleImpact)
      .addError(GuardrailViolated.Wire)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .addError(RuleValidation.Wire)
      .annotate(
        OpenApi.Summary,
        "Delete a rule: 200 with rule null and the apply state; 412 when If-Match is not the rule's ETag. " +
          "dry_run=true: the deletion's impact"
      )
  )
  .add(
    HttpApiEndpoint.post("reorder", "/security-rules/reorder")
      .annotate(Audited.Audited, Audited.made("vpc"))
      .setPayload(Payloads["securityRules.reorder"])
      .setUrlParams(DryRunQuery)
      .addSuccess(RuleList)
      .addSuccess(RuleImpact)
      .addError(GuardrailViolated.Wire)
      .addError(NotFound.Wire)
      .addError(RuleValidation.Wire)
      .annotate(OpenApi.Summary, "Re-issue priorities 10, 20, 30, ... in the given order of every rule")
  )
  .add(
    HttpApiEndpoint.put("replace", "/vpcs/:vpc_id/security-rules")
      .annotate(Audited.Audited, Audited.made("security_rule"))
      .setPath(Schema.Struct({ vpc_id: VpcId }))
      .setPayload(Payloads["securityRules.replace"])
      .setUrlParams(DryRunQuery)
      .setHeaders(IfMatchHeaders)
      .addSuccess(RulesReplaced)
      .addSuccess(RulesPlan)
      .addError(GuardrailViolated.Wire)
      .addError(NotFound.Wire)
      .addError(Conflict.Wire)
      .addError(PreconditionFailed.Wire)
      .addError(RuleValidation.Wire)
      .annotate(
        OpenApi.Summary,
        "Declare the VPC's whole policy: its rules become exactly the list (created, updated in place, deleted) in " +
          "one change, applied once. Items match existing rules by id, else by name. 422 names every invalid or " +
          "ambiguous item; 409 when the end state exceeds 200 rules; 412 when If-Match is not the rules' ETag. " +
          "dry_run=true: the plan and its impact"
      )
  )
  .add(
    HttpApiEndpoint.post("evaluate", "/security-rules/evaluate")
      .setPayload(Payloads["securityRules.evaluate"])
      .addSuccess(FlowVerdict)
      .addError(NotFound.Wire)
      .addError(RuleValidation.Wire)
      .annotate(OpenApi.Summary, "Would this flow be allowed, and by which rule?")
  )
  .middleware(TenantAuth)
  .annotate(OpenApi.Title, "Security rules")
{}
