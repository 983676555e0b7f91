/**
 * A change's impact before it is made (a dry run's answer): the traffic it opens, the traffic
 * it closes, each region with what decides it now and after, the findings it brings, and the
 * guardrails it would break (saving it would be refused).
 */
import type { SecurityRule } from "@tenet/core"
import type { Names } from "./Names.js"

type Decision = SecurityRule.ImpactRegion["before"]

const decider = (d: Decision) => (d.decided_by.kind === "rule" ? `rule '${d.decided_by.name}'` : d.decided_by.key)

const where = (region: SecurityRule.ImpactRegion, names: Names) => {
  const parts = [
    ...region.local.subnet_ids.map((s) => `subnet ${names.subnet(s)}`),
    ...region.local.pod_ids.map((p) => `pod ${names.pod(p)}`),
    ...(region.local.outside_subnets ? ["addresses outside the subnets"] : [])
  ]
  return parts.join(", ")
}

const Region = ({ names, region }: { region: SecurityRule.ImpactRegion; names: Names }) => (
  <li>
    <strong>
      {region.direction} {region.protocol}
      {region.ports === null ? "" : ` ${region.ports}`}
    </strong>{" "}
    {region.direction === "ingress" ? "from" : "to"} <code>{region.remote_summary}</code>{" "}
    {region.direction === "ingress" ? "into" : "from"} {where(region, names)}
    <div class="muted">
      now {region.before.action} by {decider(region.before)}, after {region.after.action} by {decider(region.after)}
    </div>
    <Unrouted region={region} />
  </li>
)

/**
 * What no path carries of a region, where it matters: opened flows no route carries after the
 * change (no packet uses them yet), closed flows none carried before (none used them).
 */
const Unrouted = ({ region }: { region: SecurityRule.ImpactRegion }) => {
  const opens = region.after.action === "allow"
  const blocked = opens ? region.route.after : region.route.before
  return blocked === null ? null : (
    <div class="muted unrouted">
      No path {opens ? "carries these flows after the change" : "carried these flows before"}: {blocked.detail}
    </div>
  )
}

export const ImpactView = ({ impact, names }: { impact: SecurityRule.RuleImpact; names: Names }) => {
  const nothing = impact.opened.length === 0 && impact.closed.length === 0
  return (
    <section class="impact" aria-label="Impact of the change" aria-live="polite">
      <h3>Impact of this change</h3>
      {nothing && <p>No flow changes its verdict.</p>}
      {impact.opened.length > 0 && (
        <div class="opened">
          <h4>Opens ({impact.opened.length})</h4>
          <ul>{impact.opened.map((r, i) => <Region key={i} region={r} names={names} />)}</ul>
        </div>
      )}
      {impact.closed.length > 0 && (
        <div class="closed">
          <h4>Closes ({impact.closed.length})</h4>
          <ul>{impact.closed.map((r, i) => <Region key={i} region={r} names={names} />)}</ul>
        </div>
      )}
      {impact.violations.length > 0 && (
        <div class="violations" role="alert">
          <h4>Breaks guardrails ({impact.violations.length})</h4>
          <ul>
            {impact.violations.map((v) => (
              <li key={v.guardrail_id}>
                <strong>{v.name}</strong>: {v.flow.protocol}
                {v.flow.port === null ? "" : ` ${v.flow.port}`} {v.flow.direction === "ingress" ? "from" : "to"}{" "}
                <code>{v.flow.remote_ip}</code> {v.flow.direction === "ingress" ? "into" : "from"}{" "}
                {v.flow.local.pod_id !== null
                  ? `pod ${names.pod(v.flow.local.pod_id)}`
                  : v.flow.local.subnet_id !== null
                  ? `subnet ${names.subnet(v.flow.local.subnet_id)}`
                  : "an address outside the subnets"} would be {v.decided_by.kind === "rule"
                  ? `decided by rule '${v.decided_by.name}'`
                  : `decided by ${v.decided_by.key}`}
                {v.route !== null && <div class="muted unrouted">No path carries it today: {v.route.detail}</div>}
              </li>
            ))}
          </ul>
          <p>Saving this change would be refused: change it first.</p>
        </div>
      )}
      {impact.new_findings.length > 0 && (
        <div class="findings">
          <h4>New findings</h4>
          <ul>
            {impact.new_findings.map((f) => (
              <li key={`${f.kind}:${f.rule_id}`}>
                <span class={`badge ${f.kind}`}>{f.kind}</span> {f.message}
              </li>
            ))}
          </ul>
        </div>
      )}
    </section>
  )
}
