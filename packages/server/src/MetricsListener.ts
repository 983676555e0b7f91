/**
 * Tenet's metrics in Prometheus's exposition format, on a listener of their own
 * (`TENET_METRICS_PORT`): never the API's port, so no tenant can read them. Effect's metric
 * registry (core's `Metrics`, the platform's own) is bridged into OpenTelemetry by
 * `@effect/opentelemetry` and served by OpenTelemetry's Prometheus exporter. Besides what the
 * use-cases and the HTTP middleware count: build info, and the process's heap and event-loop
 * delay, sampled every few seconds.
 */
import { Metrics as OtelMetrics, Resource } from "@effect/opentelemetry"
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import { EdgeTunnels, Orchestrator, Store } from "@tenet/core"
import { Duration, Effect, Layer, Metric, MetricLabel, Schedule } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import * as StartupFailure from "./StartupFailure.js"

export interface Options {
  readonly host: string
  readonly port: number
  readonly version: string
}

const buildInfo = Metric.gauge("tenet_build_info", {
  description: "Always 1; the labels say which version runs on which store, orchestrator and tunnel provider"
})

const heapUsed = Metric.gauge("tenet_process_heap_used_bytes", { description: "V8 heap in use" })

const eventLoopDelay = Metric.gauge("tenet_process_event_loop_delay_seconds", {
  description: "Event-loop delay over the last sampling interval: p99 (quantile=0.99) and max (quantile=1)"
})

const SAMPLE_EVERY = Duration.seconds(5)

/** Heap and event-loop delay, sampled on a schedule for as long as the layer lives. */
const processSamples = Layer.scopedDiscard(Effect.gen(function*() {
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  yield* Effect.addFinalizer(() => Effect.sync(() => delay.disable()))
  const sample = Effect.suspend(() => {
    const p99 = delay.percentile(99) / 1e9
    const max = delay.max / 1e9
    delay.reset()
    return Effect.all([
      Metric.set(heapUsed, process.memoryUsage().heapUsed),
      Metric.set(Metric.tagged(eventLoopDelay, "quantile", "0.99"), Number.isFinite(p99) ? p99 : 0),
      Metric.set(Metric.tagged(eventLoopDelay, "quantile", "1"), Number.isFinite(max) ? max : 0)
    ], { discard: true })
  })
  yield* Effect.forkScoped(Effect.repeat(sample, Schedule.spaced(SAMPLE_EVERY)))
}))

const build = (version: string) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const store = yield* Store.Store
    const orchestrator = yield* Orchestrator.Orchestrator
    const edge = yield* EdgeTunnels.EdgeTunnels
    const labels = [
      MetricLabel.make("version", version),
      MetricLabel.make("store", store.backend),
      MetricLabel.make("orchestrator", orchestrator.backend),
      MetricLabel.make("tunnels", edge.backend)
    ]
    yield* Metric.set(Metric.taggedWithLabels(buildInfo, labels), 1)
  }))

/** The exporter's own HTTP server, started here so that a port in use fails the start. */
const exporter = (options: Options) =>
  Effect.gen(function*() {
    const reader = new PrometheusExporter({
      host: options.host,
      port: options.port,
      endpoint: "/metrics",
      preventServerStart: true
    })
    yield* Effect.tryPromise({
      try: () => reader.startServer(),
      catch: StartupFailure.cannotListen("TENET_METRICS_PORT", options.host, options.port)
    }).pipe(Effect.orDie)
    return reader
  })

/** Serves `/metrics` on `host:port` for as long as the layer lives. */
export const layer = (
  options: Options
): Layer.Layer<never, never, Store.Store | Orchestrator.Orchestrator | EdgeTunnels.EdgeTunnels> =>
  Layer.unwrapEffect(Effect.map(exporter(options), (reader) =>
    Layer.mergeAll(
      OtelMetrics.layer(() => reader),
      processSamples,
      build(options.version)
    ).pipe(Layer.provide(Resource.layer({ serviceName: "tenet", serviceVersion: options.version })))))
