/**
 * What ships for operators, read as they would load it: the alert rules
 * (`deploy/prometheus/tenet-alerts.yaml`) and the Grafana dashboard
 * (`deploy/grafana/tenet-dashboard.json`).
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { parse } from "yaml"

export const ROOT = join(import.meta.dirname, "..", "..", "..")
export const ALERTS = join(ROOT, "deploy", "prometheus", "tenet-alerts.yaml")
export const ALERT_TESTS = join(ROOT, "deploy", "prometheus", "tenet-alerts.test.yaml")
export const DASHBOARD = join(ROOT, "deploy", "grafana", "tenet-dashboard.json")

export interface AlertRule {
  readonly alert: string
  readonly expr: string
  readonly annotations: Record<string, string>
}

export const alertRules = (): ReadonlyArray<AlertRule> =>
  (parse(readFileSync(ALERTS, "utf8")) as { groups: ReadonlyArray<{ rules: ReadonlyArray<AlertRule> }> })
    .groups.flatMap((group) => group.rules)

export const alertExpressions = () => alertRules().map((rule) => rule.expr)

interface Panel {
  readonly title: string
  readonly targets?: ReadonlyArray<{ readonly expr: string }>
}

/** Every panel's queries, with Grafana's variables as a query over the last minutes would have them. */
export const dashboardQueries = (): ReadonlyArray<{ readonly title: string; readonly expression: string }> => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as { panels: ReadonlyArray<Panel> }
  return dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({
      title: panel.title,
      expression: target.expr.replaceAll("$__rate_interval", "1m").replaceAll("$instance", ".*")
    }))
  )
}

/** The `tenet_*` metric families an expression names (histogram series by their family). */
export const familiesIn = (expression: string): ReadonlyArray<string> =>
  [...expression.matchAll(/\b(tenet_\w+)/g)].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, ""))
