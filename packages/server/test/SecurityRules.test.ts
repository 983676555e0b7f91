import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { NetworkApplier } from "@tenet/core"
import { Effect } from "effect"
import { newTenant, raw, setProviderConfig, testServer, uniqueName } from "./Harness.js"

type Json = Record<string, any>

/** A tenant with one VPC (and a subnet in it), and helpers for its rules. */
const setup = Effect.gen(function*() {
  // The platform's uplink: VPCs reach the internet, and the internet what is published.
  yield* setProviderConfig()
  const t = yield* newTenant()
  const headers = { "x-auth-token": t.session.api_token }
  const creds = { token: t.session.api_token, tenant_id: t.tenant.id }
  const vpc =
    (yield* raw("POST", "/vpcs", { headers, body: { ...creds, name: uniqueName("vpc"), enable_internet: true } }))
      .body as Json
  const subnet = (yield* raw("POST", "/subnets", {
    headers,
    body: { ...creds, vpc_id: vpc.id, name: "web", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" }
  })).body as Json
  const base = {
    vpc_id: vpc.id,
    name: "https in",
    direction: "ingress",
    action: "allow",
    priority: 100,
    protocol: "tcp",
    ports: "443",
    remote_type: "cidr",
    remote_cidr: "0.0.0.0/0"
  }
  const create = (overrides: Json = {}) => raw("POST", "/security-rules", { headers, body: { ...base, ...overrides } })
  const patch = (id: string, body: Json) => raw("PATCH", `/security-rules/${id}`, { headers, body })
  const list = Effect.map(raw("GET", `/security-rules?vpc_id=${vpc.id}`, { headers }), (r) => r.body as Json)
  const secondVpc = () =>
    Effect.map(
      raw("POST", "/vpcs", { headers, body: { ...creds, name: uniqueName("vpc"), enable_internet: true } }),
      (r) => r.body as Json
    )
  return { ...t, headers, creds, vpc, subnet, base, create, patch, list, secondVpc }
})

const expect422 = (response: { status: number; body: unknown }, field: string) => {
  expect(response.status, JSON.stringify(response.body)).toBe(422)
  expect((response.body as Json).detail.field).toBe(field)
  expect(typeof (response.body as Json).detail.message).toBe("string")
  // Every refusal of bad input lists its problems, the semantic ones (ports on icmp) too.
  expect((response.body as Json).errors[0]).toEqual((response.body as Json).detail)
}

layer(testServer(), { excludeTestServices: true })("security rules", (it) => {
  it.effect("create answers 201 with the rule, its defaults, and applied state", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const created = yield* s.create({ ports: undefined, protocol: undefined, remote_cidr: "10.9.8.7/16" })
      expect(created.status).toBe(201)
      const body = created.body as Json
      expect(Object.keys(body).sort()).toEqual(["applied", "apply_error", "rule"])
      expect(body).toMatchObject({ applied: true, apply_error: null })
      expect(body.rule).toMatchObject({
        vpc_id: s.vpc.id,
        name: "https in",
        description: null,
        protocol: "all",
        ports: null,
        remote_cidr: "10.9.0.0/16",
        target_type: "vpc",
        enabled: true,
        status: "active"
      })
      const got = yield* raw("GET", `/security-rules/${body.rule.id}`, { headers: s.headers })
      expect(got.body).toEqual(body.rule)
    }))

  it.effect("each validation cause is 422 naming the field, and creates nothing", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const other = yield* newTenant()
      const theirs = (yield* raw("POST", "/vpcs", {
        headers: { "x-auth-token": other.session.api_token },
        body: { token: other.session.api_token, tenant_id: other.tenant.id, name: "theirs", enable_internet: true }
      })).body as Json
      const cases: Array<[Json, string]> = [
        [{ remote_cidr: "2001:db8::/32" }, "remote_cidr"],
        [{ remote_cidr: "10.0.0.0/33" }, "remote_cidr"],
        [{ protocol: "icmp", ports: "80" }, "ports"],
        [{ protocol: "all", ports: "80" }, "ports"],
        [{ ports: "0" }, "ports"],
        [{ ports: "65536" }, "ports"],
        [{ ports: "90-80" }, "ports"],
        [{ ports: Array.from({ length: 33 }, (_, i) => `${1000 + i}`).join(",") }, "ports"],
        [{ priority: 0 }, "priority"],
        [{ priority: 2001 }, "priority"],
        [{ priority: 1.5 }, "priority"],
        [{ name: "" }, "name"],
        [{ name: "x".repeat(129) }, "name"],
        [{ description: "x".repeat(1025) }, "description"],
        [{ direction: "inbound" }, "direction"],
        [{ action: "ALLOW" }, "action"],
        [{ protocol: "sctp" }, "protocol"],
        [{ remote_cidr: null }, "remote_cidr"],
        [{ remote_vpc_id: s.vpc.id }, "remote_vpc_id"],
        [{ remote_type: "vpc", remote_cidr: null }, "remote_vpc_id"],
        [{ remote_type: "vpc", remote_cidr: null, remote_vpc_id: theirs.id }, "remote_vpc_id"],
        [{ target_type: "subnet" }, "target_subnet_id"],
        [{ target_type: "subnet", target_subnet_id: "00000000-0000-4000-8000-000000000000" }, "target_subnet_id"],
        [{ target_type: "pods", target_pod_ids: [] }, "target_pod_ids"],
        [{ target_type: "pods", target_pod_ids: ["00000000-0000-4000-8000-000000000001"] }, "target_pod_ids"],
        [
          { target_type: "pods", target_pod_ids: Array.from({ length: 65 }, () => crypto.randomUUID()) },
          "target_pod_ids"
        ],
        [{ target_subnet_id: s.subnet.id }, "target_subnet_id"],
        [{ remote_type: "anything" }, "remote_type"]
      ]
      for (const [overrides, field] of cases) expect422(yield* s.create(overrides), field)
      expect((yield* s.list).rules).toHaveLength(1)
    }))

  it.effect("the VPC must be the caller's: unknown or foreign is 404 for create and list", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const other = yield* setup
      expect((yield* s.create({ vpc_id: other.vpc.id })).status).toBe(404)
      expect((yield* s.create({ vpc_id: "00000000-0000-4000-8000-000000000000" })).status).toBe(404)
      expect((yield* raw("GET", `/security-rules?vpc_id=${other.vpc.id}`, { headers: s.headers })).status).toBe(404)
      // A malformed id in the query string is an invalid parameter (400), as on every endpoint.
      const malformed = yield* raw("GET", "/security-rules?vpc_id=nope", { headers: s.headers })
      expect(malformed).toMatchObject({
        status: 400,
        body: { errors: [{ field: "vpc_id", message: "must be a VPC id (UUID); got \"nope\"" }] }
      })
    }))

  it.effect("another tenant's rule is 404 to get, patch and delete, and stays unchanged", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const other = yield* setup
      const rule = ((yield* other.create()).body as Json).rule
      expect((yield* raw("GET", `/security-rules/${rule.id}`, { headers: s.headers })).status).toBe(404)
      expect((yield* s.patch(rule.id, { name: "stolen" })).status).toBe(404)
      expect((yield* raw("DELETE", `/security-rules/${rule.id}`, { headers: s.headers })).status).toBe(404)
      expect((yield* raw("GET", `/security-rules/${rule.id}`, { headers: other.headers })).body).toEqual(rule)
      expect((yield* raw("GET", "/security-rules/00000000-0000-4000-8000-000000000000", { headers: s.headers })).status)
        .toBe(404)
    }))

  it.effect("list is in evaluation order: priority, then deny before allow, then creation order", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const a = ((yield* s.create({ name: "a", priority: 50 })).body as Json).rule
      const b = ((yield* s.create({ name: "b", priority: 10, action: "allow" })).body as Json).rule
      const c = ((yield* s.create({ name: "c", priority: 10, action: "deny" })).body as Json).rule
      const d = ((yield* s.create({ name: "d", priority: 10, action: "deny" })).body as Json).rule
      const names = ((yield* s.list).rules as Array<Json>).map((r) => r.name)
      expect(names).toEqual([c.name, d.name, b.name, a.name, "Allow internal traffic"])
    }))

  it.effect("PATCH changes only the fields present", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const rule = ((yield* s.create({ description: "keep me" })).body as Json).rule
      const patched = yield* s.patch(rule.id, { name: "renamed", enabled: false })
      expect(patched.status).toBe(200)
      const body = patched.body as Json
      expect(body.rule).toEqual({
        ...rule,
        name: "renamed",
        enabled: false,
        status: "disabled",
        updated_at: body.rule.updated_at,
        etag: patched.headers["etag"]
      })
      expect(body.rule.etag).not.toBe(rule.etag)
      expect(body).toMatchObject({ applied: true, apply_error: null })
    }))

  it.effect("changing remote_type or target_type needs the companion and clears the stale one", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const rule = ((yield* s.create()).body as Json).rule
      expect422(yield* s.patch(rule.id, { remote_type: "vpc" }), "remote_vpc_id")
      const toVpc = ((yield* s.patch(rule.id, { remote_type: "vpc", remote_vpc_id: s.vpc.id })).body as Json).rule
      expect(toVpc).toMatchObject({ remote_type: "vpc", remote_vpc_id: s.vpc.id, remote_cidr: null })
      expect422(yield* s.patch(rule.id, { target_type: "subnet" }), "target_subnet_id")
      const toSubnet =
        ((yield* s.patch(rule.id, { target_type: "subnet", target_subnet_id: s.subnet.id })).body as Json).rule
      expect(toSubnet).toMatchObject({ target_type: "subnet", target_subnet_id: s.subnet.id })
      const back =
        ((yield* s.patch(rule.id, { target_type: "vpc", remote_type: "cidr", remote_cidr: "192.168.0.0/16" }))
          .body as Json).rule
      expect(back).toMatchObject({
        target_type: "vpc",
        target_subnet_id: null,
        remote_type: "cidr",
        remote_cidr: "192.168.0.0/16",
        remote_vpc_id: null
      })
    }))

  it.effect("ports are re-validated when the protocol changes; vpc_id cannot change", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const rule = ((yield* s.create({ ports: "80,443" })).body as Json).rule
      expect422(yield* s.patch(rule.id, { protocol: "icmp" }), "ports")
      const icmp = ((yield* s.patch(rule.id, { protocol: "icmp", ports: null })).body as Json).rule
      expect(icmp).toMatchObject({ protocol: "icmp", ports: null })
      expect422(yield* s.patch(rule.id, { ports: "22" }), "ports")
      const other = yield* s.secondVpc()
      expect422(yield* s.patch(rule.id, { vpc_id: other.id }), "vpc_id")
      expect(((yield* raw("GET", `/security-rules/${rule.id}`, { headers: s.headers })).body as Json).vpc_id).toBe(
        s.vpc.id
      )
    }))

  it.effect("delete answers 200 with rule null and the apply state", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const rule = ((yield* s.create()).body as Json).rule
      const deleted = yield* raw("DELETE", `/security-rules/${rule.id}`, { headers: s.headers })
      expect(deleted.status).toBe(200)
      expect(deleted.body).toEqual({ rule: null, applied: true, apply_error: null })
      expect((yield* raw("DELETE", `/security-rules/${rule.id}`, { headers: s.headers })).status).toBe(404)
    }))

  it.effect("the seeded rule is editable and deletable, and never comes back", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const seeded = ((yield* s.list).rules as Array<Json>)[0]!
      expect((yield* s.patch(seeded.id, { priority: 1500 })).status).toBe(200)
      expect((yield* raw("DELETE", `/security-rules/${seeded.id}`, { headers: s.headers })).status).toBe(200)
      yield* s.create()
      expect(((yield* s.list).rules as Array<Json>).map((r) => r.name)).toEqual(["https in"])
    }))

  it.effect("reorder issues 10, 20, 30, ... in the order given", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const seeded = ((yield* s.list).rules as Array<Json>)[0]!
      const a = ((yield* s.create({ name: "a", priority: 5 })).body as Json).rule
      const b = ((yield* s.create({ name: "b", priority: 7 })).body as Json).rule
      const response = yield* raw("POST", "/security-rules/reorder", {
        headers: s.headers,
        body: { vpc_id: s.vpc.id, rule_ids: [seeded.id, b.id, a.id] }
      })
      expect(response.status).toBe(200)
      const body = response.body as Json
      expect(body.rules.map((r: Json) => [r.name, r.priority])).toEqual([
        ["Allow internal traffic", 10],
        ["b", 20],
        ["a", 30]
      ])
      expect(body.implied).toHaveLength(3)
    }))

  it.effect("reorder errors: duplicate or missing ids are 422; a rule of another VPC or a foreign VPC is 404", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const other = yield* setup
      const seeded = ((yield* s.list).rules as Array<Json>)[0]!
      const a = ((yield* s.create()).body as Json).rule
      const reorder = (body: Json) => raw("POST", "/security-rules/reorder", { headers: s.headers, body })
      expect422(yield* reorder({ vpc_id: s.vpc.id, rule_ids: [seeded.id, a.id, a.id] }), "rule_ids")
      expect422(yield* reorder({ vpc_id: s.vpc.id, rule_ids: [a.id] }), "rule_ids")
      const foreignRule = ((yield* other.list).rules as Array<Json>)[0]!
      expect((yield* reorder({ vpc_id: s.vpc.id, rule_ids: [seeded.id, a.id, foreignRule.id] })).status).toBe(404)
      expect((yield* reorder({ vpc_id: other.vpc.id, rule_ids: [foreignRule.id] })).status).toBe(404)
      expect(((yield* s.list).rules as Array<Json>).map((r) => r.priority)).toEqual([100, 2000])
    }))

  it.effect("200 rules per VPC holds under 50 concurrent creates", () =>
    Effect.gen(function*() {
      const s = yield* setup
      yield* Effect.forEach(Array.from({ length: 189 }, (_, i) => i), (i) => s.create({ name: `r${i}` }), {
        concurrency: 8,
        discard: true
      })
      const results = yield* Effect.all(Array.from({ length: 50 }, (_, i) => s.create({ name: `c${i}` })), {
        concurrency: "unbounded"
      })
      expect(results.filter((r) => r.status === 201)).toHaveLength(10)
      const refused = results.filter((r) => r.status === 409)
      expect(refused).toHaveLength(40)
      expect((refused[0]!.body as Json).detail).toContain("200 rules")
      expect((yield* s.list).rules).toHaveLength(200)
    }), { timeout: 60_000 })

  it.effect("rules whose remote VPC or target subnet is gone report it and leave enforcement", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const peer = yield* s.secondVpc()
      const rule =
        ((yield* s.create({ remote_type: "vpc", remote_cidr: null, remote_vpc_id: peer.id })).body as Json).rule
      expect(rule.status).toBe("active")
      expect((yield* raw("DELETE", `/vpcs/${peer.id}`, { headers: s.headers })).status).toBe(204)
      const after = ((yield* s.list).rules as Array<Json>).find((r) => r.id === rule.id)!
      expect(after.status).toBe("remote_vpc_missing")
      const plans = (yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)).plans
      const plan = plans.find((p) => p.vpc_id === s.vpc.id)!
      expect(plan.entries.map((e) => e.rule_id)).not.toContain(rule.id)
      expect(plan.entries.map((e) => e.rule_id)).toHaveLength(1)
    }))

  it.effect("an address set's edit answers whether every VPC whose rules name it is in force, naming each that is not", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const other = yield* s.secondVpc()
      const set = (yield* raw("POST", "/address-sets", {
        headers: s.headers,
        body: { name: uniqueName("offices"), entries: [{ cidr: "198.51.100.0/24" }] }
      })).body as Json
      for (const vpc of [s.vpc, other]) {
        const made = yield* s.create({
          vpc_id: vpc.id,
          ports: "22",
          remote_type: "address_set",
          remote_cidr: undefined,
          remote_address_set_id: set.id
        })
        expect(made.status, JSON.stringify(made.body)).toBe(201)
      }
      const edit = (cidr: string) =>
        raw("PATCH", `/address-sets/${set.id}`, { headers: s.headers, body: { entries: [{ cidr }] } })
      expect((yield* edit("203.0.113.0/24")).body).toMatchObject({ applied: true, apply_error: null })

      const cluster = yield* SimulatedCluster.ClusterSwitches
      yield* cluster.failApplies("admission webhook unavailable")
      const refused = yield* edit("192.0.2.0/24")
      yield* cluster.heal
      // Saved all the same (the reconciler applies it), and said to be not yet in force, VPC by VPC.
      expect(refused.status).toBe(200)
      expect(refused.body).toMatchObject({
        entries: [{ cidr: "192.0.2.0/24" }],
        applied: false,
        apply_error: `VPC ${s.vpc.name}: applyVpc: admission webhook unavailable; ` +
          `VPC ${other.name}: applyVpc: admission webhook unavailable`
      })
      // The set's own view says nothing of it: it is the write that was, or was not, brought into force.
      expect(Object.keys((yield* raw("GET", `/address-sets/${set.id}`, { headers: s.headers })).body as Json))
        .not.toContain("applied")
      const applier = yield* NetworkApplier.NetworkApplier
      expect(yield* applier.reconcile).toBeGreaterThanOrEqual(2)
      expect(yield* s.list).toMatchObject({ applied: true, apply_error: null })
    }))

  it.effect("a failed apply is saved and reported, and the reconciler converges once the cluster recovers", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const cluster = yield* SimulatedCluster.ClusterSwitches
      yield* cluster.failApplies("admission webhook unavailable")
      const created = yield* s.create({ name: "while down" })
      yield* cluster.heal
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({ applied: false, apply_error: "applyVpc: admission webhook unavailable" })
      expect(yield* s.list).toMatchObject({ applied: false, apply_error: "applyVpc: admission webhook unavailable" })
      const applier = yield* NetworkApplier.NetworkApplier
      expect(yield* applier.reconcile).toBeGreaterThanOrEqual(1)
      expect(yield* s.list).toMatchObject({ applied: true, apply_error: null })
      const plan = (yield* cluster.snapshot).plans.find((p) => p.vpc_id === s.vpc.id)!
      expect(plan.entries.map((e) => e.rule_id)).toContain((created.body as Json).rule.id)
    }))

  it.effect("evaluate answers whether every flow, some or none is allowed, and what decides a flow of each", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const https = ((yield* s.create()).body as Json).rule
      yield* s.create({ name: "block ssh", action: "deny", priority: 50, ports: "22" })
      // The internet reaches only what is published: this pod's service port, tcp and udp.
      const web = (yield* raw("POST", "/pods", {
        headers: s.headers,
        body: {
          ...s.creds,
          vpc_id: s.vpc.id,
          subnet_id: s.subnet.id,
          name: "web",
          container_image: "nginx:1.27",
          service_port: 443,
          external_access: true,
          external_inbound: true
        }
      })).body as Json
      const evaluate = (body: Json) =>
        raw("POST", "/security-rules/evaluate", { headers: s.headers, body: { vpc_id: s.vpc.id, ...body } })
      const allowed = yield* evaluate({
        direction: "ingress",
        protocol: "tcp",
        port: 443,
        remote_ip: "203.0.113.9",
        target_pod_id: web.id
      })
      expect(allowed.body).toMatchObject({
        reach: "allowed",
        allowed: true,
        allowed_flow: {
          flow: { direction: "ingress", protocol: "tcp", port: 443, remote_ip: "203.0.113.9" },
          action: "allow",
          decided_by: { kind: "rule", rule_id: https.id, name: "https in" }
        },
        denied_flow: null
      })
      const unruled = yield* evaluate({
        direction: "ingress",
        protocol: "udp",
        port: 443,
        remote_ip: "203.0.113.9",
        target_pod_id: web.id
      })
      expect(unruled.body).toMatchObject({
        reach: "denied",
        allowed: false,
        allowed_flow: null,
        denied_flow: { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } }
      })
      // Nothing is published on 8080: no packet from the internet gets there, whatever the rules.
      const unpublished = yield* evaluate({
        direction: "ingress",
        protocol: "tcp",
        port: 8080,
        remote_ip: "203.0.113.9",
        target_pod_id: web.id
      })
      expect(unpublished.body).toMatchObject({
        reach: "denied",
        denied_flow: {
          action: "deny",
          decided_by: { kind: "path", reason: "not_published", detail: "pod 'web' is published on tcp 443 only" }
        }
      })
      // The subnet's other addresses are never published: some of its flows on 443 get there, some do not.
      expect(
        (yield* evaluate({
          direction: "ingress",
          protocol: "tcp",
          port: 443,
          remote_ip: "203.0.113.9",
          target_subnet_id: s.subnet.id
        })).body
      ).toMatchObject({ reach: "partial", denied_flow: { decided_by: { kind: "path" } } })
      const internal = yield* evaluate({ direction: "ingress", protocol: "udp", port: 53, remote_vpc_id: s.vpc.id })
      expect(internal.body).toMatchObject({
        reach: "allowed",
        allowed_flow: { decided_by: { kind: "rule", name: "Allow internal traffic" } }
      })
      const egress = yield* evaluate({ direction: "egress", protocol: "icmp", remote_ip: "8.8.8.8" })
      expect(egress.body).toMatchObject({
        reach: "allowed",
        allowed_flow: { flow: { port: null }, decided_by: { kind: "implied", key: "implied-allow-egress" } }
      })
      expect422(yield* evaluate({ direction: "ingress", protocol: "tcp", remote_ip: "1.2.3.4" }), "port")
      expect422(yield* evaluate({ direction: "ingress", protocol: "icmp", port: 1, remote_ip: "1.2.3.4" }), "port")
      expect422(yield* evaluate({ direction: "ingress", protocol: "tcp", port: 1 }), "remote_ip")
      expect422(yield* evaluate({ direction: "ingress", protocol: "tcp", port: 1, remote_ip: "::1" }), "remote_ip")
    }))

  it.effect("analysis names shadowed, redundant and conflicting rules", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const broad =
        ((yield* s.create({ name: "deny 20-30", action: "deny", priority: 10, ports: "20-30" })).body as Json).rule
      const narrow = ((yield* s.create({ name: "ssh from lan", priority: 20, ports: "22", remote_cidr: "10.0.0.0/8" }))
        .body as Json).rule
      const partial = ((yield* s.create({ name: "25-35", priority: 30, ports: "25-35" })).body as Json).rule
      const response = yield* raw("GET", `/security-rules/analysis?vpc_id=${s.vpc.id}`, { headers: s.headers })
      expect(response.status).toBe(200)
      const findings = (response.body as Json).findings as Array<Json>
      const of = (rule: Json) => findings.filter((f) => f.rule_id === rule.id)
      expect(of(narrow)).toEqual([{
        kind: "shadowed",
        rule_id: narrow.id,
        related_rule_ids: [broad.id],
        message: "never matches: earlier rules 'deny 20-30' (and the core network) cover all of its traffic"
      }])
      expect(of(partial).map((f) => f.kind)).toEqual(["conflict"])
      expect(of(partial)[0]!.message).toContain("'deny 20-30'")
      const other = yield* setup
      expect((yield* raw("GET", `/security-rules/analysis?vpc_id=${other.vpc.id}`, { headers: s.headers })).status)
        .toBe(404)
    }))
})
