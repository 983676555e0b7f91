/**
 * `evaluate`: would this flow be allowed, and what decided it? The first enforced rule (in
 * evaluation order) that matches decides; beneath the rules, core network traffic is always
 * allowed, other ingress denied and all egress allowed.
 */
import type { SecurityRuleId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { ImpliedRuleKey, RuleAction } from "../domain/SecurityRule.js"
import type { Flow, Rule, VpcContext } from "./Engine.js"
import { enforced } from "./Engine.js"
import { includes } from "./Ports.js"

export type DecidedBy =
  | { readonly kind: "rule"; readonly rule_id: SecurityRuleId }
  | { readonly kind: "implied"; readonly key: ImpliedRuleKey }

export interface Verdict {
  readonly action: RuleAction
  readonly decided_by: DecidedBy
}

const implied = (key: ImpliedRuleKey, action: RuleAction): Verdict => ({ action, decided_by: { kind: "implied", key } })

/** The subnet of the flow's local end, when it has one. */
const localSubnet = (flow: Flow, context: VpcContext) =>
  flow.local.pod_id !== undefined ? context.pods.get(flow.local.pod_id) : flow.local.subnet_id

const remoteMatches = (rule: Rule, flow: Flow, context: VpcContext): boolean => {
  const remote = flow.remote
  if (rule.remote.kind === "cidr") {
    const cidr = rule.remote.cidr
    if (remote.kind === "ip") return Net.contains(cidr, remote.ip)
    // A VPC is inside a range when every one of its blocks is.
    const blocks = context.vpcs.get(remote.vpc_id) ?? []
    return blocks.length > 0 && blocks.every((b) => b.prefix >= cidr.prefix && Net.contains(cidr, Net.networkOf(b)))
  }
  if (remote.kind === "vpc") return remote.vpc_id === rule.remote.vpc_id
  return (context.vpcs.get(rule.remote.vpc_id) ?? []).some((b) => Net.contains(b, remote.ip))
}

const targetMatches = (rule: Rule, flow: Flow, context: VpcContext): boolean => {
  switch (rule.target.kind) {
    case "vpc":
      return true
    case "subnet":
      return localSubnet(flow, context) === rule.target.subnet_id
    case "pods":
      return flow.local.pod_id !== undefined && rule.target.pod_ids.includes(flow.local.pod_id)
  }
}

/** Whether one rule matches the flow (ignoring whether it is enforced). */
export const matches = (rule: Rule, flow: Flow, context: VpcContext): boolean =>
  rule.direction === flow.direction &&
  (rule.protocol === "all" || rule.protocol === flow.protocol) &&
  (rule.ports === null || (flow.port !== null && includes(rule.ports, flow.port))) &&
  remoteMatches(rule, flow, context) &&
  targetMatches(rule, flow, context)

/** Traffic to or from the core network, which no rule can block. */
export const isInfrastructure = (flow: Flow, context: VpcContext): boolean =>
  flow.remote.kind === "ip" && context.infrastructure.some((c) => Net.contains(c, (flow.remote as { ip: number }).ip))

/** Beneath every rule. */
export const fallback = (flow: Flow): Verdict =>
  flow.direction === "egress" ? implied("implied-allow-egress", "allow") : implied("implied-deny-ingress", "deny")

export const evaluate = (rules: ReadonlyArray<Rule>, context: VpcContext, flow: Flow): Verdict => {
  if (isInfrastructure(flow, context)) return implied("implied-allow-infrastructure", "allow")
  const decisive = enforced(rules, context).find((rule) => matches(rule, flow, context))
  return decisive === undefined
    ? fallback(flow)
    : { action: decisive.action, decided_by: { kind: "rule", rule_id: decisive.id } }
}
