import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminLogin, asAdmin, newTenant, raw, testServer, uniqueName } from "./Harness.js"

const admin = Effect.map(adminLogin, (s) => ({ "x-admin-token": s.api_token }))

layer(testServer(), { excludeTestServices: true })("tenants", (it) => {
  it.effect("create answers 201 with the tenant and never its password or token", () =>
    Effect.gen(function*() {
      const name = uniqueName("acme")
      const response = yield* raw("POST", "/tenants", {
        headers: yield* admin,
        body: { name, description: "Acme Corp", password: "s3cret-password" }
      })
      expect(response.status).toBe(201)
      expect(response.body).toMatchObject({ name, description: "Acme Corp" })
      expect(Object.keys(response.body as object).sort()).toEqual(["created_at", "description", "etag", "id", "name"])
      expect(response.text).not.toContain("s3cret-password")
    }))

  it.effect("description defaults to null", () =>
    Effect.gen(function*() {
      const response = yield* raw("POST", "/tenants", {
        headers: yield* admin,
        body: { name: uniqueName("nodesc"), password: "s3cret-password" }
      })
      expect(response.status).toBe(201)
      expect((response.body as { description: unknown }).description).toBeNull()
    }))

  it.effect("a taken name is 409", () =>
    Effect.gen(function*() {
      const name = uniqueName("dup")
      const headers = yield* admin
      const body = { name, password: "s3cret-password" }
      expect((yield* raw("POST", "/tenants", { headers, body })).status).toBe(201)
      const again = yield* raw("POST", "/tenants", { headers, body })
      expect(again.status).toBe(409)
      expect(again.body).toEqual({ detail: `a tenant named '${name}' already exists` })
    }))

  it.effect("invalid names, short passwords and missing fields are 400 and create nothing", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      const before = (yield* raw("GET", "/tenants", { headers })).body as Array<unknown>
      for (
        const body of [
          { name: "Upper", password: "s3cret-password" },
          { name: "-lead", password: "s3cret-password" },
          { name: "a".repeat(64), password: "s3cret-password" },
          { name: "ok-name", password: "short" },
          { name: "ok-name" },
          { password: "s3cret-password" },
          { name: 42, password: "s3cret-password" },
          []
        ]
      ) {
        const response = yield* raw("POST", "/tenants", { headers, body })
        expect(response.status, JSON.stringify(body)).toBe(400)
        expect(typeof (response.body as { detail: unknown }).detail).toBe("string")
      }
      const after = (yield* raw("GET", "/tenants", { headers })).body as Array<unknown>
      expect(after.length).toBe(before.length)
    }))

  it.effect("list returns tenants oldest first", () =>
    Effect.gen(function*() {
      const api = yield* asAdmin
      const a = yield* api.tenants.create({
        payload: { name: uniqueName("first") as never, password: "s3cret-password", description: null }
      })
      const b = yield* api.tenants.create({
        payload: { name: uniqueName("second") as never, password: "s3cret-password", description: null }
      })
      const ids = (yield* api.tenants.list({ urlParams: {} })).map((t) => t.id)
      expect(ids.indexOf(a.id)).toBeLessThan(ids.indexOf(b.id))
    }))

  it.effect("get returns the tenant with its (empty) VPCs, pods and tunnels; unknown is 404, malformed 400", () =>
    Effect.gen(function*() {
      const { tenant } = yield* newTenant()
      const headers = yield* admin
      const found = yield* raw("GET", `/tenants/${tenant.id}`, { headers })
      expect(found.status).toBe(200)
      expect(found.body).toMatchObject({ id: tenant.id, name: tenant.name, vpcs: [], pods: [], tunnels: [] })
      const unknown = yield* raw("GET", "/tenants/00000000-0000-4000-8000-000000000000", { headers })
      expect(unknown.status).toBe(404)
      const malformed = yield* raw("GET", "/tenants/not-a-uuid", { headers })
      expect(malformed.status).toBe(400)
      expect((malformed.body as { detail: string }).detail).toContain("tenant_id")
    }))

  it.effect("delete answers 204, cascades to the tenant's domains and revokes its token", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const api = yield* asAdmin
      const domain = `${uniqueName("d")}.example.com`
      yield* api.domains.assign({ path: { tenant_id: tenant.id }, payload: { domain: domain as never } })
      const deleted = yield* raw("DELETE", `/tenants/${tenant.id}`, { headers: yield* admin })
      expect(deleted.status).toBe(204)
      expect(deleted.text).toBe("")
      expect((yield* raw("GET", `/tenants/${tenant.id}`, { headers: yield* admin })).status).toBe(404)
      expect((yield* raw("DELETE", `/tenants/${tenant.id}`, { headers: yield* admin })).status).toBe(404)
      const revoked = yield* raw("POST", "/tenants/logout", { headers: { "x-api-token": session.api_token } })
      expect(revoked.status).toBe(401)
      // The domain went with the tenant, so another tenant may have it now.
      const other = yield* newTenant()
      const reassigned = yield* api.domains.assign({
        path: { tenant_id: other.tenant.id },
        payload: { domain: domain as never }
      })
      expect(reassigned.domain).toBe(domain)
    }))

  it.effect("tenant endpoints are admin-only: a tenant token or none is 401", () =>
    Effect.gen(function*() {
      const { session } = yield* newTenant()
      const asTenant = yield* raw("GET", "/tenants", { headers: { "x-auth-token": session.api_token } })
      expect(asTenant.status).toBe(401)
      const tenantInAdminHeader = yield* raw("GET", "/tenants", { headers: { "x-admin-token": session.api_token } })
      expect(tenantInAdminHeader.status).toBe(401)
      expect((yield* raw("POST", "/tenants", { body: { name: "x1", password: "s3cret-password" } })).status).toBe(401)
    }))
})
