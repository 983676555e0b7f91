/**
 * What the use-cases count, as Effect `Metric`s: they record into Effect's metric registry,
 * and whoever runs them chooses how to expose it (the server: Prometheus's
 * exposition format on a listener of its own, `TENET_METRICS_PORT`). Labels carry no tenant
 * names, ids or secrets: every label has a small, fixed set of values.
 */
import { Effect, Metric, MetricBoundaries, MetricLabel } from "effect"
import { OperationKind, Outcome } from "../domain/OperationLog.js"

export const authOperations = Metric.counter("tenet_auth_operations", {
  description: "Logins, logouts and token rotations, by kind (admin.login, ...) and outcome (success, failure, " +
    "throttled): the operations log, counted",
  incremental: true
})

export const recordAuthOperation = (kind: OperationKind, outcome: Outcome) =>
  Metric.increment(
    Metric.taggedWithLabels(authOperations, [MetricLabel.make("kind", kind), MetricLabel.make("outcome", outcome)])
  )

/** What a throttle slows (`LoginThrottle`): a name from one address, an address, or a name from any address. */
export const THROTTLE_SCOPES = ["name_address", "address", "name"] as const
export type ThrottleScope = typeof THROTTLE_SCOPES[number]

export const loginThrottles = Metric.counter("tenet_login_throttles", {
  description: "Failed logins that started or lengthened a wait for further attempts, by what is slowed",
  incremental: true
})

export const recordThrottle = (scope: ThrottleScope) => Metric.increment(Metric.tagged(loginThrottles, "scope", scope))

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

/** What refuses an expensive request its turn (`Fairness`): a full queue, or a wait too long. */
export const EXPENSIVE_REFUSALS = ["queue_full", "waited_too_long"] as const
export type ExpensiveRefusal = typeof EXPENSIVE_REFUSALS[number]

export const expensiveRefused = Metric.counter("tenet_expensive_refused", {
  description: "Expensive requests (reachability, explain, analysis, topology) refused a turn (429), by why: " +
    "their tenant's queue was full, or they waited too long",
  incremental: true
})

export const recordExpensiveRefused = (why: ExpensiveRefusal) =>
  Metric.increment(Metric.tagged(expensiveRefused, "reason", why))

/** Seconds, from 0.5 ms to about 16 s: a port call is a statement or an API round trip. */
const portCallBoundaries = MetricBoundaries.exponential({ start: 0.0005, factor: 2, count: 16 })

export const storeCalls = Metric.counter("tenet_store_calls", {
  description: "Calls into the store (a statement or a few, e.g. vpcs.insert), by backend, operation and outcome " +
    "(success, conflict: a uniqueness rule refused it, error: the store failed)",
  incremental: true
})

export const storeCallDuration = Metric.histogram(
  "tenet_store_call_duration_seconds",
  portCallBoundaries,
  "Time a store call took, by backend and operation"
)

export const storeTransactions = Metric.counter("tenet_store_transactions", {
  description: "Store transactions, by backend and outcome (committed, rolled_back: the use-case refused the " +
    "change, error: the store failed)",
  incremental: true
})

export const storeTransactionDuration = Metric.histogram(
  "tenet_store_transaction_duration_seconds",
  portCallBoundaries,
  "Time from a transaction's start to its commit or rollback, by backend"
)

export const clusterCalls = Metric.counter("tenet_cluster_calls", {
  description: "Calls to the cluster (applyVpc, applyPod, ...), by backend, operation and outcome (success, error)",
  incremental: true
})

export const clusterCallDuration = Metric.histogram(
  "tenet_cluster_call_duration_seconds",
  portCallBoundaries,
  "Time a cluster call took, by backend and operation"
)

export const tunnelProviderCalls = Metric.counter("tenet_tunnel_provider_calls", {
  description:
    "Calls to the tunnel provider (publish, unpublish, held), by backend, operation and outcome (success, or " +
    "the failure: unavailable, unauthorized, conflict, rejected)",
  incremental: true
})

export const tunnelProviderCallDuration = Metric.histogram(
  "tenet_tunnel_provider_call_duration_seconds",
  portCallBoundaries,
  "Time a tunnel-provider call took, by backend and operation"
)

/**
 * The use-cases' series whose labels are all known in advance, registered at 0: a scrape
 * before the first login or apply reads 0, not "no data" (the port calls' are registered as
 * `Instrumented` wraps them).
 */
export const registerInitial = Effect.sync(() => {
  for (const kind of OperationKind.literals) {
    for (const outcome of Outcome.literals) {
      Metric.taggedWithLabels(authOperations, [MetricLabel.make("kind", kind), MetricLabel.make("outcome", outcome)])
        .unsafeValue([])
    }
  }
  for (const scope of THROTTLE_SCOPES) Metric.tagged(loginThrottles, "scope", scope).unsafeValue([])
  for (const why of EXPENSIVE_REFUSALS) Metric.tagged(expensiveRefused, "reason", why).unsafeValue([])
  for (const kind of ["vpc", "pod"]) {
    for (const applied of ["true", "false"]) {
      Metric.taggedWithLabels(applyResults, [MetricLabel.make("kind", kind), MetricLabel.make("applied", applied)])
        .unsafeValue([])
    }
  }
})
