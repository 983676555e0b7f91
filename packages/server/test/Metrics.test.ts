/**
 * The metrics listener during a scripted scenario: each count is what the scenario did, read
 * from the exposition text and, as an operator reads it, from a real Prometheus that scraped
 * it. Effect's metric registry is the process's: a worker that ran other files before this one
 * holds their counts too, so counters are read as what they gained since a scrape taken before
 * the scenario, and gauges as they stand.
 */
import { expect, layer } from "@effect/vitest"
import { SimulatedCluster, SimulatedEdge } from "@tenet/adapters-memory"
import { Identity } from "@tenet/core"
import { Effect, Layer } from "effect"
import { MetricsListener, Reconciler, TestServer } from "../src/index.js"
import { EDGE_ACCOUNT, raw, setProviderConfig, storeUnderTest, testServer, uniqueName, workspace } from "./Harness.js"
import { freePort } from "./Loopback.js"
import * as Operations from "./Operations.js"
import * as Prometheus from "./Prometheus.js"

interface Sample {
  readonly name: string
  readonly labels: Record<string, string>
  readonly value: number
}

/** Prometheus's text format, the lines that are samples. */
const parse = (text: string): ReadonlyArray<Sample> =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!])
    )
    return { name: match[1]!, labels, value: Number(match[3]) }
  })

/** The value of one series, by name and labels: none when there is none (yet). */
type ValueOf = (name: string, labels?: Record<string, string>) => Effect.Effect<number | undefined>

/** From the exposition text: the one sample with these labels. */
const fromText = (samples: ReadonlyArray<Sample>): ValueOf => (name, labels = {}) =>
  Effect.sync(() => {
    const found = samples.filter((s) =>
      s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value)
    )
    expect(found.length).toBeLessThanOrEqual(1)
    return found[0]?.value
  })

/** Series whose value is a level the server sets, not a count it adds to. */
const GAUGES = new Set([
  "tenet_build_info",
  "tenet_reconciler_backlog",
  "tenet_tunnels",
  "tenet_process_heap_used_bytes",
  "tenet_process_event_loop_delay_seconds"
])

/** A counter's gain since `before` (none counted then is 0); a gauge as it is. */
const since = (before: ValueOf, valueOf: ValueOf): ValueOf => (name, labels) =>
  GAUGES.has(name) ? valueOf(name, labels) : Effect.zipWith(
    valueOf(name, labels),
    before(name, labels),
    (now, then) => now === undefined ? undefined : now - (then ?? 0)
  )

/** From Prometheus: the instant value of `name{labels}`. */
const fromPrometheus = (prometheus: Prometheus.Prometheus): ValueOf => (name, labels = {}) => {
  const selector = Object.entries(labels).map(([key, value]) => `${key}=${JSON.stringify(value)}`).join(",")
  return prometheus.value(`${name}{${selector}}`)
}

/** Every family, as the scenario below leaves it. */
const expectScenario = (valueOf: ValueOf) =>
  Effect.gen(function*() {
    const backend = { backend: storeUnderTest }
    const applyVpc = { backend: "simulated", operation: "applyVpc" }
    const publish = { backend: "simulated", operation: "publish" }
    const exactly: ReadonlyArray<readonly [string, Record<string, string>, number]> = [
      ["tenet_auth_operations_total", { kind: "admin.login", outcome: "failure" }, 3],
      ["tenet_auth_operations_total", { kind: "tenant.login", outcome: "success" }, 1],
      ["tenet_auth_operations_total", { kind: "tenant.login", outcome: "failure" }, 5],
      ["tenet_auth_operations_total", { kind: "tenant.login", outcome: "throttled" }, 1],
      ["tenet_login_throttles_total", { scope: "name_address" }, 1],
      ["tenet_login_throttles_total", { scope: "address" }, 0],
      ["tenet_login_throttles_total", { scope: "name" }, 0],
      ["tenet_apply_results_total", { kind: "vpc", applied: "false" }, 1],
      ["tenet_http_requests_total", { route: "/admin/login", method: "POST", status: "401" }, 3],
      ["tenet_http_requests_total", { route: "/vpcs", method: "GET", status: "200" }, 1],
      ["tenet_http_requests_total", { route: "/vpcs", method: "POST", status: "409" }, 1],
      // The workspace's VPC and the one whose apply failed: saved either way.
      ["tenet_http_request_duration_seconds_count", { route: "/vpcs", method: "POST", status: "200" }, 2],
      ["tenet_build_info", { store: storeUnderTest, orchestrator: "simulated", tunnels: "simulated" }, 1],
      // The duplicate VPC name: the one commit a uniqueness rule refused.
      ["tenet_store_calls_total", { ...backend, operation: "commit", outcome: "conflict" }, 1],
      ["tenet_store_transactions_total", { ...backend, outcome: "error" }, 0],
      ["tenet_cluster_calls_total", { ...applyVpc, outcome: "error" }, 1],
      ["tenet_tunnel_provider_calls_total", { ...publish, outcome: "success" }, 1],
      // The tunnel made while the provider was down, and the pass's retry.
      ["tenet_tunnel_provider_calls_total", { ...publish, outcome: "unavailable" }, 2],
      ["tenet_reconciler_passes_total", { outcome: "completed" }, 1],
      ["tenet_reconciler_pass_duration_seconds_count", {}, 1],
      ["tenet_reconciler_converged_total", { kind: "vpc" }, 1],
      ["tenet_reconciler_converged_total", { kind: "tunnel" }, 0],
      ["tenet_reconciler_backlog", { kind: "vpc" }, 0],
      ["tenet_reconciler_backlog", { kind: "pod" }, 0],
      ["tenet_reconciler_backlog", { kind: "tunnel" }, 1],
      ["tenet_tunnels", { status: "active" }, 1],
      ["tenet_tunnels", { status: "error" }, 1],
      ["tenet_tunnels", { status: "pending" }, 0]
    ]
    for (const [name, labels, value] of exactly) {
      // A counter not yet incremented has no series: zero.
      expect((yield* valueOf(name, labels)) ?? 0, `${name}${JSON.stringify(labels)}`).toBe(value)
    }
    expect(yield* valueOf("tenet_auth_operations_total", { kind: "admin.login", outcome: "success" }))
      .toBeGreaterThanOrEqual(1)
    expect(yield* valueOf("tenet_store_transactions_total", { ...backend, outcome: "committed" }))
      .toBeGreaterThanOrEqual(1)
    // Both VPCs' creates, and the changes that followed them (apply states, the tunnel's status).
    const commits = yield* valueOf("tenet_store_calls_total", { ...backend, operation: "commit", outcome: "success" })
    expect(commits).toBeGreaterThanOrEqual(2)
    expect(yield* valueOf("tenet_store_call_duration_seconds_count", { ...backend, operation: "commit" }))
      .toBe(commits! + 1)
    // Applied: the workspace's VPC (and again with its subnet), then the failed one by the pass.
    const applied = yield* valueOf("tenet_cluster_calls_total", { ...applyVpc, outcome: "success" })
    expect(applied).toBeGreaterThanOrEqual(2)
    expect(yield* valueOf("tenet_cluster_call_duration_seconds_count", applyVpc)).toBe(applied! + 1)
    expect(yield* valueOf("tenet_process_heap_used_bytes")).toBeGreaterThan(1_000_000)
    // Sampled every 5 s: present from the start, whatever its first value.
    expect(yield* valueOf("tenet_process_event_loop_delay_seconds", { quantile: "1" })).toBeTypeOf("number")
  })

// CI installs Prometheus (.ci/run) and must run its half; elsewhere it is left out when missing.
const withPrometheus = Prometheus.available() || process.env.CI !== undefined

const scrape = (port: number) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`)
    return { status: response.status, text: await response.text() }
  })

/** A wait no pause of a busy machine outlasts: the sixth login below is always the throttled one. */
const loginThrottle = {
  ...Identity.defaultThrottlePolicy,
  nameAndAddress: { ...Identity.defaultThrottlePolicy.nameAndAddress, baseMillis: 60_000 }
}

layer(testServer({ loginThrottle }), { excludeTestServices: true })("metrics", (it) => {
  it.scoped(
    "a scenario's logins, calls, applies, passes and responses are counted on the metrics listener, and only there",
    () =>
      Effect.gen(function*() {
        const port = yield* Effect.promise(freePort)
        yield* Layer.build(MetricsListener.layer({ host: "127.0.0.1", port, version: TestServer.VERSION }))
        const prometheus = withPrometheus ? yield* Prometheus.start(`127.0.0.1:${port}`) : undefined
        const before = fromText(parse((yield* scrape(port)).text))

        for (let i = 0; i < 3; i++) {
          const refused = yield* raw("POST", "/admin/login", {
            body: { username: TestServer.ADMIN_USERNAME, password: "not the password" }
          })
          expect(refused.status).toBe(401)
        }
        // Five failures of a name from one address are free; the sixth attempt waits, refused unchecked.
        for (let i = 0; i < 6; i++) {
          yield* raw("POST", "/tenants/login", { body: { name: "nobody-here", password: "not the password" } })
        }
        yield* setProviderConfig(EDGE_ACCOUNT)
        const { createPod, creds, headers, session, tenant } = yield* workspace
        const cluster = yield* SimulatedCluster.ClusterSwitches
        yield* cluster.failApplies("etcd is read-only")
        const failed = yield* raw("POST", "/vpcs", {
          headers,
          body: { ...creds, name: "failing", enable_internet: false }
        })
        expect(failed.body).toMatchObject({ applied: false })
        yield* cluster.heal
        const taken = yield* raw("POST", "/vpcs", {
          headers,
          body: { ...creds, name: "failing", enable_internet: false }
        })
        expect(taken.status).toBe(409)
        const vpcs = yield* raw("GET", "/vpcs", { headers })
        expect(vpcs.status).toBe(200)
        const pod = (yield* createPod({ service_port: 8080 })).body as { id: string }
        const tunnel = (subdomain: string) =>
          raw("POST", `/pods/${pod.id}/tunnel`, {
            headers,
            body: { tunnel_name: uniqueName("tun"), subdomain, protocol_type: "http" }
          })
        expect((yield* tunnel("shop")).body).toMatchObject({ status: "active" })
        const edge = yield* SimulatedEdge.EdgeSwitches
        yield* edge.setAvailable(false)
        expect((yield* tunnel("blog")).body).toMatchObject({ status: "error" })
        // One pass while the provider is still down: the VPC converges, the tunnel stays behind.
        yield* Reconciler.measuredPass

        const finished = Date.now()
        const scraped = yield* scrape(port)
        expect(scraped.status).toBe(200)
        yield* expectScenario(since(before, fromText(parse(scraped.text))))
        if (prometheus !== undefined) {
          yield* prometheus.scrapedAfter(finished)
          yield* expectScenario(since(before, fromPrometheus(prometheus)))
          // What ships for operators queries these series: each expression runs, and the
          // dashboard's panels show data after this scenario (a rate needs a second scrape).
          yield* prometheus.scrapedAfter(Date.now())
          for (const expression of Operations.alertExpressions()) yield* prometheus.query(expression)
          for (const { expression, title } of Operations.dashboardQueries()) {
            const series = yield* prometheus.query(expression)
            expect(series.length, `${title}: ${expression}`).toBeGreaterThan(0)
          }
        }
        // Bounded labels: no tenant's name or id, no token.
        for (const identifying of [tenant.id, tenant.name, session.api_token, (failed.body as { id: string }).id]) {
          expect(scraped.text).not.toContain(identifying)
        }
        // The API's own port does not serve them.
        expect((yield* raw("GET", "/metrics")).status).toBe(404)
      }),
    60_000
  )
})
