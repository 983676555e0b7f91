/**
 * `Idempotency-Key` on the wire, on every write that honours it: sent twice, the request is
 * carried out once and both answers agree; the key with a different request is 422 and changes
 * nothing; keys are per tenant; a malformed key is 400. Runs on every store.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminLogin, EDGE_ACCOUNT, raw, setProviderConfig, testServer, uniqueName, workspace } from "./Harness.js"
import type { RawResponse } from "./Harness.js"

type Json = Record<string, any>
type Method = "POST" | "DELETE"

interface Write {
  readonly name: string
  readonly method: Method
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: Json
  /** The same request with one field changed. */
  readonly other?: Json
  /** What the write changes, as a number the test can read before and after. */
  readonly count: Effect.Effect<number, unknown, any>
}

const send = (write: Write, key: string | undefined, body = write.body) =>
  raw(write.method, write.path, {
    headers: { ...write.headers, ...(key === undefined ? {} : { "idempotency-key": key }) },
    ...(body === undefined ? {} : { body })
  })

const lengthOf = (
  path: string,
  headers: Record<string, string>,
  pick: (body: any) => ReadonlyArray<unknown> = (b) => b
) => Effect.map(raw("GET", path, { headers }), (r) => pick(r.body).length)

/** Every write that honours the key, in a fresh workspace. */
const writes = Effect.gen(function*() {
  yield* setProviderConfig(EDGE_ACCOUNT)
  const admin = { "x-admin-token": (yield* adminLogin).api_token }
  const w = yield* workspace
  const { creds, headers, subnet, vpc } = w
  const pod = (yield* w.createPod({ service_port: 8080 })).body as Json
  const podReplicas = Effect.map(
    raw("GET", "/pods", { headers }),
    (r) => (r.body as Array<Json>).find((p) => p.id === pod.id)!.replica_count as number
  )
  const tunnels = lengthOf("/tunnels", headers)
  const rule = {
    vpc_id: vpc.id,
    name: "web",
    direction: "ingress",
    action: "allow",
    priority: 100,
    protocol: "tcp",
    remote_type: "cidr",
    remote_cidr: "0.0.0.0/0",
    target_type: "vpc"
  }
  const list: ReadonlyArray<Write> = [
    {
      name: "POST /tenants",
      method: "POST",
      path: "/tenants",
      headers: admin,
      body: { name: uniqueName("idem"), password: "idempotent password" },
      other: { name: uniqueName("idem"), password: "idempotent password" },
      count: lengthOf("/tenants", admin)
    },
    {
      name: "POST /tenants/{id}/domains",
      method: "POST",
      path: `/tenants/${w.tenant.id}/domains`,
      headers: admin,
      body: { domain: `${uniqueName("d")}.example.com` },
      other: { domain: `${uniqueName("d")}.example.com` },
      count: lengthOf(`/tenants/${w.tenant.id}/domains`, admin)
    },
    {
      name: "POST /service-tunnels",
      method: "POST",
      path: "/service-tunnels",
      headers: admin,
      body: { service: uniqueName("svc"), subdomain: uniqueName("svc") },
      other: { service: uniqueName("svc"), subdomain: uniqueName("svc") },
      count: lengthOf("/service-tunnels", admin)
    },
    {
      name: "POST /vpcs",
      method: "POST",
      path: "/vpcs",
      headers,
      body: { ...creds, name: uniqueName("vpc"), enable_internet: false },
      other: { ...creds, name: uniqueName("vpc"), enable_internet: false },
      count: lengthOf("/vpcs", headers)
    },
    {
      name: "POST /subnets",
      method: "POST",
      path: "/subnets",
      headers,
      body: { ...creds, vpc_id: vpc.id, name: "db", cidr: "10.0.2.0/24", gateway_ip: "10.0.2.1" },
      other: { ...creds, vpc_id: vpc.id, name: "db", cidr: "10.0.3.0/24", gateway_ip: "10.0.3.1" },
      count: lengthOf("/subnets", headers)
    },
    {
      name: "POST /security-rules",
      method: "POST",
      path: "/security-rules",
      headers,
      body: { ...rule, ports: "443" },
      other: { ...rule, ports: "8443" },
      count: lengthOf(`/security-rules?vpc_id=${vpc.id}`, headers, (b) => b.rules)
    },
    {
      name: "POST /pods (with a tunnel)",
      method: "POST",
      path: "/pods",
      headers,
      body: {
        ...creds,
        vpc_id: vpc.id,
        subnet_id: subnet.id,
        name: "keyed",
        container_image: "nginx:1.27",
        tunnels: [{ tunnel_name: uniqueName("t"), subdomain: uniqueName("s"), protocol_type: "http" }]
      },
      other: { ...creds, vpc_id: vpc.id, subnet_id: subnet.id, name: "other", container_image: "nginx:1.27" },
      count: Effect.zipWith(lengthOf("/pods", headers), tunnels, (pods, ts) => pods * 1000 + ts)
    },
    {
      name: "POST /pods/{id}/replicas",
      method: "POST",
      path: `/pods/${pod.id}/replicas`,
      headers,
      count: podReplicas
    },
    {
      name: "DELETE /pods/{id}/replicas",
      method: "DELETE",
      path: `/pods/${pod.id}/replicas`,
      headers,
      count: podReplicas
    },
    {
      name: "POST /pods/{id}/tunnel",
      method: "POST",
      path: `/pods/${pod.id}/tunnel`,
      headers,
      body: { tunnel_name: uniqueName("t"), subdomain: uniqueName("s"), protocol_type: "http" },
      other: { tunnel_name: uniqueName("t"), subdomain: uniqueName("s"), protocol_type: "https" },
      count: tunnels
    },
    {
      name: "POST /tunnels?pod_id",
      method: "POST",
      path: `/tunnels?pod_id=${pod.id}`,
      headers,
      body: { subdomain: uniqueName("auto") },
      other: { subdomain: uniqueName("auto") },
      count: tunnels
    },
    {
      name: "POST /tenants/{id}/registry-credentials",
      method: "POST",
      path: `/tenants/${w.tenant.id}/registry-credentials`,
      headers,
      body: { name: uniqueName("reg"), server: "ghcr.io", username: "bot", password: "registry-secret" },
      other: { name: uniqueName("reg"), server: "ghcr.io", username: "bot", password: "registry-secret" },
      count: lengthOf(`/tenants/${w.tenant.id}/registry-credentials`, headers)
    }
  ]
  return { list, w }
})

/**
 * What a repeat must answer as the first did: the status code and the resource. A pod's runtime
 * (phase, replicas, whether its change is in force yet) is the cluster's of the moment: the first
 * answer may come past the apply's bound ("still being applied"), and on a real cluster it moves
 * on between the two requests; the repeat shows it as it is now.
 */
const answer = (r: RawResponse) => {
  const { status: podStatus, ...body } = (r.body ?? {}) as Json
  const { desired_replicas: _d, last_error: _e, phase: _, ready_replicas: __, ...placement } =
    typeof podStatus === "object" && podStatus !== null
      ? podStatus as Json
      : {}
  return { status: r.status, body, podStatus: typeof podStatus === "string" ? "pod-or-tunnel" : placement }
}

layer(testServer(), { excludeTestServices: true })("Idempotency-Key", (it) => {
  it.effect(
    "every keyed write is done once: the repeat answers as the first did and changes nothing",
    () =>
      Effect.gen(function*() {
        const { list } = yield* writes
        for (const write of list) {
          const before = yield* write.count
          const key = crypto.randomUUID()
          const first = yield* send(write, key)
          expect(first.status, `${write.name}: ${first.text}`).toBeLessThan(300)
          const after = yield* write.count
          expect(after, write.name).not.toBe(before)
          const again = yield* send(write, key)
          expect(answer(again), write.name).toEqual(answer(first))
          expect(yield* write.count, write.name).toBe(after)
          if (write.body !== undefined) {
            // The same body written otherwise (keys in another order) is the same request.
            const reordered = Object.fromEntries(Object.entries(write.body).reverse())
            expect((yield* send(write, key, reordered)).status, write.name).toBe(first.status)
          }
          if (write.other !== undefined) {
            const reused = yield* send(write, key, write.other)
            expect(reused.status, write.name).toBe(422)
            expect(reused.body).toEqual({ detail: expect.stringContaining("Idempotency-Key") })
            expect(yield* write.count, write.name).toBe(after)
          }
        }
      }),
    { timeout: 60_000 }
  )

  it.effect("a security rule sent twice without a key is made twice: the key is what tells a retry", () =>
    Effect.gen(function*() {
      const { headers, vpc } = yield* workspace
      const body = {
        vpc_id: vpc.id,
        name: "twice",
        direction: "ingress",
        action: "allow",
        priority: 5,
        protocol: "icmp",
        remote_type: "cidr",
        remote_cidr: "10.9.0.0/16",
        target_type: "vpc"
      }
      yield* raw("POST", "/security-rules", { headers, body })
      yield* raw("POST", "/security-rules", { headers, body })
      const rules = (yield* raw("GET", `/security-rules?vpc_id=${vpc.id}`, { headers })).body as Json
      expect(rules.rules.filter((r: Json) => r.name === "twice")).toHaveLength(2)
    }))

  it.effect("keys are per tenant: another tenant's same key is a request of its own", () =>
    Effect.gen(function*() {
      const a = yield* workspace
      const b = yield* workspace
      const key = crypto.randomUUID()
      const vpcOf = (w: typeof a) =>
        raw("POST", "/vpcs", {
          headers: { ...w.headers, "idempotency-key": key },
          body: { ...w.creds, name: "shared-key", enable_internet: false }
        })
      const first = yield* vpcOf(a)
      const second = yield* vpcOf(b)
      expect([first.status, second.status]).toEqual([200, 200])
      expect((second.body as Json).id).not.toBe((first.body as Json).id)
      expect((second.body as Json).tenant_id).toBe(b.tenant.id)
    }))

  it.effect("a malformed key is refused with 400 before anything is written; GET ignores the header", () =>
    Effect.gen(function*() {
      const { creds, headers } = yield* workspace
      const count = lengthOf("/vpcs", headers)
      const before = yield* count
      for (const key of ["has space", "x".repeat(256), "tab\tkey"]) {
        const refused = yield* raw("POST", "/vpcs", {
          headers: { ...headers, "idempotency-key": key },
          body: { ...creds, name: uniqueName("vpc"), enable_internet: false }
        })
        expect(refused.status).toBe(400)
        expect(refused.body).toEqual({
          detail: expect.stringContaining("Idempotency-Key"),
          errors: [{ field: "Idempotency-Key", message: expect.any(String) }]
        })
      }
      expect(yield* count).toBe(before)
      expect((yield* raw("GET", "/vpcs", { headers: { ...headers, "idempotency-key": "has space" } })).status).toBe(200)
    }))

  it.effect("a repeat after what the key made was deleted is 409, and makes nothing", () =>
    Effect.gen(function*() {
      const { creds, headers } = yield* workspace
      const before = yield* lengthOf("/vpcs", headers)
      const key = crypto.randomUUID()
      const body = { ...creds, name: uniqueName("gone"), enable_internet: false }
      const created = yield* raw("POST", "/vpcs", { headers: { ...headers, "idempotency-key": key }, body })
      yield* raw("DELETE", `/vpcs/${(created.body as Json).id}`, { headers })
      const again = yield* raw("POST", "/vpcs", { headers: { ...headers, "idempotency-key": key }, body })
      expect(again.status).toBe(409)
      expect(again.body).toEqual({ detail: expect.stringContaining("deleted") })
      expect(yield* lengthOf("/vpcs", headers)).toBe(before)
    }))

  it.effect("the OpenAPI document declares the header on POST and DELETE, and its 422 there alone", () =>
    Effect.gen(function*() {
      const spec = (yield* raw("GET", "/openapi.json")).body as Json
      const header = (op: Json) => (op.parameters ?? []).some((p: Json) => p.name === "Idempotency-Key")
      const keyReused = (op: Json) => JSON.stringify(op.responses?.["422"] ?? {}).includes("IdempotencyKeyReused")
      for (const [path, operations] of Object.entries(spec.paths as Record<string, Record<string, Json>>)) {
        for (const [method, op] of Object.entries(operations)) {
          const writes = method === "post" || method === "delete"
          expect(header(op), `${method} ${path}`).toBe(writes)
          expect(keyReused(op), `${method} ${path}`).toBe(writes)
        }
      }
      // A security rule's own 422 stays where the key's is taken out.
      expect(JSON.stringify(spec.paths["/security-rules/{rule_id}"].patch.responses["422"])).toContain("RuleValidation")
    }))
})
