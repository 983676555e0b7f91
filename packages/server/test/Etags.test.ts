/**
 * A version per object: every view carries its `etag`; a change sent with `If-Match` naming
 * another version is 412 and changes nothing; with the object's own, it goes through and the
 * object's etag moves (or, for a delete, the object goes). Decided inside the commit: of two
 * changes made against one version at once, one goes through and the other is 412.
 */
import { expect, layer } from "@effect/vitest"
import { SimulatedEdge } from "@tenet/adapters-memory"
import { Effect } from "effect"
import {
  adminLogin,
  asAdmin,
  EDGE_ACCOUNT,
  newTenant,
  raw,
  setProviderConfig,
  testServer,
  uniqueName,
  workspace
} from "./Harness.js"

type Json = Record<string, any>

const STALE = "\"00000000000000000000000000000000\""

const noTelnet = {
  name: "no telnet",
  require: "deny",
  direction: "ingress",
  protocol: "tcp",
  ports: "23",
  remote_cidr: "203.0.113.0/24"
}

const refusedAsStale = (response: { readonly status: number; readonly body: unknown }, what: string) => {
  expect(response.status, JSON.stringify(response.body)).toBe(412)
  expect((response.body as Json).detail).toContain(`${what} changed since ${STALE}`)
}

layer(testServer(), { excludeTestServices: true })("etags", (it) => {
  it.effect("VPCs and subnets: listed with the etag their create answered; a VPC deleted only at its own", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const vpc = yield* w.newVpc()
      expect(vpc.etag).toMatch(/^"[0-9a-f]{32}"$/)
      const listed = (yield* raw("GET", "/vpcs", { headers: w.headers })).body as Array<Json>
      expect(listed.find((v) => v.id === vpc.id)?.etag).toBe(vpc.etag)
      const subnets = (yield* raw("GET", "/subnets", { headers: w.headers })).body as Array<Json>
      expect(subnets.find((s) => s.id === w.subnet.id)?.etag).toBe(w.subnet.etag)

      refusedAsStale(
        yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: { ...w.headers, "if-match": STALE } }),
        `VPC ${vpc.id}`
      )
      const still = (yield* raw("GET", "/vpcs", { headers: w.headers })).body as Array<Json>
      expect(still.map((v) => v.id)).toContain(vpc.id)
      const deleted = yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: { ...w.headers, "if-match": vpc.etag } })
      expect(deleted.status).toBe(204)
    }))

  it.effect("pods: a configuration change moves the etag; changes against the old one are 412 and change nothing", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const pod = (yield* w.createPod()).body as Json
      expect(pod.etag).toMatch(/^"[0-9a-f]{32}"$/)
      const path = `/pods/${pod.id}`
      const changed = yield* raw("PATCH", `${path}/config`, {
        headers: { ...w.headers, "if-match": pod.etag },
        body: { env_vars: { MODE: "blue" } }
      })
      expect(changed.status, JSON.stringify(changed.body)).toBe(200)
      const now = (changed.body as Json).etag
      expect(now).not.toBe(pod.etag)

      for (
        const [method, suffix] of [["POST", "/replicas"], ["DELETE", "/replicas"], ["DELETE", ""]] as const
      ) {
        const stale = yield* raw(method, `${path}${suffix}`, { headers: { ...w.headers, "if-match": pod.etag } })
        expect(stale.status, `${method} ${suffix}`).toBe(412)
      }
      const listed = ((yield* raw("GET", "/pods", { headers: w.headers })).body as Array<Json>).find((p) =>
        p.id === pod.id
      )
      expect(listed).toMatchObject({ etag: now, replica_count: pod.replica_count, env_var_names: ["MODE"] })

      const scaled = yield* raw("POST", `${path}/replicas`, { headers: { ...w.headers, "if-match": now } })
      expect(scaled.status).toBe(200)
      const deleted = yield* raw("DELETE", path, { headers: { ...w.headers, "if-match": (scaled.body as Json).etag } })
      expect(deleted.status).toBe(204)
    }))

  it.effect("two changes made against one version at once: one goes through, the other is 412", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const pod = (yield* w.createPod()).body as Json
      const answers = yield* Effect.all(
        ["a", "b"].map((mode) =>
          raw("PATCH", `/pods/${pod.id}/config`, {
            headers: { ...w.headers, "if-match": pod.etag },
            body: { env_vars: { MODE: mode } }
          })
        ),
        { concurrency: "unbounded" }
      )
      expect(answers.map((a) => a.status).sort()).toEqual([200, 412])
    }))

  it.effect("guardrails and registry credentials: deleted only at their own etag", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const made = yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
        headers: w.headers,
        body: noTelnet
      })
      expect(made.status, JSON.stringify(made.body)).toBe(201)
      const guardrail = made.body as Json
      expect(guardrail.etag).toMatch(/^"[0-9a-f]{32}"$/)
      refusedAsStale(
        yield* raw("DELETE", `/guardrails/${guardrail.id}`, { headers: { ...w.headers, "if-match": STALE } }),
        `guardrail ${guardrail.id}`
      )
      const kept = (yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })).body as Array<Json>
      expect(kept.map((g) => g.etag)).toContain(guardrail.etag)
      expect(
        (yield* raw("DELETE", `/guardrails/${guardrail.id}`, { headers: { ...w.headers, "if-match": guardrail.etag } }))
          .status
      ).toBe(204)

      const credentials = `/tenants/${w.tenant.id}/registry-credentials`
      const credential = (yield* raw("POST", credentials, {
        headers: w.headers,
        body: { name: "ghcr", server: "ghcr.io", username: "ci-bot", password: "pull-secret-value" }
      })).body as Json
      refusedAsStale(
        yield* raw("DELETE", `${credentials}/ghcr`, { headers: { ...w.headers, "if-match": STALE } }),
        "registry credential 'ghcr'"
      )
      const removed = yield* raw("DELETE", `${credentials}/ghcr`, {
        headers: { ...w.headers, "if-match": credential.etag }
      })
      expect(removed.status).toBe(200)
      expect((removed.body as Json).etag).toBe(credential.etag)
    }))

  it.effect("tunnels and tenant-wide guardrails: deleted only at their own etag, a stale one withdrawing nothing", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const admin = { "x-admin-token": (yield* adminLogin).api_token }
      yield* setProviderConfig(EDGE_ACCOUNT)
      const pod = (yield* w.createPod({ service_port: 8080 })).body as Json
      const made = yield* raw("POST", `/pods/${pod.id}/tunnel`, {
        headers: w.headers,
        body: { tunnel_name: uniqueName("tun"), subdomain: uniqueName("sub"), protocol_type: "http" }
      })
      expect(made.status, JSON.stringify(made.body)).toBe(201)
      const tunnel = made.body as Json
      expect(tunnel).toMatchObject({ status: "active", etag: expect.stringMatching(/^"[0-9a-f]{32}"$/) })
      refusedAsStale(
        yield* raw("DELETE", `/tunnels/${tunnel.id}`, { headers: { ...w.headers, "if-match": STALE } }),
        `tunnel ${tunnel.id}`
      )
      // Refused before the provider was asked: the hostname is still routed.
      const edge = yield* SimulatedEdge.EdgeSwitches
      expect((yield* edge.routes).some((r) => r.key === tunnel.id)).toBe(true)
      const kept = (yield* raw("GET", "/tunnels", { headers: w.headers })).body as Array<Json>
      expect(kept.find((t) => t.id === tunnel.id)).toMatchObject({ status: "active", etag: tunnel.etag })
      expect(
        (yield* raw("DELETE", `/tunnels/${tunnel.id}`, { headers: { ...w.headers, "if-match": tunnel.etag } })).status
      ).toBe(204)
      expect((yield* edge.routes).some((r) => r.key === tunnel.id)).toBe(false)

      const guardrails = `/tenants/${w.tenant.id}/guardrails`
      const wide = (yield* raw("POST", guardrails, {
        headers: admin,
        body: { ...noTelnet, name: "no telnet anywhere" }
      })).body as Json
      refusedAsStale(
        yield* raw("DELETE", `${guardrails}/${wide.id}`, { headers: { ...admin, "if-match": STALE } }),
        `guardrail ${wide.id}`
      )
      const seen = (yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })).body as Array<Json>
      expect(seen.map((g) => g.etag)).toEqual([wide.etag])
      expect(
        (yield* raw("DELETE", `${guardrails}/${wide.id}`, { headers: { ...admin, "if-match": wide.etag } })).status
      )
        .toBe(204)
      expect((yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })).body).toEqual([])
    }))

  it.effect("tenants: a rotated token moves the etag; a delete against the old one is 412 and keeps everything", () =>
    Effect.gen(function*() {
      const admin = { "x-admin-token": (yield* adminLogin).api_token }
      const { session, tenant } = yield* newTenant("etag")
      expect(tenant.etag).toMatch(/^"[0-9a-f]{32}"$/)
      const rotated = yield* raw("POST", `/tenants/${tenant.id}/rotate-token`, {
        headers: { "x-auth-token": session.api_token }
      })
      expect(rotated.status, JSON.stringify(rotated.body)).toBe(200)
      const now = (yield* raw("GET", `/tenants/${tenant.id}`, { headers: admin })).body as Json
      expect(now.etag).not.toBe(tenant.etag)

      const stale = yield* raw("DELETE", `/tenants/${tenant.id}`, { headers: { ...admin, "if-match": tenant.etag } })
      expect(stale.status, JSON.stringify(stale.body)).toBe(412)
      expect((stale.body as Json).detail).toContain(`tenant ${tenant.id} changed since ${tenant.etag}`)
      expect((yield* raw("GET", `/tenants/${tenant.id}`, { headers: admin })).status).toBe(200)

      // Through the SDK, at its own version: gone.
      yield* (yield* asAdmin).tenants.delete({ path: { tenant_id: tenant.id }, headers: { "if-match": now.etag } })
      expect((yield* raw("GET", `/tenants/${tenant.id}`, { headers: admin })).status).toBe(404)
    }))
})
