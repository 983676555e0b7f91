import { expect, layer } from "@effect/vitest"
import { SimulatedEdge } from "@tenet/adapters-memory"
import { Tunnels as TunnelsUseCase } from "@tenet/core"
import { Effect } from "effect"
import { adminLogin, raw, testServer, uniqueName, workspace } from "./Harness.js"

type Json = Record<string, any>

const providerConfig = {
  external_subnet_cidr: "203.0.113.0/24",
  external_subnet_gateway: "203.0.113.1",
  peering_subnet_cidr: "100.64.0.0/16",
  edge_account_id: "acct-1",
  edge_api_token: "edge-token",
  edge_domain: "apps.example.com"
}

const admin = Effect.map(adminLogin, (s) => ({ "x-admin-token": s.api_token }))
const configure = (config: Json) =>
  Effect.flatMap(admin, (headers) => raw("POST", "/provider-config", { headers, body: config }))
const routes = Effect.flatMap(SimulatedEdge.EdgeSwitches, (e) => e.routes)

const setup = Effect.gen(function*() {
  const w = yield* workspace
  const { createPod, headers } = w
  const pod = (yield* createPod({ service_port: 8080 })).body as Json
  const tunnel = (body: Json, podId: string = pod.id) => raw("POST", `/pods/${podId}/tunnel`, { headers, body })
  return { ...w, pod, tunnel }
})

const tunnelBody = (overrides: Json = {}) => ({
  tunnel_name: uniqueName("tun"),
  subdomain: uniqueName("sub"),
  protocol_type: "http",
  ...overrides
})

layer(testServer(), { excludeTestServices: true })("tunnels", (it) => {
  it.effect("without an edge_domain a tunnel needs a domain; without an account it waits as pending", () =>
    Effect.gen(function*() {
      const s = yield* setup
      expect((yield* s.tunnel(tunnelBody())).status).toBe(400)
      const { edge_account_id: _a, edge_api_token: _t, ...noAccount } = providerConfig
      yield* configure(noAccount)
      const pending = yield* s.tunnel(tunnelBody())
      expect(pending.status).toBe(201)
      expect(pending.body).toMatchObject({ status: "pending", error: expect.stringContaining("not configured") })
    }))

  it.effect("POST /pods/{id}/tunnel answers 201 and the provider serves hostname -> the pod's VIP", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const response = yield* s.tunnel(tunnelBody({ subdomain: "shop", service_port: 8080 }))
      expect(response.status).toBe(201)
      const tunnel = response.body as Json
      expect(tunnel).toMatchObject({
        pod_id: s.pod.id,
        hostname: "shop.apps.example.com",
        domain: "apps.example.com",
        protocol_type: "http",
        service_port: 8080,
        status: "active",
        error: null,
        access: { kind: "url", value: "https://shop.apps.example.com" }
      })
      expect(yield* routes).toContainEqual(expect.objectContaining({
        key: tunnel.id,
        hostname: "shop.apps.example.com",
        service_url: `http://${s.pod.status.vip}:8080`
      }))
    }))

  it.effect("each protocol says how clients connect", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const access = (protocol_type: string) =>
        Effect.map(
          s.tunnel(tunnelBody({ protocol_type, subdomain: uniqueName(protocol_type), service_port: 5432 })),
          (r) => (r.body as Json).access
        )
      expect((yield* access("https")).kind).toBe("url")
      expect(yield* access("ssh")).toMatchObject({
        kind: "command",
        value: expect.stringMatching(/access ssh --hostname ssh-/)
      })
      expect(yield* access("tcp")).toMatchObject({
        kind: "command",
        value: expect.stringContaining("--url localhost:5432")
      })
      expect(yield* access("udp")).toMatchObject({
        kind: "address",
        value: expect.stringMatching(/^udp-.*\.apps\.example\.com:5432$/)
      })
    }))

  it.effect("a custom domain must be assigned to the tenant (403 otherwise)", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const other = yield* setup
      const headers = yield* admin
      const mine = `${uniqueName("mine")}.example.org`
      const theirs = `${uniqueName("theirs")}.example.org`
      yield* raw("POST", `/tenants/${s.tenant.id}/domains`, { headers, body: { domain: mine } })
      yield* raw("POST", `/tenants/${other.tenant.id}/domains`, { headers, body: { domain: theirs } })
      const ok = yield* s.tunnel(tunnelBody({ subdomain: "www", domain: mine }))
      expect(ok.status).toBe(201)
      expect((ok.body as Json).hostname).toBe(`www.${mine}`)
      expect((yield* s.tunnel(tunnelBody({ domain: theirs }))).status).toBe(403)
      expect((yield* s.tunnel(tunnelBody({ domain: "unassigned.example.net" }))).status).toBe(403)
    }))

  it.effect("names are unique per tenant, hostnames across tenants (409)", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const other = yield* setup
      const first = yield* s.tunnel(tunnelBody({ tunnel_name: "web", subdomain: "clash" }))
      expect(first.status).toBe(201)
      expect((yield* s.tunnel(tunnelBody({ tunnel_name: "web" }))).status).toBe(409)
      expect((yield* other.tunnel(tunnelBody({ tunnel_name: "web" }))).status).toBe(201)
      const hostname = yield* other.tunnel(tunnelBody({ subdomain: "clash" }))
      expect(hostname.status).toBe(409)
      expect((hostname.body as Json).detail).toBe("hostname clash.apps.example.com is in use")
    }))

  it.effect("one owner per hostname: a tenant's tunnel and a platform service tunnel clash with 409 either way", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const headers = yield* admin
      const s = yield* setup
      const gui = uniqueName("gui")
      // The platform's first: the tenant hears "in use", never whose.
      const service = yield* raw("POST", "/service-tunnels", { headers, body: { service: gui, subdomain: gui } })
      expect(service).toMatchObject({ status: 201, body: { status: "active" } })
      const refused = yield* s.tunnel(tunnelBody({ subdomain: gui }))
      expect(refused).toMatchObject({ status: 409, body: { detail: `hostname ${gui}.apps.example.com is in use` } })
      // The tenant's first: the admin hears whose, and nothing is saved for the refused one.
      const shop = uniqueName("shop")
      const held = yield* s.tunnel(tunnelBody({ tunnel_name: "storefront", subdomain: shop }))
      expect(held.status).toBe(201)
      const clash = yield* raw("POST", "/service-tunnels", { headers, body: { service: shop, subdomain: shop } })
      expect(clash.status).toBe(409)
      expect((clash.body as Json).detail).toBe(
        `hostname ${shop}.apps.example.com is in use by the tunnel 'storefront' (${
          (held.body as Json).id
        }) of tenant '${s.tenant.name}'`
      )
      const services = (yield* raw("GET", "/service-tunnels", { headers })).body as Array<Json>
      expect(services.map((t) => t.service)).not.toContain(shop)
      // The admin's retry under another subdomain goes through at once.
      const retried = yield* raw("POST", "/service-tunnels", {
        headers,
        body: { service: shop, subdomain: `${shop}-platform` }
      })
      expect(retried).toMatchObject({ status: 201, body: { status: "active" } })
      // The tenant's tunnel deleted, its hostname is free for anyone.
      yield* raw("DELETE", `/tunnels/${(held.body as Json).id}`, { headers: s.headers })
      const freed = yield* raw("POST", "/service-tunnels", {
        headers,
        body: { service: `${shop}-x`, subdomain: shop }
      })
      expect(freed.status).toBe(201)
    }))

  it.effect("the platform's own names under edge_domain are reserved: a tenant cannot take them, a service tunnel can", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      for (const subdomain of ["api", "console", "www"]) {
        const refused = yield* s.tunnel(tunnelBody({ subdomain }))
        expect(refused).toMatchObject({
          status: 409,
          body: { detail: `hostname ${subdomain}.apps.example.com is reserved for the platform` }
        })
      }
      // Inline with a pod: refused before the pod is made.
      const inline = yield* s.createPod({ name: "greedy", tunnels: [tunnelBody({ subdomain: "api" })] })
      expect(inline.status).toBe(409)
      const pods = (yield* raw("GET", "/pods", { headers: s.headers })).body as Array<Json>
      expect(pods.some((p) => p.name === "greedy")).toBe(false)
      const headers = yield* admin
      const api = yield* raw("POST", "/service-tunnels", { headers, body: { service: "api", subdomain: "api" } })
      expect(api).toMatchObject({ status: 201, body: { hostname: "api.apps.example.com", status: "active" } })
    }))

  it.effect("POST /tunnels?pod_id= derives a unique name and its defaults from the pod", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const first = yield* raw("POST", `/tunnels?pod_id=${s.pod.id}`, { headers: s.headers })
      expect(first.status).toBe(200)
      expect(first.body).toMatchObject({
        tunnel_name: s.pod.name,
        protocol_type: "http",
        service_port: 8080,
        status: "active"
      })
      const second = yield* raw("POST", `/tunnels?pod_id=${s.pod.id}`, {
        headers: s.headers,
        body: { subdomain: "other-sub" }
      })
      expect(second.body).toMatchObject({ tunnel_name: `${s.pod.name}-2`, hostname: "other-sub.apps.example.com" })
      expect((yield* raw("POST", "/tunnels", { headers: s.headers })).status).toBe(400)
    }))

  it.effect("list per pod and for the tenant; another tenant's pod or tunnel is 404", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const other = yield* setup
      const t = (yield* s.tunnel(tunnelBody())).body as Json
      const forPod = yield* raw("GET", `/pods/${s.pod.id}/tunnels`, { headers: s.headers })
      expect((forPod.body as Array<Json>).map((x) => x.id)).toEqual([t.id])
      expect(((yield* raw("GET", "/tunnels", { headers: s.headers })).body as Array<Json>).map((x) => x.id)).toEqual([
        t.id
      ])
      expect((yield* raw("GET", `/pods/${s.pod.id}/tunnels`, { headers: other.headers })).status).toBe(404)
      expect((yield* other.tunnel(tunnelBody(), s.pod.id)).status).toBe(404)
      expect((yield* raw("DELETE", `/tunnels/${t.id}`, { headers: other.headers })).status).toBe(404)
      expect((yield* raw("GET", "/tunnels", { headers: other.headers })).body).toEqual([])
    }))

  it.effect("delete withdraws at the provider (503 and kept while it is down) and answers 204", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const t = (yield* s.tunnel(tunnelBody())).body as Json
      const edge = yield* SimulatedEdge.EdgeSwitches
      yield* edge.setAvailable(false)
      const refused = yield* raw("DELETE", `/tunnels/${t.id}`, { headers: s.headers })
      yield* edge.setAvailable(true)
      expect(refused.status).toBe(503)
      expect((yield* raw("DELETE", `/tunnels/${t.id}`, { headers: s.headers })).status).toBe(204)
      expect((yield* routes).some((r) => r.key === t.id)).toBe(false)
      expect((yield* raw("DELETE", `/tunnels/${t.id}`, { headers: s.headers })).status).toBe(404)
    }))

  it.effect("a provider outage leaves the tunnel in error; the reconciler publishes it later", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const edge = yield* SimulatedEdge.EdgeSwitches
      yield* edge.setAvailable(false)
      const t = (yield* s.tunnel(tunnelBody())).body as Json
      yield* edge.setAvailable(true)
      expect(t).toMatchObject({ status: "error", error: "unavailable: the tunnel provider is down" })
      const tunnels = yield* TunnelsUseCase.Tunnels
      expect(yield* tunnels.reconcile).toBeGreaterThanOrEqual(1)
      const now = ((yield* raw("GET", "/tunnels", { headers: s.headers })).body as Array<Json>).find((x) =>
        x.id === t.id
      )!
      expect(now).toMatchObject({ status: "active", error: null })
    }))

  it.effect("inline tunnels are created with the pod; a bad one creates nothing", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const created = yield* s.createPod({ name: "with-tunnels", tunnels: [tunnelBody({ subdomain: "inline" })] })
      expect(created.status).toBe(200)
      const pod = created.body as Json
      const list = (yield* raw("GET", `/pods/${pod.id}/tunnels`, { headers: s.headers })).body as Array<Json>
      expect(list.map((t) => [t.hostname, t.status])).toEqual([["inline.apps.example.com", "active"]])
      const refused = yield* s.createPod({ name: "bad-tunnels", tunnels: [tunnelBody({ domain: "nope.example.net" })] })
      expect(refused.status).toBe(403)
      const pods = (yield* raw("GET", "/pods", { headers: s.headers })).body as Array<Json>
      expect(pods.some((p) => p.name === "bad-tunnels")).toBe(false)
    }))

  it.effect("deleting the pod removes its tunnels and withdraws them", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const t = (yield* s.tunnel(tunnelBody())).body as Json
      expect((yield* raw("DELETE", `/pods/${s.pod.id}`, { headers: s.headers })).status).toBe(204)
      expect((yield* raw("GET", "/tunnels", { headers: s.headers })).body).toEqual([])
      expect((yield* routes).some((r) => r.key === t.id)).toBe(false)
    }))

  it.effect("deleting the VPC withdraws its pods' tunnels too", () =>
    Effect.gen(function*() {
      yield* configure(providerConfig)
      const s = yield* setup
      const t = (yield* s.tunnel(tunnelBody())).body as Json
      expect((yield* raw("DELETE", `/vpcs/${s.vpc.id}`, { headers: s.headers })).status).toBe(204)
      expect((yield* raw("GET", "/tunnels", { headers: s.headers })).body).toEqual([])
      expect((yield* routes).some((r) => r.key === t.id)).toBe(false)
    }))
})
