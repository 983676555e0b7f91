/**
 * The metrics a restarted server serves before its first request: every series docs/metrics.md
 * lists is there, at 0 (or its initial value), so dashboards and alerts read 0 rather than "no
 * data" until traffic and the first reconciler pass come.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { freePort, until } from "./Loopback.js"
import { spawnServer } from "./ServerProcess.js"

const DOC = new URL("../../../docs/metrics.md", import.meta.url)

/** The table's rows: each metric's name and type. */
const documented = () =>
  readFileSync(DOC, "utf8").split("\n").flatMap((line) => {
    const match = /^\| `(tenet_\w+)` \| (\w+)/.exec(line)
    return match === null ? [] : [{ name: match[1]!, type: match[2]! }]
  })

const samplesOf = (text: string) =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const space = line.lastIndexOf(" ")
    const series = line.slice(0, space)
    return { series, name: series.split("{")[0]!, value: Number(line.slice(space + 1)) }
  })

describe("metrics at start", () => {
  it("every documented series is served before the first request, at its initial value", async () => {
    const metricsPort = await freePort()
    // The reconciler's first pass is an hour away: what it measures must be there without it.
    const server = await spawnServer({
      TENET_STORE: "memory",
      TENET_ADMIN_PASSWORD: "metrics-admin-password",
      TENET_METRICS_PORT: String(metricsPort),
      TENET_RECONCILE_INTERVAL: "1 hour"
    })
    await until(() => server.output().includes("listening"), "the server to listen", 60_000)
    const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
    expect(response.status).toBe(200)
    const samples = samplesOf(await response.text())

    const names = documented()
    expect(names.length).toBeGreaterThan(15)
    for (const { name, type } of names) {
      const served = type === "histogram" ? `${name}_count` : name
      expect(samples.some((s) => s.name === served), `${served} is served`).toBe(true)
    }
    // No request was made, no pass ran: every counter and histogram is at 0, but the store's
    // (the admin made sure of, the backlog measured).
    for (const sample of samples.filter((s) => /^tenet_(?!store_).*(_total|_count|_sum)$/.test(s.name))) {
      expect(sample.value, sample.series).toBe(0)
    }
    /** The one sample of `name` with (at least) these labels. */
    const value = (name: string, labels: Record<string, string>) => {
      const found = samples.filter((s) =>
        s.name === name && Object.entries(labels).every(([k, v]) => s.series.includes(`${k}="${v}"`))
      )
      expect(found, `${name}${JSON.stringify(labels)}`).toHaveLength(1)
      return found[0]!.value
    }
    for (const kind of ["vpc", "pod", "tunnel"]) expect(value("tenet_reconciler_backlog", { kind })).toBe(0)
    for (const status of ["active", "pending", "error"]) expect(value("tenet_tunnels", { status })).toBe(0)
    // What the shipped alerts select is there to select.
    expect(value("tenet_http_requests_total", { route: "/vpcs", method: "POST", status: "200" })).toBe(0)
    expect(value("tenet_store_calls_total", { backend: "memory", operation: "commit", outcome: "error" })).toBe(0)
    expect(value("tenet_apply_results_total", { kind: "vpc", applied: "false" })).toBe(0)
    expect(value("tenet_tunnel_provider_calls_total", { operation: "publish", outcome: "unavailable" })).toBe(0)
  }, 90_000)
})
