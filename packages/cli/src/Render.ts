/** What the commands print: plans as diffs, verdicts and reachability as text. Pure. */
import type { AddressSet, FlowExplanation, FlowReach, Guardrail, ReachabilityMatrix, SecurityRule } from "@tenet/core"
import { Declaration } from "@tenet/core"

type Rule = SecurityRule.SecurityRule
type Names = ReadonlyMap<string, string>

const named = (names: Names, id: string) => names.get(id) ?? id

const VPC_BY_ID = /\bVPC ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/i

/**
 * The API's words with each VPC they name by id named as plans name it (`the rules of VPC prod
 * changed`), where `names` has it.
 */
export const vpcsNamed = (text: string, names: Names): string =>
  text.replace(
    new RegExp(VPC_BY_ID.source, "gi"),
    (whole, id: string) => names.has(id) ? `VPC ${names.get(id)}` : whole
  )

/** Whether the API's words name a VPC by id. */
export const namesVpcById = (text: string): boolean => VPC_BY_ID.test(text)

/** `allow ingress tcp 443 from 0.0.0.0/0 to subnet web, priority 100`. */
export const describeRule = (r: Rule, names: Names): string => {
  const remote = r.remote_type === "cidr"
    ? r.remote_cidr!
    : r.remote_type === "vpc"
    ? `VPC ${named(names, r.remote_vpc_id!)}`
    : `set ${named(names, r.remote_address_set_id!)}`
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

const decider = (d: typeof SecurityRule.DecidedBy.Type) => d.kind === "rule" ? `'${d.name}'` : d.key

const region = (r: SecurityRule.ImpactRegion, names: Names) => {
  const local = [
    ...r.local.subnet_ids.map((id) => `subnet ${named(names, id)}`),
    ...r.local.pod_ids.map((id) => `pod ${named(names, id)}`),
    ...(r.local.outside_subnets ? ["addresses in no subnet"] : [])
  ].join(", ")
  return `${r.direction} ${r.protocol}${r.ports === null ? "" : ` ${r.ports}`} ${
    r.direction === "ingress" ? "from" : "to"
  } ${r.remote_summary} at ${local}: ${r.before.action} by ${decider(r.before.decided_by)} -> ${r.after.action} by ${
    decider(r.after.decided_by)
  }${unrouted(r)}`
}

/**
 * What no path carries of a region, where it matters: what a change opens that no route carries
 * after it (no packet uses it yet), what it closes that none carried before (none used it).
 */
const unrouted = (r: SecurityRule.ImpactRegion) => {
  const blocked = r.after.action === "allow" ? r.route.after : r.route.before
  return blocked === null ? "" : ` (no path ${r.after.action === "allow" ? "after" : "before"}: ${blocked.detail})`
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
  }${v.route === null ? "" : ` (no path carries it today: ${v.route.detail})`}`

/** A VPC's impact, indented under its heading: what opens and closes, new findings, guardrails broken. */
const impactLines = (impact: SecurityRule.RuleImpact, names: Names): Array<string> => [
  ...impact.opened.map((r) => `  opens   ${region(r, names)}`),
  ...impact.closed.map((r) => `  closes  ${region(r, names)}`),
  ...impact.new_findings.map((f) => `  finding ${f.kind} '${named(names, f.rule_id)}': ${f.message}`)
]

type Entry = AddressSet.AddressSet["entries"][number]

const entryText = (e: Entry) => e.description === null ? e.cidr : `${e.cidr} (${e.description})`

/** What a set's edit does to its entries: added, removed, and those whose note changes. */
export const entriesDiff = (before: ReadonlyArray<Entry>, after: ReadonlyArray<Entry>): Array<string> => {
  const was = new Map(before.map((e) => [e.cidr as string, e]))
  const now = new Map(after.map((e) => [e.cidr as string, e]))
  return [
    ...after.filter((e) => !was.has(e.cidr)).map((e) => `  + ${entryText(e)}`),
    ...before.filter((e) => !now.has(e.cidr)).map((e) => `  - ${entryText(e)}`),
    ...after.filter((e) => was.has(e.cidr) && was.get(e.cidr)!.description !== e.description).map((e) =>
      `  ~ ${e.cidr}: ${was.get(e.cidr)!.description ?? "no note"} -> ${e.description ?? "no note"}`
    )
  ]
}

/** Whether a set's edit changes it. */
export const setChanges = (before: AddressSet.AddressSet, after: AddressSet.AddressSet) =>
  before.description !== after.description || entriesDiff(before.entries, after.entries).length > 0

/** A set's plan: its entries' diff, then the edit's impact in each VPC using the set. */
export const setPlan = (current: AddressSet.AddressSet, planned: AddressSet.AddressSetPlan, names: Names): string => {
  const lines = [`Plan for address set ${current.name} (at ${current.etag}):`]
  if (current.description !== planned.address_set.description) {
    lines.push(`  ~ description: ${current.description ?? "none"} -> ${planned.address_set.description ?? "none"}`)
  }
  lines.push(...entriesDiff(current.entries, planned.address_set.entries))
  for (const impact of planned.vpcs) {
    const moved = impactLines(impact, names)
    lines.push("", `In VPC ${named(names, impact.vpc_id)}:`, ...(moved.length === 0 ? ["  no verdict moves"] : moved))
  }
  const violations = planned.vpcs.flatMap((v) => v.violations)
  if (violations.length > 0) {
    lines.push(
      "",
      "Guardrails it would break (apply will be refused):",
      ...violations.map((v) => `  ${violation(v, names)}`)
    )
  }
  lines.push(
    "",
    setChanges(current, planned.address_set)
      ? `Plan: the set changes; ${planned.vpcs.length} VPC(s) use it.`
      : "No changes: the set is as declared."
  )
  return lines.join("\n")
}

/** Whether a write is in force, or why not yet (`not yet in force (VPC prod: ...)`): it is saved either way. */
export const inForce = (answer: { readonly applied: boolean; readonly apply_error: string | null }) =>
  answer.applied ? "in force" : `not yet in force (${answer.apply_error})`

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
    const moved = impactLines(impact, names)
    if (moved.length > 0) lines.push("", "Impact:", ...moved)
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
        inForce(answer)
      }.`
  )
  return lines.join("\n")
}

/** A subnet by name with its block (`subnet web 10.0.1.0/24`): what it stands for, which a flow's one address is not. */
const subnetText = (id: string, names: Names, blocks: Names) =>
  `subnet ${named(names, id)}${blocks.has(id) ? ` ${blocks.get(id)}` : ""}`

const endpoint = (e: FlowExplanation.ExplainEndpoint, names: Names, blocks: Names) =>
  e.kind === "internet"
    ? "the internet"
    : e.kind === "address"
    ? e.ip
    : e.kind === "subnet"
    ? subnetText(e.subnet_id, names, blocks)
    : `${e.kind} ${e.name}`

const REACH: Record<FlowReach.Reach, string> = {
  allowed: "ALLOWED (every flow)",
  partial: "PARTIAL (some flows get through, some do not)",
  denied: "DENIED (no flow gets through)"
}

/** Where an end of a flow is, in words: its pod or subnet, or outside the tenant's VPCs. */
const place = (end: typeof FlowReach.PathEnd.Type, names: Names, blocks: Names) =>
  end.pod_id !== null
    ? `pod ${named(names, end.pod_id)}`
    : end.subnet_id !== null
    ? subnetText(end.subnet_id, names, blocks)
    : "outside your VPCs"

/** A flow end to end: `10.0.1.5 (pod api) -> 203.0.113.9 (outside your VPCs)`. */
const pathText = (f: FlowReach.PathFlow, names: Names, blocks: Names) =>
  `${f.source.ip} (${place(f.source, names, blocks)}) -> ${f.destination.ip} (${place(f.destination, names, blocks)})`

/** What a half decides of a flow: `allow by 'https'`. */
const halfOf = (f: FlowReach.PathFlow, direction: "egress" | "ingress") => {
  const decision = direction === "egress" ? f.egress : f.ingress
  return decision === null ? "passes (outside your VPCs)" : `${decision.action} by ${decider(decision.decided_by)}`
}

/** What stops a flow: its path where no route carries it, else the half that denies it. */
const stopper = (f: FlowReach.PathFlow) =>
  f.route !== null
    ? `path: ${f.route.detail}`
    : f.egress?.action === "deny"
    ? `egress ${halfOf(f, "egress")}`
    : `ingress ${halfOf(f, "ingress")}`

/**
 * An explained flow: its reach end to end, each half with what decides it, and a flow of each
 * side. `blocks`: the subnets' CIDRs by id.
 */
export const explanation = (x: FlowExplanation.FlowExplanation, names: Names, blocks: Names = new Map()) => {
  const half = (label: string, direction: "egress" | "ingress", h: FlowExplanation.ExplainedHalf) => {
    if (h.vpc_id === null) return `  ${label}  outside your VPCs: no rule of yours judges it`
    const at = `  ${label}  VPC ${named(names, h.vpc_id)}:`
    if (h.reach === "partial") {
      return `${at} partial: ${halfOf(h.allowed_flow!, direction)} (e.g. ${
        pathText(h.allowed_flow!, names, blocks)
      }), ${halfOf(h.denied_flow!, direction)} (e.g. ${pathText(h.denied_flow!, names, blocks)})`
    }
    const example = h.allowed_flow ?? h.denied_flow
    return example === null
      ? `${at} no flow`
      : `${at} ${halfOf(example, direction)} (e.g. ${pathText(example, names, blocks)})`
  }
  return [
    `${x.protocol}${x.port === null ? "" : ` ${x.port}`} from ${endpoint(x.from, names, blocks)} to ${
      endpoint(x.to, names, blocks)
    }: ${REACH[x.reach]}`,
    ...(x.note === null ? [] : [`  ${x.note}`]),
    x.route.blocked_by === null
      ? "  path     a route carries every flow"
      : `  path     ${
        x.route.reach === "partial" ? "some flows have no route: " : "no route: "
      }${x.route.blocked_by.detail}`,
    half("egress ", "egress", x.egress),
    half("ingress", "ingress", x.ingress),
    ...(x.reach === "partial"
      ? [
        `  gets through: ${pathText(x.allowed_flow!, names, blocks)}`,
        `  stopped:      ${pathText(x.denied_flow!, names, blocks)} (${stopper(x.denied_flow!)})`
      ]
      : [])
  ].join("\n")
}

const pairEnd = (e: ReachabilityMatrix.ReachabilityEndpoint) =>
  e.kind === "internet" ? "internet" : `${e.kind} ${e.name}`

/** A protocol's cell: the ports every flow gets through on, then those only some do (`some 22`). */
const portsCell = (p: ReachabilityMatrix.PortsReach) =>
  [p.allowed, ...(p.partial === "" ? [] : [`some ${p.partial}`])].filter((part) => part !== "").join("; ") || "-"

/** Reachability as a table: each protocol's ports, `some` where only some flows get through. */
export const reachability = (m: ReachabilityMatrix.ReachabilityMatrix) => {
  const rows = [
    ["FROM", "TO", "TCP", "UDP", "ICMP"],
    ...m.pairs.map((p) => [
      pairEnd(p.from),
      pairEnd(p.to),
      portsCell(p.tcp),
      portsCell(p.udp),
      p.icmp.reach === "allowed" ? "yes" : p.icmp.reach === "partial" ? "some" : "-"
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
