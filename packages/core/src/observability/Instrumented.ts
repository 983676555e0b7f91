/**
 * The ports, observed: every call into the store, the cluster and the tunnel provider is
 * counted and timed (core's `Metrics`, by backend and operation) and traced (a span per call,
 * beneath the use-case's). Nothing about a call's arguments is recorded: labels and span
 * attributes are the backend and the operation, so they hold no tenant's name, id or secret.
 *
 * `UseCases.layer` puts these in front of the ports it is given, beneath the read model: the
 * store calls counted are the ones that reach the store.
 */
import type { Exit } from "effect"
import { Cause, Context, Effect, FiberRef, Layer, Metric, MetricLabel, Option } from "effect"
import { globalValue } from "effect/GlobalValue"
import { EdgeTunnels } from "../ports/EdgeTunnels.js"
import type { EdgeTunnelsShape } from "../ports/EdgeTunnels.js"
import { Orchestrator } from "../ports/Orchestrator.js"
import type { OrchestratorShape } from "../ports/Orchestrator.js"
import { Store } from "../ports/Store.js"
import type { StoreShape } from "../ports/Store.js"
import * as Metrics from "./Metrics.js"

type Outcome = (exit: Exit.Exit<unknown, unknown>) => string

/** A counter per outcome, tagged on first use (tagging on every call would cost a lookup each). */
const byOutcome = (counter: Metric.Metric.Counter<number>, labels: ReadonlyArray<MetricLabel.MetricLabel>) => {
  const counters = new Map<string, Metric.Metric.Counter<number>>()
  return (outcome: string) => {
    let found = counters.get(outcome)
    if (found === undefined) {
      found = Metric.taggedWithLabels(counter, [...labels, MetricLabel.make("outcome", outcome)])
      counters.set(outcome, found)
    }
    return found
  }
}

/** How one kind of call is observed: its span's name, its instruments, how its outcome is named. */
interface Observer {
  readonly span: string
  readonly backend: string
  readonly duration: Metric.Metric.Histogram<number>
  readonly count: (outcome: string) => Metric.Metric.Counter<number>
  readonly outcome: Outcome
}

interface Instruments {
  readonly counter: Metric.Metric.Counter<number>
  readonly histogram: Metric.Metric.Histogram<number>
  readonly outcome: Outcome
  /** The outcomes served at 0 from the start: the ones dashboards and alerts select. */
  readonly initial: ReadonlyArray<string>
}

/**
 * The call's instruments, registered as it is wrapped: a scrape before the first call reads 0
 * rather than no data (a rate or an alert over an absent series is empty, not 0).
 */
const observer = (
  instruments: Instruments,
  span: string,
  backend: string,
  labels: ReadonlyArray<MetricLabel.MetricLabel>
): Observer => {
  const duration = Metric.taggedWithLabels(instruments.histogram, labels)
  const count = byOutcome(instruments.counter, labels)
  duration.unsafeValue([])
  for (const outcome of instruments.initial) count(outcome).unsafeValue([])
  return { span, backend, duration, count, outcome: instruments.outcome }
}

/**
 * The call, timed and counted as it ends, in its span when tracing is on. Instruments are
 * updated in place, not through `Metric.update` (no fiber-level labels are set anywhere), and no
 * span is made while tracing is off: a store call wraps one map lookup on the memory store, and
 * the wrapping was most of its cost (BENCHMARKS, issue 49).
 */
const observe = <A, E, R>(self: Effect.Effect<A, E, R>, by: Observer): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const started = performance.now()
    const measured = Effect.onExit(self, (exit) =>
      Effect.sync(() => {
        by.duration.unsafeUpdate((performance.now() - started) / 1000, [])
        by.count(by.outcome(exit)).unsafeUpdate(1, [])
      }))
    return fiber.getFiberRef(FiberRef.currentTracerEnabled)
      // The span names the port call; the caller's stack frame, captured per call, would only cost.
      ? Effect.withSpan(measured, by.span, {
        kind: "client",
        attributes: { "tenet.backend": by.backend },
        captureStackTrace: false
      })
      : measured
  })

/** The tag of a call's typed failure; `error` when it died, `interrupted` when it was. */
const failureOf = (exit: Exit.Exit<unknown, unknown>): Option.Option<string> => {
  if (exit._tag === "Success") return Option.none()
  return Cause.failureOption(exit.cause).pipe(
    Option.map((e) => (e as { readonly _tag?: string })._tag ?? "error"),
    Option.orElse(() => Option.some(Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "error"))
  )
}

const storeCalls: Instruments = {
  counter: Metrics.storeCalls,
  histogram: Metrics.storeCallDuration,
  outcome: (exit) =>
    Option.match(failureOf(exit), {
      onNone: () => "success",
      onSome: (tag) =>
        tag === "UniqueViolation" || tag === "KeyClaimed"
          ? "conflict"
          : tag === "StaleDecision"
          ? "stale"
          : tag === "interrupted"
          ? tag
          : "error"
    }),
  initial: ["success", "error"]
}

const storeTransactions: Instruments = {
  counter: Metrics.storeTransactions,
  histogram: Metrics.storeTransactionDuration,
  outcome: (exit) =>
    Option.match(failureOf(exit), {
      onNone: () => "committed",
      onSome: (tag) =>
        tag === "StoreUnavailable" || tag === "error" ? "error" : tag === "interrupted" ? tag : "rolled_back"
    }),
  initial: ["committed", "rolled_back", "error"]
}

const clusterCalls: Instruments = {
  counter: Metrics.clusterCalls,
  histogram: Metrics.clusterCallDuration,
  outcome: (exit) =>
    Option.match(failureOf(exit), { onNone: () => "success", onSome: (tag) => tag === "interrupted" ? tag : "error" }),
  initial: ["success", "error"]
}

/** The provider's failure is named by its reason (unavailable, unauthorized, conflict, rejected). */
const tunnelProviderCalls: Instruments = {
  counter: Metrics.tunnelProviderCalls,
  histogram: Metrics.tunnelProviderCallDuration,
  outcome: (exit) => {
    if (exit._tag === "Success") return "success"
    return Option.match(Cause.failureOption(exit.cause), {
      onNone: () => Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "error",
      onSome: (e) => (e as { readonly reason?: string }).reason ?? "error"
    })
  },
  initial: ["success", "unavailable", "unauthorized", "conflict", "rejected", "error"]
}

/**
 * Every operation of `port` (a function answering an effect, or an effect) observed as
 * `operation` = `prefix` + its name, in a span named `span` + `operation`; other fields kept.
 */
const observeAll = <T extends object>(
  port: T,
  names: { readonly span: string; readonly operation: string },
  backend: string,
  instruments: Instruments
): T =>
  Object.fromEntries(
    Object.entries(port).map(([name, value]) => {
      const operation = `${names.operation}${name}`
      const by = () =>
        observer(instruments, `${names.span}${operation}`, backend, [
          MetricLabel.make("backend", backend),
          MetricLabel.make("operation", operation)
        ])
      if (typeof value === "function") {
        const observed = by()
        const call = value as (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown, unknown>
        return [name, (...args: ReadonlyArray<unknown>) => observe(call(...args), observed)]
      }
      return [name, Effect.isEffect(value) ? observe(value, by()) : value]
    })
  ) as T

const REPOSITORIES = [
  "admins",
  "tenants",
  "domains",
  "providerConfig",
  "serviceTunnels",
  "hostnames",
  "vpcs",
  "pods",
  "tunnels",
  "idempotencyKeys",
  "loginAttempts",
  "events",
  "audit",
  "snapshots"
] as const satisfies ReadonlyArray<keyof StoreShape>

/** True inside an observed transaction: a nested one joins it and is not counted again. */
const inTransaction = globalValue(
  Symbol.for("@tenet/core/Instrumented/inTransaction"),
  () => FiberRef.unsafeMake(false)
)

/** The store: each repository call (`vpcs.insert`, ...), `ping`, and each outermost transaction. */
export const store = (self: StoreShape): StoreShape => {
  const backend = self.backend
  const transactions = observer(storeTransactions, "Store.transaction", backend, [MetricLabel.make("backend", backend)])
  const repositories = Object.fromEntries(
    REPOSITORIES.map((
      name
    ) => [name, observeAll(self[name], { span: "Store.", operation: `${name}.` }, backend, storeCalls)])
  ) as Pick<StoreShape, typeof REPOSITORIES[number]>
  const { ping } = observeAll({ ping: self.ping }, { span: "Store.", operation: "" }, backend, storeCalls)
  const { commit } = observeAll({ commit: self.commit }, { span: "Store.", operation: "" }, backend, storeCalls)
  return {
    ...self,
    ...repositories,
    ping,
    commit,
    transaction: (effect) =>
      Effect.flatMap(FiberRef.get(inTransaction), (inside) =>
        inside
          ? self.transaction(effect)
          : observe(self.transaction(Effect.locally(effect, inTransaction, true)), transactions))
  }
}

/** Every cluster call (`applyVpc`, ...), in spans `Orchestrator.<operation>`. */
export const orchestrator = (self: OrchestratorShape): OrchestratorShape =>
  observeAll(self, { span: "Orchestrator.", operation: "" }, self.backend, clusterCalls)

/** Every tunnel-provider call (`publish`, `unpublish`, `held`), in spans `EdgeTunnels.<operation>`. */
export const edgeTunnels = (self: EdgeTunnelsShape): EdgeTunnelsShape =>
  observeAll(self, { span: "EdgeTunnels.", operation: "" }, self.backend, tunnelProviderCalls)

/** The Store, Orchestrator and EdgeTunnels in context, observed. */
export const layer: Layer.Layer<
  Store | Orchestrator | EdgeTunnels,
  never,
  Store | Orchestrator | EdgeTunnels
> = Layer.effectContext(Effect.gen(function*() {
  return Context.make(Store, store(yield* Store)).pipe(
    Context.add(Orchestrator, orchestrator(yield* Orchestrator)),
    Context.add(EdgeTunnels, edgeTunnels(yield* EdgeTunnels))
  )
}))
