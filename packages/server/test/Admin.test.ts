import { expect, layer } from "@effect/vitest"
import { SimulatedEdge } from "@tenet/adapters-memory"
import type { OperationLog } from "@tenet/core"
import { Effect } from "effect"
import { adminLogin, asAdmin, newTenant, raw, testServer, uniqueName } from "./Harness.js"

const admin = Effect.map(adminLogin, (s) => ({ "x-admin-token": s.api_token }))

const config = {
  external_subnet_cidr: "203.0.113.0/24",
  external_subnet_gateway: "203.0.113.1",
  peering_subnet_cidr: "100.64.0.0/16",
  pod_dns_nameservers: ["1.1.1.1", "8.8.8.8"],
  pod_dns_ndots: 2,
  edge_account_id: "acct-123",
  edge_api_token: "edge-secret-token-value",
  edge_domain: "apps.example.com"
}

layer(testServer(), { excludeTestServices: true })("domains", (it) => {
  it.effect("assign, list and remove a tenant's domains; upper case is folded", () =>
    Effect.gen(function*() {
      const { tenant } = yield* newTenant()
      const headers = yield* admin
      const name = uniqueName("shop")
      const assigned = yield* raw("POST", `/tenants/${tenant.id}/domains`, {
        headers,
        body: { domain: `${name.toUpperCase()}.Example.COM` }
      })
      expect(assigned.status).toBe(200)
      expect(assigned.body).toMatchObject({ tenant_id: tenant.id, domain: `${name}.example.com` })
      const list = yield* raw("GET", `/tenants/${tenant.id}/domains`, { headers })
      expect((list.body as Array<{ domain: string }>).map((d) => d.domain)).toEqual([`${name}.example.com`])
      const removed = yield* raw("DELETE", `/tenants/${tenant.id}/domains/${name}.example.com`, { headers })
      expect(removed.status).toBe(204)
      expect((yield* raw("GET", `/tenants/${tenant.id}/domains`, { headers })).body).toEqual([])
      const again = yield* raw("DELETE", `/tenants/${tenant.id}/domains/${name}.example.com`, { headers })
      expect(again.status).toBe(404)
    }))

  it.effect("a tenant lists its own domains (the ones its tunnels may use), never another's, and cannot assign", () =>
    Effect.gen(function*() {
      const owner = yield* newTenant()
      const other = yield* newTenant()
      const headers = yield* admin
      const domain = `${uniqueName("own")}.example.com`
      yield* raw("POST", `/tenants/${owner.tenant.id}/domains`, { headers, body: { domain } })
      const own = { "x-auth-token": owner.session.api_token }
      const listed = yield* raw("GET", `/tenants/${owner.tenant.id}/domains`, { headers: own })
      expect(listed.status).toBe(200)
      expect((listed.body as Array<{ domain: string }>).map((d) => d.domain)).toEqual([domain])
      const foreign = yield* raw("GET", `/tenants/${owner.tenant.id}/domains`, {
        headers: { "x-auth-token": other.session.api_token }
      })
      expect(foreign.status).toBe(404)
      expect(foreign.text).not.toContain(domain)
      const assign = yield* raw("POST", `/tenants/${owner.tenant.id}/domains`, {
        headers: own,
        body: { domain: `${uniqueName("mine")}.example.com` }
      })
      expect(assign.status).toBe(401)
      expect((yield* raw("DELETE", `/tenants/${owner.tenant.id}/domains/${domain}`, { headers: own })).status).toBe(401)
    }))

  it.effect("a domain belongs to one tenant: assigning it again anywhere is 409", () =>
    Effect.gen(function*() {
      const a = yield* newTenant()
      const b = yield* newTenant()
      const headers = yield* admin
      const domain = `${uniqueName("x")}.example.org`
      expect((yield* raw("POST", `/tenants/${a.tenant.id}/domains`, { headers, body: { domain } })).status).toBe(200)
      const same = yield* raw("POST", `/tenants/${a.tenant.id}/domains`, { headers, body: { domain } })
      expect(same.status).toBe(409)
      const other = yield* raw("POST", `/tenants/${b.tenant.id}/domains`, { headers, body: { domain } })
      expect(other.status).toBe(409)
      // Another tenant cannot remove it either.
      expect((yield* raw("DELETE", `/tenants/${b.tenant.id}/domains/${domain}`, { headers })).status).toBe(404)
    }))

  it.effect("invalid domains are 400; an unknown tenant is 404", () =>
    Effect.gen(function*() {
      const { tenant } = yield* newTenant()
      const headers = yield* admin
      for (
        const domain of [
          "localhost",
          "bad_domain.com",
          "-x.example.com",
          "1.2.3.4",
          "a..b.com",
          "x".repeat(64) + ".com"
        ]
      ) {
        const response = yield* raw("POST", `/tenants/${tenant.id}/domains`, { headers, body: { domain } })
        expect(response.status, domain).toBe(400)
      }
      const unknown = "00000000-0000-4000-8000-000000000000"
      expect(
        (yield* raw("POST", `/tenants/${unknown}/domains`, { headers, body: { domain: "ok.example.com" } })).status
      )
        .toBe(404)
      expect((yield* raw("GET", `/tenants/${unknown}/domains`, { headers })).status).toBe(404)
    }))
})

layer(testServer(), { excludeTestServices: true })("provider configuration", (it) => {
  it.effect("404 until set; set and read back without the token", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      const before = yield* raw("GET", "/provider-config", { headers })
      expect(before.status).toBe(404)
      const put = yield* raw("POST", "/provider-config", { headers, body: config })
      expect(put.status).toBe(200)
      const { edge_api_token: _, ...visible } = config
      expect(put.body).toMatchObject({ ...visible, edge_api_token_set: true })
      expect(put.text).not.toContain(config.edge_api_token)
      const got = yield* raw("GET", "/provider-config", { headers })
      expect(got.body).toEqual(put.body)
      expect(got.text).not.toContain(config.edge_api_token)
    }))

  it.effect("an update that omits the token keeps it; null removes it; defaults apply", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      yield* raw("POST", "/provider-config", { headers, body: config })
      const { edge_api_token: _, pod_dns_nameservers: __, pod_dns_ndots: ___, ...rest } = config
      const kept = yield* raw("POST", "/provider-config", { headers, body: rest })
      expect(kept.body).toMatchObject({ edge_api_token_set: true, pod_dns_nameservers: [], pod_dns_ndots: null })
      const cleared = yield* raw("POST", "/provider-config", { headers, body: { ...rest, edge_api_token: null } })
      expect(cleared.body).toMatchObject({ edge_api_token_set: false })
    }))

  it.effect("bad networks are 400 and change nothing", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      yield* raw("POST", "/provider-config", { headers, body: config })
      const stored = (yield* raw("GET", "/provider-config", { headers })).body
      for (
        const patch of [
          { external_subnet_gateway: "198.51.100.1" },
          { external_subnet_gateway: "203.0.113.0" },
          { external_subnet_gateway: "203.0.113.255" },
          { peering_subnet_cidr: "203.0.113.128/25" },
          { external_subnet_cidr: "2001:db8::/32" },
          { external_subnet_cidr: "203.0.113.7/24" },
          { pod_dns_nameservers: ["1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4"] },
          { pod_dns_ndots: 0 },
          { edge_domain: "not a domain" }
        ]
      ) {
        const response = yield* raw("POST", "/provider-config", { headers, body: { ...config, ...patch } })
        expect(response.status, JSON.stringify(patch)).toBe(400)
        expect(typeof (response.body as { detail: unknown }).detail).toBe("string")
      }
      expect((yield* raw("GET", "/provider-config", { headers })).body).toEqual(stored)
    }))

  it.effect("admin only", () =>
    Effect.gen(function*() {
      const { session } = yield* newTenant()
      expect((yield* raw("GET", "/provider-config", { headers: { "x-auth-token": session.api_token } })).status).toBe(
        401
      )
    }))
})

layer(testServer(), { excludeTestServices: true })("service tunnels", (it) => {
  it.effect("need a provider configuration with an edge account first (409)", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      const body = { service: "api", subdomain: "api" }
      const none = yield* raw("POST", "/service-tunnels", { headers, body })
      expect(none.status).toBe(409)
      const { edge_account_id: _, edge_api_token: __, ...noAccount } = config
      yield* raw("POST", "/provider-config", { headers, body: noAccount })
      const stillNone = yield* raw("POST", "/service-tunnels", { headers, body })
      expect(stillNone.status).toBe(409)
      expect((stillNone.body as { detail: string }).detail).toContain("edge_account_id")
    }))

  it.effect("publish the API at <subdomain>.<edge_domain> through the provider", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      yield* raw("POST", "/provider-config", { headers, body: config })
      const created = yield* raw("POST", "/service-tunnels", { headers, body: { service: "api", subdomain: "api" } })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({
        service: "api",
        hostname: "api.apps.example.com",
        url: "https://api.apps.example.com",
        target_url: "http://127.0.0.1:8080",
        status: "active",
        error: null
      })
      const routes = yield* Effect.flatMap(SimulatedEdge.EdgeSwitches, (s) => s.routes)
      expect(routes).toContainEqual(expect.objectContaining({
        hostname: "api.apps.example.com",
        account_id: "acct-123",
        service_url: "http://127.0.0.1:8080"
      }))
      const list = yield* raw("GET", "/service-tunnels", { headers })
      expect((list.body as Array<{ service: string }>).map((t) => t.service)).toContain("api")
      const duplicate = yield* raw("POST", "/service-tunnels", {
        headers,
        body: { service: "api", subdomain: "other" }
      })
      expect(duplicate.status).toBe(409)
      const hostnameTaken = yield* raw("POST", "/service-tunnels", {
        headers,
        body: { service: "console", subdomain: "api" }
      })
      expect(hostnameTaken.status).toBe(409)
    }))

  it.effect("a provider outage is reported on the tunnel; delete withdraws it, 404 after", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      const edge = yield* SimulatedEdge.EdgeSwitches
      yield* raw("POST", "/provider-config", { headers, body: config })
      yield* edge.setAvailable(false)
      const created = yield* raw("POST", "/service-tunnels", {
        headers,
        body: {
          service: "console",
          subdomain: "console",
          domain: "ops.example.net",
          target_url: "https://console.internal:8443"
        }
      })
      expect(created.status).toBe(201)
      const tunnel = created.body as { id: string; status: string; error: string; hostname: string }
      expect(tunnel.status).toBe("error")
      expect(tunnel.error).toContain("unavailable")
      expect(tunnel.hostname).toBe("console.ops.example.net")
      // While the provider is down, the delete fails and the record stays for a retry.
      expect((yield* raw("DELETE", `/service-tunnels/${tunnel.id}`, { headers })).status).toBe(503)
      yield* edge.setAvailable(true)
      expect((yield* raw("DELETE", `/service-tunnels/${tunnel.id}`, { headers })).status).toBe(204)
      expect((yield* raw("DELETE", `/service-tunnels/${tunnel.id}`, { headers })).status).toBe(404)
    }))

  it.effect("a bad target URL is 400", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      for (const target_url of ["ftp://x.example.com", "http://user:pw@x.example.com", "not a url"]) {
        const response = yield* raw("POST", "/service-tunnels", {
          headers,
          body: { service: "gui", subdomain: "gui", target_url }
        })
        expect(response.status, target_url).toBe(400)
      }
    }))

  it.effect("a target on loopback, link-local or a metadata service is 400, however it is spelled", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      yield* raw("POST", "/provider-config", { headers, body: config })
      for (
        const target_url of [
          "http://169.254.169.254/latest/meta-data/",
          "http://2852039166/latest/meta-data/",
          "http://0xa9.0xfe.0xa9.0xfe/",
          "http://169.254.170.2/v2/credentials",
          "http://100.100.100.200/latest/meta-data/",
          "http://metadata.google.internal/computeMetadata/v1/",
          "http://METADATA.google.internal./",
          "http://127.0.0.1:8080",
          "http://127.1/",
          "http://localhost:9090",
          "http://api.localhost/",
          "http://0.0.0.0/",
          "http://[::1]/",
          "http://[::]/",
          "http://[fe80::1]/",
          "http://[fd00:ec2::254]/latest/meta-data/",
          "http://[::ffff:169.254.169.254]/",
          "http://[::169.254.169.254]/",
          "http://[::7f00:1]/",
          "http://[64:ff9b::a9fe:a9fe]/",
          "http://[2002:a9fe:a9fe::1]/"
        ]
      ) {
        const response = yield* raw("POST", "/service-tunnels", {
          headers,
          body: { service: "gui", subdomain: "gui", target_url }
        })
        expect([target_url, response.status], JSON.stringify(response.body)).toEqual([target_url, 400])
        expect(JSON.stringify(response.body)).toContain("would publish it at a public hostname")
      }
      const listed = (yield* raw("GET", "/service-tunnels", { headers })).body as Array<{ service: string }>
      expect(listed.map((t) => t.service)).not.toContain("gui")
      // An address of the cluster's own network is what a platform service is.
      for (
        const [i, target_url] of [
          "http://10.96.0.10:8080",
          "https://console.internal:8443",
          "http://[2001:db8::1]/",
          "http://[64:ff9b::a00:1]/"
        ]
          .entries()
      ) {
        const response = yield* raw("POST", "/service-tunnels", {
          headers,
          body: { service: `internal${i}`, subdomain: `internal${i}`, target_url }
        })
        expect([target_url, response.status]).toEqual([target_url, 201])
      }
    }))
})

layer(testServer(), { excludeTestServices: true })("operations log", (it) => {
  it.effect("newest first, paged with next_before until the end", () =>
    Effect.gen(function*() {
      const api = yield* asAdmin
      for (let i = 0; i < 4; i++) yield* adminLogin
      const all = yield* api.operationsLog.list({ urlParams: { limit: 500 } })
      expect(all.next_before).toBeNull()
      const seqs = all.entries.map((e) => e.seq)
      expect(seqs).toEqual([...seqs].sort((a, b) => b - a))
      const pages: Array<number> = []
      let before: number | undefined = undefined
      for (;;) {
        const page: OperationLog.OperationLogPage = yield* api.operationsLog.list({
          urlParams: before === undefined ? { limit: 2 } : { limit: 2, before }
        })
        pages.push(...page.entries.map((e) => e.seq))
        if (page.next_before === null) break
        before = page.next_before
      }
      expect(pages).toEqual(seqs)
    }))

  it.effect("limit outside 1-500 is 400", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      for (const limit of ["0", "501", "x", "1.5"]) {
        expect((yield* raw("GET", `/operations-log?limit=${limit}`, { headers })).status, limit).toBe(400)
      }
    }))
})
