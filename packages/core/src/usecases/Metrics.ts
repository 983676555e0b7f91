/**
 * What the use-cases count, as Effect `Metric`s: they record into Effect's metric registry,
 * and whoever runs them chooses how to expose it (the server: Prometheus's
 * exposition format on a listener of its own, `TENET_METRICS_PORT`). Labels carry no tenant
 * names, ids or secrets: every label has a small, fixed set of values.
 */
import { Metric, MetricLabel } from "effect"
import type { OperationKind, Outcome } from "../domain/OperationLog.js"

export const authOperations = Metric.counter("tenet_auth_operations", {
  description: "Logins, logouts and token rotations, by kind (admin.login, ...) and outcome (success, failure, " +
    "throttled): the operations log, counted",
  incremental: true
})

export const recordAuthOperation = (kind: OperationKind, outcome: Outcome) =>
  Metric.increment(
    Metric.taggedWithLabels(authOperations, [MetricLabel.make("kind", kind), MetricLabel.make("outcome", outcome)])
  )

export const loginLockouts = Metric.counter("tenet_login_lockouts", {
  description: "Times a login name or a source address became locked out after too many failures, by scope",
  incremental: true
})

export const recordLockout = (scope: "name" | "address") =>
  Metric.increment(Metric.tagged(loginLockouts, "scope", scope))

export const applyResults = Metric.counter("tenet_apply_results", {
  description: "Applies of desired state to the cluster, by kind (vpc, pod) and whether it was applied",
  incremental: true
})

export const recordApply = (kind: "vpc" | "pod", applied: boolean) =>
  Metric.increment(
    Metric.taggedWithLabels(applyResults, [
      MetricLabel.make("kind", kind),
      MetricLabel.make("applied", String(applied))
    ])
  )
