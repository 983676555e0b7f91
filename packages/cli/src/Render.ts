/** What the commands print: plans as diffs, verdicts and reachability as text. Pure. */
import type { FlowExplanation, Guardrail, ReachabilityMatrix, SecurityRule } from "@tenet/core"
import { Declaration } from "@tenet/core"

type Rule = SecurityRule.SecurityRule
type Names = ReadonlyMap<string, string>

const named = (names: Names, id: string) => names.get(id) ?? id

/** `allow ingress tcp 443 from 0.0.0.0/0 to subnet web, priority 100`. */
export const describeRule = (r: Rule, names: Names): string => {
  const remote = r.remote_type === "cidr" ? r.remote_cidr! : `VPC ${named(names, r.remote_vpc_id!)}`
  const target = r.target_type === "subnet"
    ? ` at subnet ${named(names, r.target_subnet_id!)}`
    : r.target_type === "pods"
    ? ` at pods ${(r.target_pod_ids ?? []).map((id) => named(names, id)).join(", ")}`
    : ""
  return `${r.action} ${r.direction} ${r.protocol}${r.ports === null ? "" : ` ${r.ports}`} ${
    r.direction === "ingress" ? "from" : "to"
  } ${remote}${target}, priority ${r.priority}${r.enabled ? "" : ", disabled"}`
}

const shown = (value: unknown) =>
  value === null ? "null" : Array.isArray(value) ? `[${value.join(", ")}]` : String(value)

/** The fields an update changes: `ports 22 -> 22,2222`. */
export const changedFields = (before: Rule, after: Rule): Array<string> =>
  Declaration.FIELDS.filter((f) => shown(before[f]) !== shown(after[f])).map((f) =>
    `${f} ${shown(before[f])} -> ${shown(after[f])}`
  )

const decider = (d: SecurityRule.FlowVerdict["decided_by"]) => d.kind === "rule" ? `'${d.name}'` : d.key

const region = (r: SecurityRule.ImpactRegion, names: Names) => {
  const local = [
    ...r.local.subnet_ids.map((id) => `subnet ${named(names, id)}`),
    ...r.local.pod_ids.map((id) => `pod ${named(names, id)}`),
    ...(r.local.outside_subnets ? ["addresses in no subnet"] : [])
  ].join(", ")
  return `${r.direction} ${r.protocol}${r.ports === null ? "" : ` ${r.ports}`} ${
    r.direction === "ingress" ? "from" : "to"
  } ${r.remote_cidrs.join(", ")} at ${local}: ${r.before.action} by ${
    decider(r.before.decided_by)
  } -> ${r.after.action} by ${decider(r.after.decided_by)}`
}

const flowText = (f: typeof SecurityRule.WitnessFlow.Type, names: Names) => {
  const at = f.local.pod_id !== null
    ? `pod ${named(names, f.local.pod_id)}`
    : f.local.subnet_id !== null
    ? `subnet ${named(names, f.local.subnet_id)}`
    : "an address in no subnet"
  return `${f.protocol}${f.port === null ? "" : ` ${f.port}`} ${
    f.direction === "ingress" ? "from" : "to"
  } ${f.remote_ip} ${f.direction === "ingress" ? "to" : "from"} ${at}`
}

/** A guardrail a change breaks, in words. */
export const violation = (v: SecurityRule.GuardrailViolation, names: Names) =>
  `'${v.name}' in VPC ${named(names, v.vpc_id)}: ${flowText(v.flow, names)} would be decided by ${
    decider(v.decided_by)
  }`

/** A plan (or what an apply did) as a diff against the rules as they were. */
export const plan = (
  vpc: string,
  answer: SecurityRule.RulesPlan | SecurityRule.RulesReplaced,
  before: ReadonlyArray<Rule>,
  names: Names
): string => {
  const was = new Map(before.map((r) => [r.id as string, r]))
  const lines = [
    `${answer.dry_run ? "Plan for" : "Applied to"} VPC ${vpc} (rules at ${answer.etag}${answer.dry_run ? "" : " now"}):`
  ]
  for (const r of answer.created) lines.push(`  + create '${r.name}': ${describeRule(r, names)}`)
  for (const r of answer.updated) {
    const old = was.get(r.id)
    lines.push(
      `  ~ update '${r.name}': ${old === undefined ? describeRule(r, names) : changedFields(old, r).join("; ")}`
    )
  }
  for (const id of answer.deleted) {
    const old = was.get(id)
    lines.push(`  - delete '${old?.name ?? id}'${old === undefined ? "" : `: ${describeRule(old, names)}`}`)
  }
  if (answer.unchanged.length > 0) lines.push(`    ${answer.unchanged.length} unchanged`)
  if (answer.dry_run) {
    const { impact } = answer
    if (impact.opened.length + impact.closed.length + impact.new_findings.length > 0) lines.push("", "Impact:")
    for (const r of impact.opened) lines.push(`  opens   ${region(r, names)}`)
    for (const r of impact.closed) lines.push(`  closes  ${region(r, names)}`)
    for (const f of impact.new_findings) lines.push(`  finding ${f.kind} '${named(names, f.rule_id)}': ${f.message}`)
    if (impact.violations.length > 0) {
      lines.push("", "Guardrails it would break (apply will be refused):")
      for (const v of impact.violations) lines.push(`  ${violation(v, names)}`)
    }
  }
  const counts =
    `${answer.created.length} to create, ${answer.updated.length} to update, ${answer.deleted.length} to delete`
  lines.push(
    "",
    answer.dry_run
      ? answer.created.length + answer.updated.length + answer.deleted.length === 0
        ? "No changes: the rules are as declared."
        : `Plan: ${counts}.`
      : `Applied: ${answer.created.length} created, ${answer.updated.length} updated, ${answer.deleted.length} deleted; ${
        answer.applied ? "in force" : `not yet in force (${answer.apply_error})`
      }.`
  )
  return lines.join("\n")
}

const endpoint = (e: FlowExplanation.ExplainEndpoint) =>
  e.kind === "internet"
    ? "the internet"
    : e.kind === "address"
    ? e.ip
    : `${e.kind} ${e.name}`

/** An explained flow: the verdict end to end, then each half. */
export const explanation = (x: FlowExplanation.FlowExplanation, names: Names) => {
  const half = (label: string, h: FlowExplanation.ExplainedHalf | null) =>
    h === null
      ? `  ${label}  (outside your VPCs)`
      : `  ${label}  VPC ${named(names, h.vpc_id)}: ${h.action} by ${decider(h.decided_by)} (e.g. ${
        flowText(h.flow, names)
      })`
  return [
    `${x.protocol}${x.port === null ? "" : ` ${x.port}`} from ${endpoint(x.from)} to ${endpoint(x.to)}: ${
      x.allowed ? "ALLOWED" : "DENIED"
    }`,
    half("egress ", x.egress),
    half("ingress", x.ingress)
  ].join("\n")
}

const pairEnd = (e: ReachabilityMatrix.ReachabilityEndpoint) =>
  e.kind === "internet" ? "internet" : `${e.kind} ${e.name}`

/** Reachability as a table. */
export const reachability = (m: ReachabilityMatrix.ReachabilityMatrix) => {
  const rows = [
    ["FROM", "TO", "TCP", "UDP", "ICMP"],
    ...m.pairs.map((p) => [
      pairEnd(p.from),
      pairEnd(p.to),
      p.tcp === "" ? "-" : p.tcp,
      p.udp === "" ? "-" : p.udp,
      p.icmp ? "yes" : "-"
    ])
  ]
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n")
}

/** A VPC's guardrails, one per line. */
export const guardrails = (list: ReadonlyArray<Guardrail.Guardrail>, names: Names) =>
  list.length === 0
    ? "No guardrails."
    : list.map((g) =>
      `${g.scope === "tenant" ? "[tenant] " : ""}'${g.name}': ${g.require} ${g.direction} ${g.protocol}${
        g.ports === null ? "" : ` ${g.ports}`
      } ${g.direction === "ingress" ? "from" : "to"} ${g.remote_cidr}${
        g.local === null
          ? ""
          : ` at ${
            [
              ...g.local.subnet_ids.map((id) => `subnet ${named(names, id)}`),
              ...g.local.pod_ids.map((id) => `pod ${named(names, id)}`)
            ].join(", ")
          }`
      }`
    ).join("\n")
