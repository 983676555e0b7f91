/**
 * How a VPC's rules read in the API: a rule with its status, the rule list, a finding in words,
 * and a change's impact as regions of flows it opens and closes. Pure.
 */
import { TRUSTED } from "../../domain/Common.js"
import type { PodId, SubnetId, VpcId } from "../../domain/Ids.js"
import * as Net from "../../domain/Net.js"
import * as PortRanges from "../../domain/PortRanges.js"
import type { GuardrailViolation, SecurityRuleRecord } from "../../domain/SecurityRule.js"
import { ImpactRegion, IMPLIED_RULES, RuleFinding, RuleImpact, RuleList, viewOf } from "../../domain/SecurityRule.js"
import type { VpcRecord } from "../../domain/Vpc.js"
import * as Analysis from "../../rules/Analysis.js"
import * as Carriage from "../../rules/Carriage.js"
import type * as Evaluate from "../../rules/Evaluate.js"
import * as Impact from "../../rules/Impact.js"
import type * as Paths from "../../rules/Paths.js"
import * as Reach from "../../rules/Reach.js"
import * as RuleSet from "../../rules/RuleSet.js"

const describeFlow = (flow: RuleSet.Flow) =>
  `${flow.protocol}${flow.port === null ? "" : ` port ${flow.port}`} ${flow.direction === "ingress" ? "from" : "to"} ${
    flow.remote.kind === "ip" ? Net.formatIpv4(flow.remote.ip) : flow.remote.vpc_id
  }`

/** A finding in words, naming the rules involved. */
export const explain = (finding: Analysis.Finding, names: ReadonlyMap<string, string>): string => {
  const related = finding.related_rule_ids.map((id) => `'${names.get(id)}'`).join(", ")
  switch (finding.kind) {
    case "shadowed":
      return related === ""
        ? "never matches: all of its traffic is core-network traffic, which is always allowed"
        : `never matches: earlier rules ${related} (and the core network) cover all of its traffic`
    case "redundant":
      return `removing it changes no verdict: its traffic (e.g. ${
        describeFlow(finding.witness!)
      }) is decided the same way by ${
        related === "" ? "the implied default" : `later rules ${related} or the implied default`
      }`
    case "conflict":
      return `earlier rules ${related} with the opposite action take part of its traffic; it still decides e.g. ${
        describeFlow(finding.witness!)
      }`
  }
}

/** A finding as the API states it. */
export const findingOf = (f: Analysis.Finding, names: ReadonlyMap<string, string>) =>
  RuleFinding.make({
    kind: f.kind,
    rule_id: f.rule_id,
    related_rule_ids: f.related_rule_ids,
    message: explain(f, names)
  })

const decisionOf = (verdict: Evaluate.Verdict, names: ReadonlyMap<string, string>) => ({
  action: verdict.action,
  decided_by: verdict.decided_by.kind === "rule"
    ? { kind: "rule" as const, rule_id: verdict.decided_by.rule_id, name: names.get(verdict.decided_by.rule_id)! }
    : verdict.decided_by
})

/** Port intervals as the API writes them (`80,8000-8080`). */
const formatPorts = (intervals: ReadonlyArray<readonly [number, number]>) =>
  PortRanges.format(intervals.map(([from, to]) => ({ from, to })))

/** A change's flows that one path decision holds: what stops them before the change and after it (null: a path carries them). */
interface Routed {
  readonly change: Impact.Change
  readonly route: { readonly before: Paths.Blocked | null; readonly after: Paths.Blocked | null }
}

/** Each change split into parts a path carries whole or not at all, before (`context`) and after (`grownTo`). */
const routed = (
  changes: ReadonlyArray<Impact.Change>,
  context: RuleSet.VpcContext,
  grownTo: RuleSet.VpcContext
): Array<Routed> =>
  changes.flatMap((change) =>
    Carriage.split(grownTo, change.direction, change.box).flatMap((after) =>
      Carriage.split(context, change.direction, after.box).map((before) => ({
        change: { ...change, box: before.box },
        route: { before: before.blocked, after: after.blocked }
      }))
    )
  )

/**
 * The flows a change flips, as regions: the changes that differ only in their remote addresses
 * are one region, whose addresses are their union (so `0.0.0.0/0` minus a VPC's blocks is one
 * region, `0.0.0.0/0 except ...`, not one per gap), while the same path decides them.
 */
const regionsOf = (changes: ReadonlyArray<Routed>, names: ReadonlyMap<string, string>) => {
  const merged = new Map<string, { routed: Routed; remotes: Array<readonly [number, number]> }>()
  for (const one of changes) {
    const change = one.change
    const key = JSON.stringify([
      change.direction,
      change.box.protocol,
      change.box.ports,
      [...change.box.locals].sort(),
      change.before,
      change.after,
      one.route
    ])
    const found = merged.get(key)
    if (found === undefined) merged.set(key, { routed: one, remotes: [change.box.remote] })
    else found.remotes.push(change.box.remote)
  }
  return [...merged.values()].map(({ remotes, routed: { change, route } }) => {
    const ranges = Reach.union([], remotes)
    const atoms = [...change.box.locals]
    const after = (prefix: string) =>
      atoms.filter((a) => a.startsWith(prefix)).map((a) => a.slice(prefix.length)).sort()
    return ImpactRegion.make({
      direction: change.direction,
      protocol: change.box.protocol,
      ports: change.box.protocol === "icmp" ? null : formatPorts([change.box.ports]),
      remote_cidrs: ranges.flatMap(([first, last]) => Net.cidrsOfRange(first, last)).map(Net.formatCidr),
      remote_summary: Net.describeRanges(ranges),
      local: {
        pod_ids: after("pod:") as Array<PodId>,
        subnet_ids: after("subnet:") as Array<SubnetId>,
        outside_subnets: change.box.locals.has(Analysis.ELSEWHERE)
      },
      before: decisionOf(change.before, names),
      after: decisionOf(change.after, names),
      route
    })
  })
}

/**
 * What changing the VPC's rules from `before` to `after` does: the flows it flips, the
 * findings it brings, the guardrails it would break (`violations`); `grownTo` is the VPC's
 * context after a change that also adds to it.
 */
export const impactOf = (
  vpcId: VpcId,
  context: RuleSet.VpcContext,
  before: ReadonlyArray<SecurityRuleRecord>,
  after: ReadonlyArray<SecurityRuleRecord>,
  violations: ReadonlyArray<GuardrailViolation>,
  grownTo: RuleSet.VpcContext = context
): RuleImpact => {
  const names = new Map([...before, ...after].map((r) => [r.id as string, r.name]))
  const then = before.map(RuleSet.fromRecord)
  const now = after.map(RuleSet.fromRecord)
  const regions = regionsOf(routed(Impact.diff(then, now, context, grownTo), context, grownTo), names)
  const known = new Set(Analysis.analyze(then, context).map((f) => `${f.kind}:${f.rule_id}`))
  return RuleImpact.make({
    dry_run: true,
    vpc_id: vpcId,
    opened: regions.filter((r) => r.after.action === "allow"),
    closed: regions.filter((r) => r.after.action === "deny"),
    new_findings: Analysis.analyze(now, grownTo)
      .filter((f) => !known.has(`${f.kind}:${f.rule_id}`))
      .map((f) => findingOf(f, names)),
    violations
  })
}

export const view = (rule: SecurityRuleRecord, context: RuleSet.VpcContext) =>
  viewOf(rule, RuleSet.statusOf(RuleSet.fromRecord(rule), context))

/** A VPC's rules in evaluation order, with their statuses in `context`. */
export const ruleList = (vpc: VpcRecord, rules: ReadonlyArray<SecurityRuleRecord>, context: RuleSet.VpcContext) => {
  const byId = new Map(rules.map((r) => [r.id, r]))
  return RuleList.make({
    vpc_id: vpc.id,
    rules: RuleSet.sort(rules.map(RuleSet.fromRecord)).map((r) => view(byId.get(r.id)!, context)),
    implied: IMPLIED_RULES,
    applied: vpc.applied,
    apply_error: vpc.apply_error
  }, TRUSTED)
}
