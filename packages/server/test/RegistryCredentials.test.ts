import { expect, layer } from "@effect/vitest"
import { SimulatedCluster, SimulatedEdge } from "@tenet/adapters-memory"
import { Effect } from "effect"
import { adminLogin, newTenant, raw, testServer } from "./Harness.js"

type Json = Record<string, any>

const credential = { name: "ghcr", server: "ghcr.io", username: "ci-bot", password: "pull-secret-value" }

layer(testServer(), { excludeTestServices: true })("registry credentials", (it) => {
  it.effect("create, list and delete by name; the password is never returned", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const headers = { "x-auth-token": session.api_token }
      const path = `/tenants/${tenant.id}/registry-credentials`
      const created = yield* raw("POST", path, { headers, body: credential })
      expect(created.status).toBe(200)
      expect(created.body).toMatchObject({ tenant_id: tenant.id, name: "ghcr", server: "ghcr.io", username: "ci-bot" })
      expect(created.text).not.toContain("pull-secret-value")
      expect((yield* raw("POST", path, { headers, body: credential })).status).toBe(409)
      const list = yield* raw("GET", path, { headers })
      expect((list.body as Array<Json>).map((c) => c.name)).toEqual(["ghcr"])
      expect(list.text).not.toContain("pull-secret-value")
      expect(Object.keys((list.body as Array<Json>)[0]!).sort()).toEqual([
        "created_at",
        "etag",
        "name",
        "server",
        "tenant_id",
        "username"
      ])
      const deleted = yield* raw("DELETE", `${path}/ghcr`, { headers })
      expect(deleted.status).toBe(200)
      expect(deleted.body).toMatchObject({ name: "ghcr" })
      expect((yield* raw("DELETE", `${path}/ghcr`, { headers })).status).toBe(404)
      expect((yield* raw("GET", path, { headers })).body).toEqual([])
    }))

  it.effect("another tenant's path is 404; bad input is 400", () =>
    Effect.gen(function*() {
      const a = yield* newTenant()
      const b = yield* newTenant()
      const headers = { "x-auth-token": a.session.api_token }
      yield* raw("POST", `/tenants/${b.tenant.id}/registry-credentials`, {
        headers: { "x-auth-token": b.session.api_token },
        body: credential
      })
      const foreign = `/tenants/${b.tenant.id}/registry-credentials`
      expect((yield* raw("GET", foreign, { headers })).status).toBe(404)
      expect((yield* raw("POST", foreign, { headers, body: credential })).status).toBe(404)
      expect((yield* raw("DELETE", `${foreign}/ghcr`, { headers })).status).toBe(404)
      const own = `/tenants/${a.tenant.id}/registry-credentials`
      for (const body of [{ ...credential, name: "Bad_Name" }, { ...credential, password: "" }, { name: "x" }]) {
        expect((yield* raw("POST", own, { headers, body })).status, JSON.stringify(body)).toBe(400)
      }
    }))

  it.effect("pods that use registry credentials pull with the tenant's secrets; others do not", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const headers = { "x-auth-token": session.api_token }
      const creds = { token: session.api_token, tenant_id: tenant.id }
      yield* raw("POST", `/tenants/${tenant.id}/registry-credentials`, { headers, body: credential })
      const vpc = (yield* raw("POST", "/vpcs", { headers, body: { ...creds, name: "v", enable_internet: true } }))
        .body as Json
      const subnet = (yield* raw("POST", "/subnets", {
        headers,
        body: { ...creds, vpc_id: vpc.id, name: "s", cidr: "10.0.0.0/24", gateway_ip: "10.0.0.1" }
      })).body as Json
      const pod = (body: Json) =>
        Effect.map(
          raw("POST", "/pods", {
            headers,
            body: { ...creds, vpc_id: vpc.id, subnet_id: subnet.id, container_image: "ghcr.io/acme/app:1", ...body }
          }),
          (r) => r.body as Json
        )
      const withSecrets = yield* pod({ name: "private" })
      const without = yield* pod({ name: "public", use_registry_credentials: false })
      const snapshot = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)
      const pulls = (id: string) => snapshot.pods.find((p) => p.spec.pod_id === id)!.image_pull_secrets
      expect(pulls(withSecrets.id)).toEqual([`${tenant.id}/ghcr`])
      expect(pulls(without.id)).toEqual([])
      expect(JSON.stringify(snapshot.registrySecrets)).not.toContain("pull-secret-value")
      expect(withSecrets.status.phase).toBe("running")
    }))
})

layer(testServer(), { excludeTestServices: true })("the tenant view", (it) => {
  it.effect("GET /tenants/{id} shows the tenant's VPCs, pods with status, and tunnels", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const headers = { "x-auth-token": session.api_token }
      const creds = { token: session.api_token, tenant_id: tenant.id }
      const admin = { "x-admin-token": (yield* adminLogin).api_token }
      yield* raw("POST", "/provider-config", {
        headers: admin,
        body: {
          external_subnet_cidr: "203.0.113.0/24",
          external_subnet_gateway: "203.0.113.1",
          peering_subnet_cidr: "100.64.0.0/16",
          edge_account_id: "acct",
          edge_api_token: "tok",
          edge_domain: "apps.example.com"
        }
      })
      const vpc = (yield* raw("POST", "/vpcs", { headers, body: { ...creds, name: "v", enable_internet: true } }))
        .body as Json
      const subnet = (yield* raw("POST", "/subnets", {
        headers,
        body: { ...creds, vpc_id: vpc.id, name: "s", cidr: "10.0.0.0/24", gateway_ip: "10.0.0.1" }
      })).body as Json
      const pod = (yield* raw("POST", "/pods", {
        headers,
        body: {
          ...creds,
          vpc_id: vpc.id,
          subnet_id: subnet.id,
          name: "web",
          container_image: "nginx:1.27",
          tunnels: [{ tunnel_name: "web", subdomain: "view-test", protocol_type: "https" }]
        }
      })).body as Json
      const view = (yield* raw("GET", `/tenants/${tenant.id}`, { headers: admin })).body as Json
      expect(view.vpcs.map((v: Json) => v.id)).toEqual([vpc.id])
      expect(view.pods.map((p: Json) => [p.id, p.status.phase])).toEqual([[pod.id, "running"]])
      expect(view.tunnels.map((t: Json) => t.hostname)).toEqual(["view-test.apps.example.com"])
      // Deleting the tenant withdraws its public hostnames.
      expect((yield* raw("DELETE", `/tenants/${tenant.id}`, { headers: admin })).status).toBe(204)
      const routes = yield* Effect.flatMap(SimulatedEdge.EdgeSwitches, (e) => e.routes)
      expect(routes.some((r) => r.hostname === "view-test.apps.example.com")).toBe(false)
      const snapshot = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)
      expect(snapshot.pods.some((p) => p.spec.pod_id === pod.id)).toBe(false)
    }))
})
