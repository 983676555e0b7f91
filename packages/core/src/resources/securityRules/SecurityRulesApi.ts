/** A security rule's endpoints: the kind's HTTP contract. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Audited from "../../contract/Audited.js"
import * as Exports from "../../contract/Exports.js"
import { Payloads } from "../../contract/Payloads.js"
import { TenantAuth } from "../../contract/Security.js"
import { FlowVerdict } from "../../domain/FlowReach.js"
import { SecurityRuleId, VpcId } from "../../domain/Ids.js"
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
} from "../../domain/SecurityRule.js"
import {
  Conflict,
  GuardrailViolated,
  NotFound,
  PreconditionFailed,
  RuleValidation,
  TooManyRequests
} from "../../Errors.js"

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
