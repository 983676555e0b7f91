/**
 * Traces over OTLP/HTTP, configured by OpenTelemetry's standard variables: on when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, off otherwise
 * (and then the binary records no spans at all). `@effect/opentelemetry`'s OTLP tracer exports
 * Effect's own spans: a request's server span (joining the caller's trace from its W3C
 * `traceparent`), the use-case's beneath it, and the store, cluster and tunnel-provider calls
 * beneath that (core's `Instrumented`; the SQL driver's statements too).
 */
import { OtlpSerialization, OtlpTracer } from "@effect/opentelemetry"
import { FetchHttpClient } from "@effect/platform"
import { Duration, Layer, Option, Redacted } from "effect"
import type { TracingConfig } from "./Config.js"

/** `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs, comma-separated, values percent-encoded. */
export const parseHeaders = (text: string): Record<string, string> =>
  Object.fromEntries(
    text.split(",").flatMap((pair) => {
      const at = pair.indexOf("=")
      if (at <= 0) return []
      const key = pair.slice(0, at).trim()
      const value = pair.slice(at + 1).trim()
      try {
        return [[key, decodeURIComponent(value)]]
      } catch {
        return [[key, value]]
      }
    })
  )

/** The OTLP tracer, exporting every `scheduleDelay` and at shutdown. */
export const layer = (options: {
  readonly url: string
  readonly config: TracingConfig
  readonly version: string
}) =>
  OtlpTracer.layer({
    url: options.url,
    resource: { serviceName: options.config.serviceName, serviceVersion: options.version },
    headers: Option.match(options.config.headers, {
      onNone: () => ({}),
      onSome: (headers) => parseHeaders(Redacted.value(headers))
    }),
    exportInterval: Duration.millis(options.config.scheduleDelay)
  }).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))
