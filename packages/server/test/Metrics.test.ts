/**
 * The metrics listener, scraped after a scripted scenario: each count is what the scenario
 * did. The file runs in a worker of its own, so Effect's metric registry holds only its counts.
 */
import { expect, layer } from "@effect/vitest"
import { SimulatedCluster, SimulatedEdge } from "@tenet/adapters-memory"
import { Effect, Layer } from "effect"
import { MetricsListener, Reconciler, TestServer } from "../src/index.js"
import { EDGE_ACCOUNT, raw, setProviderConfig, storeUnderTest, testServer, uniqueName, workspace } from "./Harness.js"
import { freePort } from "./Loopback.js"

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

/** The value of the one sample with these labels (0 when there is none yet). */
const valueOf = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string>) => {
  const found = samples.filter((s) =>
    s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value)
  )
  expect(found.length).toBeLessThanOrEqual(1)
  return found[0]?.value ?? 0
}

const scrape = (port: number) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`)
    return { status: response.status, text: await response.text() }
  })

layer(testServer(), { excludeTestServices: true })("metrics", (it) => {
  it.scoped("a scenario's logins, calls, applies, passes and responses are counted on the metrics listener, and only there", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(freePort)
      yield* Layer.build(MetricsListener.layer({ host: "127.0.0.1", port, version: TestServer.VERSION }))

      for (let i = 0; i < 3; i++) {
        const refused = yield* raw("POST", "/admin/login", {
          body: { username: TestServer.ADMIN_USERNAME, password: "not the password" }
        })
        expect(refused.status).toBe(401)
      }
      // Five failures lock a name out (the per-name policy); the sixth attempt is refused unchecked.
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

      const scraped = yield* scrape(port)
      expect(scraped.status).toBe(200)
      const samples = parse(scraped.text)
      expect(valueOf(samples, "tenet_auth_operations_total", { kind: "admin.login", outcome: "failure" })).toBe(3)
      expect(valueOf(samples, "tenet_auth_operations_total", { kind: "admin.login", outcome: "success" }))
        .toBeGreaterThanOrEqual(1)
      expect(valueOf(samples, "tenet_auth_operations_total", { kind: "tenant.login", outcome: "success" })).toBe(1)
      expect(valueOf(samples, "tenet_auth_operations_total", { kind: "tenant.login", outcome: "failure" })).toBe(5)
      expect(valueOf(samples, "tenet_auth_operations_total", { kind: "tenant.login", outcome: "throttled" })).toBe(1)
      expect(valueOf(samples, "tenet_login_lockouts_total", { scope: "name" })).toBe(1)
      expect(valueOf(samples, "tenet_login_lockouts_total", { scope: "address" })).toBe(0)
      expect(valueOf(samples, "tenet_apply_results_total", { kind: "vpc", applied: "false" })).toBe(1)
      expect(valueOf(samples, "tenet_http_requests_total", { route: "/admin/login", method: "POST", status: "401" }))
        .toBe(3)
      expect(valueOf(samples, "tenet_http_requests_total", { route: "/vpcs", method: "GET", status: "200" })).toBe(1)
      expect(
        valueOf(samples, "tenet_http_request_duration_seconds_count", {
          route: "/vpcs",
          method: "POST",
          status: "200"
        })
      ).toBe(2)
      expect(valueOf(samples, "tenet_build_info", { store: storeUnderTest, orchestrator: "simulated" })).toBe(1)

      const backend = { backend: storeUnderTest }
      expect(valueOf(samples, "tenet_store_calls_total", { ...backend, operation: "vpcs.insert", outcome: "conflict" }))
        .toBe(1)
      expect(valueOf(samples, "tenet_store_calls_total", { ...backend, operation: "vpcs.insert", outcome: "success" }))
        .toBe(2)
      expect(valueOf(samples, "tenet_store_call_duration_seconds_count", { ...backend, operation: "vpcs.insert" }))
        .toBe(3)
      expect(valueOf(samples, "tenet_store_transactions_total", { ...backend, outcome: "committed" }))
        .toBeGreaterThanOrEqual(5)
      expect(valueOf(samples, "tenet_store_transactions_total", { ...backend, outcome: "error" })).toBe(0)
      const applyVpc = { backend: "simulated", operation: "applyVpc" }
      // The one injected failure; every call timed, whatever its outcome.
      const applied = valueOf(samples, "tenet_cluster_calls_total", { ...applyVpc, outcome: "success" })
      expect(valueOf(samples, "tenet_cluster_calls_total", { ...applyVpc, outcome: "error" })).toBe(1)
      expect(applied).toBeGreaterThanOrEqual(2)
      expect(valueOf(samples, "tenet_cluster_call_duration_seconds_count", applyVpc)).toBe(applied + 1)
      const publish = { backend: "simulated", operation: "publish" }
      expect(valueOf(samples, "tenet_tunnel_provider_calls_total", { ...publish, outcome: "success" })).toBe(1)
      expect(valueOf(samples, "tenet_tunnel_provider_calls_total", { ...publish, outcome: "unavailable" })).toBe(2)
      expect(valueOf(samples, "tenet_reconciler_passes_total", { outcome: "completed" })).toBe(1)
      expect(valueOf(samples, "tenet_reconciler_pass_duration_seconds_count", {})).toBe(1)
      expect(valueOf(samples, "tenet_reconciler_converged_total", { kind: "vpc" })).toBe(1)
      expect(valueOf(samples, "tenet_reconciler_converged_total", { kind: "tunnel" })).toBe(0)
      expect(valueOf(samples, "tenet_reconciler_backlog", { kind: "vpc" })).toBe(0)
      expect(valueOf(samples, "tenet_reconciler_backlog", { kind: "pod" })).toBe(0)
      expect(valueOf(samples, "tenet_reconciler_backlog", { kind: "tunnel" })).toBe(1)
      expect(valueOf(samples, "tenet_tunnels", { status: "active" })).toBe(1)
      expect(valueOf(samples, "tenet_tunnels", { status: "error" })).toBe(1)
      expect(valueOf(samples, "tenet_tunnels", { status: "pending" })).toBe(0)
      // Bounded labels: no tenant's name or id, no token.
      for (const identifying of [tenant.id, tenant.name, session.api_token, (failed.body as { id: string }).id]) {
        expect(scraped.text).not.toContain(identifying)
      }
      // The API's own port does not serve them.
      expect((yield* raw("GET", "/metrics")).status).toBe(404)
    }))
})
