/**
 * Every uniqueness rule and limit holds when the requests that would break it arrive at
 * once: exactly the allowed number succeed, the rest are 409, and what is stored agrees.
 * Runs on each store (memory, embedded PostgreSQL, PostgreSQL).
 */
import type { HttpClient } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { RawResponse } from "./Harness.js"
import { adminLogin, EDGE_ACCOUNT, raw, setProviderConfig, testServer, uniqueName, workspace } from "./Harness.js"

type Json = Record<string, any>

const N = 12

/** N requests at once. */
const atOnce = (request: (i: number) => Effect.Effect<RawResponse, unknown, HttpClient.HttpClient>) =>
  Effect.all(Array.from({ length: N }, (_, i) => request(i)), { concurrency: "unbounded" })

/** Exactly `allowed` succeeded with `success`, every other one was 409 with a detail. */
const expectOnly = (responses: ReadonlyArray<RawResponse>, allowed: number, success = 200) => {
  const statuses = responses.map((r) => r.status)
  expect(statuses.filter((s) => s === success), JSON.stringify(statuses)).toHaveLength(allowed)
  const refused = responses.filter((r) => r.status !== success)
  for (const r of refused) {
    expect(r.status, r.text).toBe(409)
    expect((r.body as Json).detail).toEqual(expect.any(String))
  }
}

const adminHeaders = Effect.map(adminLogin, (admin) => ({ "x-admin-token": admin.api_token }))

layer(testServer(), { excludeTestServices: true, timeout: 120_000 })("concurrent requests", (it) => {
  it.effect("one tenant name, many creates: one tenant", () =>
    Effect.gen(function*() {
      const headers = yield* adminHeaders
      const name = uniqueName("same")
      const responses = yield* atOnce(() =>
        raw("POST", "/tenants", { headers, body: { name, password: "correct horse battery" } })
      )
      expectOnly(responses, 1, 201)
      const tenants = (yield* raw("GET", "/tenants", { headers })).body as Array<Json>
      expect(tenants.filter((t) => t.name === name)).toHaveLength(1)
    }))

  it.effect("one VPC name, one pod name, one registry name per tenant: one each", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const vpcName = uniqueName("vpc")
      expectOnly(
        yield* atOnce(() =>
          raw("POST", "/vpcs", { headers: w.headers, body: { ...w.creds, name: vpcName, enable_internet: false } })
        ),
        1
      )
      const vpcs = (yield* raw("GET", "/vpcs", { headers: w.headers })).body as Array<Json>
      expect(vpcs.filter((v) => v.name === vpcName)).toHaveLength(1)

      const podName = uniqueName("pod")
      expectOnly(yield* atOnce(() => w.createPod({ name: podName })), 1)
      const pods = (yield* raw("GET", "/pods", { headers: w.headers })).body as Array<Json>
      expect(pods.filter((p) => p.name === podName)).toHaveLength(1)

      const path = `/tenants/${w.tenant.id}/registry-credentials`
      expectOnly(
        yield* atOnce(() =>
          raw("POST", path, {
            headers: w.headers,
            body: { name: "ghcr", server: "ghcr.io", username: "bot", password: "registry-password" }
          })
        ),
        1
      )
      expect((yield* raw("GET", path, { headers: w.headers })).body).toHaveLength(1)
    }))

  it.effect("overlapping subnets of one VPC: one", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const responses = yield* atOnce((i) =>
        raw("POST", "/subnets", {
          headers: w.headers,
          // Distinct names and blocks that all contain 10.0.64.0/24.
          body: {
            ...w.creds,
            vpc_id: w.vpc.id,
            name: `s${i}`,
            cidr: i % 2 === 0 ? "10.0.64.0/24" : "10.0.64.0/20",
            gateway_ip: "10.0.64.1"
          }
        })
      )
      expectOnly(responses, 1)
      const subnets = (yield* raw("GET", "/subnets", { headers: w.headers })).body as Array<Json>
      expect(subnets.filter((s) => s.cidr.startsWith("10.0.64."))).toHaveLength(1)
    }))

  it.effect("one domain, many tenants: one owner", () =>
    Effect.gen(function*() {
      const headers = yield* adminHeaders
      const tenants = yield* Effect.all(
        Array.from({ length: N }, () =>
          Effect.map(
            raw("POST", "/tenants", { headers, body: { name: uniqueName("d"), password: "correct horse battery" } }),
            (r) => r.body as Json
          )),
        { concurrency: 4 }
      )
      const domain = `${uniqueName("shared")}.example.org`
      const responses = yield* atOnce((i) =>
        raw("POST", `/tenants/${tenants[i]!.id}/domains`, { headers, body: { domain } })
      )
      expectOnly(responses, 1)
      const owners = yield* Effect.forEach(tenants, (t) =>
        Effect.map(
          raw("GET", `/tenants/${t.id}/domains`, { headers }),
          (r) => (r.body as Array<Json>).filter((d) => d.domain === domain).length
        ))
      expect(owners.reduce((a, b) => a + b, 0)).toBe(1)
    }))

  it.effect("one hostname across tenants and the platform, and one tunnel name per tenant: one each", () =>
    Effect.gen(function*() {
      yield* setProviderConfig(EDGE_ACCOUNT)
      const a = yield* workspace
      const b = yield* workspace
      const podA = (yield* a.createPod()).body as Json
      const podB = (yield* b.createPod()).body as Json
      const subdomain = uniqueName("host")
      const responses = yield* atOnce((i) => {
        const [w, pod] = i % 2 === 0 ? [a, podA] : [b, podB]
        return raw("POST", `/pods/${pod.id}/tunnel`, {
          headers: w.headers,
          body: { tunnel_name: `t${i}`, subdomain, protocol_type: "http" }
        })
      })
      expectOnly(responses, 1, 201)

      const named = yield* atOnce((i) =>
        raw("POST", `/pods/${podA.id}/tunnel`, {
          headers: a.headers,
          body: { tunnel_name: "api", subdomain: `${subdomain}-${i}`, protocol_type: "http" }
        })
      )
      expectOnly(named, 1, 201)
      const tunnels = (yield* raw("GET", "/tunnels", { headers: a.headers })).body as Array<Json>
      expect(tunnels.filter((t) => t.tunnel_name === "api")).toHaveLength(1)

      // Tenants' tunnels and platform service tunnels at once on one hostname: one owner, the
      // rest 409 (never a 201 left for the provider to refuse).
      const admin = yield* adminHeaders
      const contested = uniqueName("both")
      const mixed = yield* atOnce((i) =>
        i % 3 === 0
          ? raw("POST", "/service-tunnels", {
            headers: admin,
            body: { service: `${contested}-${i}`, subdomain: contested }
          })
          : raw("POST", `/pods/${(i % 3 === 1 ? podA : podB).id}/tunnel`, {
            headers: (i % 3 === 1 ? a : b).headers,
            body: { tunnel_name: `${contested}-${i}`, subdomain: contested, protocol_type: "http" }
          })
      )
      expectOnly(mixed, 1, 201)
      expect(mixed.find((r) => r.status === 201)?.body).toMatchObject({ status: "active" })
    }))

  it.effect("one object, many deletes: one succeeds, the rest are 404, one audit entry of success", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const admin = yield* adminHeaders
      const rule = (yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: {
          vpc_id: w.vpc.id,
          name: "doomed",
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          ports: "8080",
          remote_type: "cidr",
          remote_cidr: "10.0.0.0/8"
        }
      })).body as Json
      const guardrail = (yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
        headers: w.headers,
        body: {
          name: "doomed",
          description: null,
          require: "deny",
          direction: "ingress",
          protocol: "tcp",
          ports: "23",
          remote_cidr: "203.0.113.0/24",
          local: null
        }
      })).body as Json
      const credentials = `/tenants/${w.tenant.id}/registry-credentials`
      yield* raw("POST", credentials, {
        headers: w.headers,
        body: { name: "doomed", server: "ghcr.io", username: "bot", password: "registry-password" }
      })
      const vpc = yield* w.newVpc()
      const cases = [
        { path: `/security-rules/${rule.rule.id}`, success: 200, resource: rule.rule.id as string },
        { path: `/guardrails/${guardrail.id}`, success: 204, resource: guardrail.id as string },
        { path: `${credentials}/doomed`, success: 200, resource: "doomed" },
        { path: `/vpcs/${vpc.id}`, success: 204, resource: vpc.id as string }
      ]
      for (const { path, resource, success } of cases) {
        const responses = yield* atOnce(() => raw("DELETE", path, { headers: w.headers }))
        const statuses = responses.map((r) => r.status)
        expect(statuses.filter((s) => s === success), `${path}: ${JSON.stringify(statuses)}`).toHaveLength(1)
        for (const r of responses.filter((r) => r.status !== success)) {
          expect(r.status, `${path}: ${r.text}`).toBe(404)
          expect((r.body as Json).detail).toEqual(expect.any(String))
        }
        const audit = (yield* raw("GET", `/audit-log?resource_id=${resource}&limit=100`, { headers: admin }))
          .body as Json
        const deleted = (audit.entries as Array<Json>).filter((e) =>
          e.tenant_id === w.tenant.id && e.action.endsWith(".delete") && e.outcome === "success"
        )
        expect(deleted, path).toHaveLength(1)
      }
    }))

  it.effect("replicas stay within 1-10 under concurrent scale-ups and scale-downs", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const pod = (yield* w.createPod({ replica_count: 1 })).body as Json
      const path = `/pods/${pod.id}/replicas`
      const ups = yield* Effect.all(Array.from({ length: 20 }, () => raw("POST", path, { headers: w.headers })), {
        concurrency: "unbounded"
      })
      expectOnly(ups, 9)
      const replicas = Effect.map(
        raw("GET", "/pods", { headers: w.headers }),
        (r) => (r.body as Array<Json>).find((p) => p.id === pod.id)!.replica_count
      )
      expect(yield* replicas).toBe(10)
      const downs = yield* Effect.all(Array.from({ length: 20 }, () => raw("DELETE", path, { headers: w.headers })), {
        concurrency: "unbounded"
      })
      expectOnly(downs, 9)
      expect(yield* replicas).toBe(1)
    }))

  it.effect("concurrent reorders, deletes, creates and patches leave one consistent order", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const rule = (i: number, priority: number) => ({
        vpc_id: w.vpc.id,
        name: `r${i}`,
        direction: "ingress",
        action: i % 3 === 0 ? "deny" : "allow",
        priority,
        protocol: "tcp",
        ports: String(1000 + i),
        remote_type: "cidr",
        remote_cidr: "10.0.0.0/8"
      })
      const list = Effect.map(
        raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers }),
        (r) => (r.body as Json).rules as Array<Json>
      )
      const made = yield* Effect.forEach(
        Array.from({ length: 30 }, (_, i) => i),
        (i) =>
          Effect.map(
            raw("POST", "/security-rules", { headers: w.headers, body: rule(i, 1001 + i) }),
            (r) => (r.body as Json).rule.id as string
          ),
        { concurrency: 4 }
      )
      // With the rule every VPC starts with.
      const initial = (yield* list).map((x) => x.id as string)
      const shuffled = (ids: ReadonlyArray<string>, seed: number) =>
        [...ids].map((id, k) => [((k + 1) * 7919 * (seed + 3)) % 104729, id] as const).sort((x, y) => x[0] - y[0])
          .map(([, id]) => id)

      interface Outcome {
        readonly kind: string
        readonly id: string | undefined
        readonly response: RawResponse
      }
      const ops: Array<Effect.Effect<Outcome, unknown, HttpClient.HttpClient>> = []
      for (let k = 0; k < 8; k++) {
        const order = shuffled(initial, k)
        ops.push(Effect.map(
          raw("POST", "/security-rules/reorder", { headers: w.headers, body: { vpc_id: w.vpc.id, rule_ids: order } }),
          (response) => ({ kind: "reorder", id: undefined, response })
        ))
      }
      for (const id of made.slice(0, 6)) {
        ops.push(Effect.map(
          raw("DELETE", `/security-rules/${id}`, { headers: w.headers }),
          (response) => ({ kind: "delete", id, response })
        ))
      }
      for (let k = 0; k < 4; k++) {
        ops.push(Effect.map(
          raw("POST", "/security-rules", { headers: w.headers, body: rule(100 + k, 1501 + k) }),
          (response) => ({ kind: "create", id: undefined, response })
        ))
      }
      for (const id of made.slice(10, 16)) {
        ops.push(Effect.map(
          raw("PATCH", `/security-rules/${id}`, { headers: w.headers, body: { description: "patched" } }),
          (response) => ({ kind: "patch", id, response })
        ))
      }
      const results = yield* Effect.all(ops, { concurrency: "unbounded" })

      for (const r of results) expect(r.response.status, `${r.kind}: ${r.response.text}`).toBeLessThan(500)
      const deleted = results.filter((r) => r.kind === "delete" && r.response.status === 200).map((r) => r.id!)
      expect(deleted).toHaveLength(6)
      const created = results.filter((r) => r.kind === "create").map((r) => (r.response.body as Json).rule.id)
      expect(created).toHaveLength(4)
      expect(results.filter((r) => r.kind === "patch").every((r) => r.response.status === 200)).toBe(true)

      // A reorder either saw exactly the rules that existed and re-issued 10, 20, ... or was refused.
      for (const r of results.filter((x) => x.kind === "reorder")) {
        if (r.response.status === 200) {
          const priorities = ((r.response.body as Json).rules as Array<Json>).map((x) => x.priority)
          expect(priorities).toEqual(priorities.map((_, k) => (k + 1) * 10))
        } else {
          expect([404, 422]).toContain(r.response.status)
        }
      }

      const final = yield* list
      const expected = [...initial.filter((id) => !deleted.includes(id)), ...created].sort()
      expect(final.map((x) => x.id).sort()).toEqual(expected)
      expect(new Set(final.map((x) => x.priority)).size).toBe(final.length)
      expect(final.filter((x) => x.description === "patched")).toHaveLength(6)

      // And the order can be re-issued from what is stored now.
      const settled = yield* raw("POST", "/security-rules/reorder", {
        headers: w.headers,
        body: { vpc_id: w.vpc.id, rule_ids: final.map((x) => x.id) }
      })
      expect(settled.status).toBe(200)
      expect(((settled.body as Json).rules as Array<Json>).map((x) => x.priority)).toEqual(
        final.map((_, k) => (k + 1) * 10)
      )
    }))
})
