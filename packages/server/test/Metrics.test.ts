/**
 * The metrics listener, scraped after a scripted scenario: each count is what the scenario
 * did. The file runs in a worker of its own, so Effect's metric registry holds only its counts.
 */
import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { Effect, Layer } from "effect"
import { MetricsListener, TestServer } from "../src/index.js"
import { newTenant, raw, storeUnderTest, testServer } from "./Harness.js"
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
  it.scoped("a scenario's logins, applies and responses are counted on the metrics listener, and only there", () =>
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
      const { session, tenant } = yield* newTenant()
      const headers = { "x-auth-token": session.api_token }
      const cluster = yield* SimulatedCluster.ClusterSwitches
      yield* cluster.failApplies("etcd is read-only")
      const failed = yield* raw("POST", "/vpcs", {
        headers,
        body: { token: session.api_token, tenant_id: tenant.id, name: "failing", enable_internet: false }
      })
      expect(failed.body).toMatchObject({ applied: false })
      yield* cluster.heal
      const vpcs = yield* raw("GET", "/vpcs", { headers })
      expect(vpcs.status).toBe(200)

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
      ).toBe(1)
      expect(valueOf(samples, "tenet_build_info", { store: storeUnderTest, orchestrator: "simulated" })).toBe(1)
      // Bounded labels: no tenant's name or id, no token.
      for (const identifying of [tenant.id, tenant.name, session.api_token, (failed.body as { id: string }).id]) {
        expect(scraped.text).not.toContain(identifying)
      }
      // The API's own port does not serve them.
      expect((yield* raw("GET", "/metrics")).status).toBe(404)
    }))
})
