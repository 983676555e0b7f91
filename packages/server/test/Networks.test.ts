import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { Effect } from "effect"
import { adminLogin, newTenant, raw, setProviderConfig, testServer, uniqueName } from "./Harness.js"

/** A tenant with raw-request helpers that carry its token in header and body. */
const tenant = Effect.gen(function*() {
  const t = yield* newTenant()
  const headers = { "x-auth-token": t.session.api_token }
  const creds = { token: t.session.api_token, tenant_id: t.tenant.id }
  const createVpc = (name = uniqueName("vpc"), enable_internet = true) =>
    raw("POST", "/vpcs", { headers, body: { ...creds, name, enable_internet } })
  const createSubnet = (vpc_id: string, cidr: string, gateway_ip: string, name = uniqueName("net")) =>
    raw("POST", "/subnets", { headers, body: { ...creds, vpc_id, name, cidr, gateway_ip } })
  return { ...t, headers, creds, createVpc, createSubnet }
})

type Json = Record<string, unknown>

layer(testServer(), { excludeTestServices: true })("VPCs", (it) => {
  it.effect("create answers the VPC, applied, and lists it; names are unique per tenant only", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const b = yield* tenant
      const created = yield* a.createVpc("prod", false)
      expect(created.status).toBe(200)
      expect(created.body).toMatchObject({
        tenant_id: a.tenant.id,
        name: "prod",
        enable_internet: false,
        applied: true,
        apply_error: null
      })
      const list = yield* raw("GET", "/vpcs", { headers: a.headers })
      expect((list.body as Array<Json>).map((v) => v.name)).toEqual(["prod"])
      expect((yield* a.createVpc("prod")).status).toBe(409)
      expect((yield* b.createVpc("prod")).status).toBe(200)
      expect((yield* raw("GET", "/vpcs", { headers: b.headers })).body as Array<Json>).toHaveLength(1)
    }))

  it.effect("the body's token and tenant_id must name the caller", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const b = yield* tenant
      const body = { name: "x1", enable_internet: true }
      const foreignToken = yield* raw("POST", "/vpcs", {
        headers: a.headers,
        body: { ...body, token: b.session.api_token, tenant_id: a.tenant.id }
      })
      expect(foreignToken.status).toBe(401)
      const foreignTenant = yield* raw("POST", "/vpcs", {
        headers: a.headers,
        body: { ...body, token: a.session.api_token, tenant_id: b.tenant.id }
      })
      expect(foreignTenant.status).toBe(403)
      const bogus = yield* raw("POST", "/vpcs", {
        headers: a.headers,
        body: { ...body, token: "nope", tenant_id: a.tenant.id }
      })
      expect(bogus.status).toBe(401)
      const missing = yield* raw("POST", "/vpcs", { headers: a.headers, body })
      expect(missing.status).toBe(400)
      expect((yield* raw("GET", "/vpcs", { headers: a.headers })).body).toEqual([])
    }))

  it.effect("invalid names are 400", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      for (const name of ["Prod", "-x", "a_b", "", "x".repeat(64)]) {
        expect((yield* a.createVpc(name)).status, name).toBe(400)
      }
    }))

  it.effect("a new VPC has exactly the seeded rule", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const vpc = (yield* a.createVpc()).body as Json
      const list = yield* raw("GET", `/security-rules?vpc_id=${vpc.id}`, { headers: a.headers })
      expect(list.status).toBe(200)
      const body = list.body as { rules: Array<Json>; implied: Array<Json>; applied: boolean; apply_error: unknown }
      expect(body.rules).toHaveLength(1)
      expect(body.rules[0]).toMatchObject({
        name: "Allow internal traffic",
        direction: "ingress",
        action: "allow",
        priority: 2000,
        protocol: "all",
        ports: null,
        remote_type: "vpc",
        remote_vpc_id: vpc.id,
        remote_cidr: null,
        target_type: "vpc",
        target_subnet_id: null,
        target_pod_ids: null,
        enabled: true,
        status: "active"
      })
      expect(body.implied).toEqual([
        { key: "implied-allow-infrastructure", direction: "ingress", action: "allow" },
        { key: "implied-allow-egress", direction: "egress", action: "allow" },
        { key: "implied-deny-ingress", direction: "ingress", action: "deny" }
      ])
      expect(body).toMatchObject({ applied: true, apply_error: null })
    }))

  it.effect("delete answers 204, cascades to subnets and rules, and is 404 for another tenant", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const b = yield* tenant
      const vpc = (yield* a.createVpc()).body as Json
      const subnet = (yield* a.createSubnet(vpc.id as string, "10.0.0.0/24", "10.0.0.1")).body as Json
      expect((yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: b.headers })).status).toBe(404)
      expect((yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: a.headers })).status).toBe(204)
      expect((yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: a.headers })).status).toBe(404)
      expect((yield* raw("GET", "/subnets", { headers: a.headers })).body).toEqual([])
      expect((yield* raw("GET", `/security-rules?vpc_id=${vpc.id}`, { headers: a.headers })).status).toBe(404)
      const cluster = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (s) => s.snapshot)
      expect(cluster.vpcs.some((v) => v.vpc_id === vpc.id)).toBe(false)
      expect(cluster.subnets.some((s) => s.subnet_id === subnet.id)).toBe(false)
    }))

  it.effect("a VPC the cluster cannot delete stays, with a 503", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const vpc = (yield* a.createVpc()).body as Json
      const cluster = yield* SimulatedCluster.ClusterSwitches
      yield* cluster.setReachable(false)
      const refused = yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: a.headers })
      yield* cluster.heal
      expect(refused.status).toBe(503)
      expect((yield* raw("GET", "/vpcs", { headers: a.headers })).body as Array<Json>).toHaveLength(1)
    }))

  it.effect("deleting a tenant removes its VPCs from the cluster", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const vpc = (yield* a.createVpc()).body as Json
      const admin = yield* adminLogin
      expect(
        (yield* raw("DELETE", `/tenants/${a.tenant.id}`, { headers: { "x-admin-token": admin.api_token } })).status
      )
        .toBe(204)
      const cluster = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (s) => s.snapshot)
      expect(cluster.vpcs.some((v) => v.vpc_id === vpc.id)).toBe(false)
    }))
})

layer(testServer(), { excludeTestServices: true })("subnets", (it) => {
  it.effect("create and list; the cluster gets the subnet", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const vpc = (yield* a.createVpc()).body as Json
      const created = yield* a.createSubnet(vpc.id as string, "10.20.0.0/16", "10.20.0.1", "web")
      expect(created.status).toBe(200)
      expect(created.body).toMatchObject({
        vpc_id: vpc.id,
        tenant_id: a.tenant.id,
        name: "web",
        cidr: "10.20.0.0/16",
        gateway_ip: "10.20.0.1"
      })
      const list = yield* raw("GET", "/subnets", { headers: a.headers })
      expect((list.body as Array<Json>).map((s) => s.name)).toEqual(["web"])
      const cluster = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (s) => s.snapshot)
      expect(cluster.subnets).toContainEqual(
        expect.objectContaining({ subnet_id: (created.body as Json).id, cidr: "10.20.0.0/16" })
      )
    }))

  it.effect("CIDRs are IPv4 networks, gateways usable hosts inside them", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const vpc = (yield* a.createVpc()).body as Json
      for (
        const [cidr, gateway] of [
          ["2001:db8::/64", "2001:db8::1"],
          ["10.0.0.1/24", "10.0.0.2"],
          ["10.0.0.0/24", "10.0.1.1"],
          ["10.0.0.0/24", "10.0.0.0"],
          ["10.0.0.0/24", "10.0.0.255"],
          ["10.0.0.0/31", "10.0.0.1"],
          ["10.0.0.0/4", "10.0.0.1"],
          ["10.0.0.0/24", "not-an-ip"]
        ]
      ) {
        const response = yield* a.createSubnet(vpc.id as string, cidr!, gateway!)
        expect(response.status, `${cidr} ${gateway}`).toBe(400)
        expect(typeof (response.body as { detail: unknown }).detail).toBe("string")
      }
      expect((yield* raw("GET", "/subnets", { headers: a.headers })).body).toEqual([])
    }))

  it.effect("subnets of one VPC must not overlap (409 naming the other); other VPCs may reuse blocks", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const one = (yield* a.createVpc()).body as Json
      const two = (yield* a.createVpc()).body as Json
      expect((yield* a.createSubnet(one.id as string, "10.1.0.0/16", "10.1.0.1", "big")).status).toBe(200)
      const clash = yield* a.createSubnet(one.id as string, "10.1.4.0/24", "10.1.4.1")
      expect(clash.status).toBe(409)
      expect((clash.body as { detail: string }).detail).toBe("cidr 10.1.4.0/24 overlaps subnet 'big' (10.1.0.0/16)")
      expect((yield* a.createSubnet(two.id as string, "10.1.4.0/24", "10.1.4.1")).status).toBe(200)
      expect((yield* a.createSubnet(one.id as string, "10.2.0.0/24", "10.2.0.1", "big")).status).toBe(409)
    }))

  it.effect("the VPC must be the caller's: unknown or foreign is 404", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const b = yield* tenant
      const theirs = (yield* b.createVpc()).body as Json
      expect((yield* a.createSubnet(theirs.id as string, "10.0.0.0/24", "10.0.0.1")).status).toBe(404)
      expect((yield* a.createSubnet("00000000-0000-4000-8000-000000000000", "10.0.0.0/24", "10.0.0.1")).status).toBe(
        404
      )
      expect((yield* raw("GET", "/subnets", { headers: b.headers })).body).toEqual([])
    }))

  it.effect("a block overlapping the platform's peering subnet is refused", () =>
    Effect.gen(function*() {
      yield* setProviderConfig()
      const a = yield* tenant
      const vpc = (yield* a.createVpc()).body as Json
      const response = yield* a.createSubnet(vpc.id as string, "100.64.10.0/24", "100.64.10.1")
      expect(response.status).toBe(409)
      expect((response.body as { detail: string }).detail).toContain("peering subnet")
    }))
})
