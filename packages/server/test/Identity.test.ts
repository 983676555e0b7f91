import { describe, expect, layer } from "@effect/vitest"
import { Identity } from "@tenet/core"
import { Effect } from "effect"
import { TestServer } from "../src/index.js"
import {
  adminLogin,
  asAdmin,
  client,
  newTenant,
  postFrom,
  raw,
  TENANT_PASSWORD,
  testServer,
  uniqueName
} from "./Harness.js"

layer(testServer(), { excludeTestServices: true })("admin authentication", (it) => {
  it.effect("login returns the admin's current token, and logging in again returns the same one", () =>
    Effect.gen(function*() {
      const first = yield* adminLogin
      const second = yield* adminLogin
      expect(first.username).toBe(TestServer.ADMIN_USERNAME)
      expect(first.api_token).toMatch(/^tenet_[A-Za-z0-9_-]{43}$/)
      expect(second.api_token).toBe(first.api_token)
    }))

  it.effect("a wrong password is 401 with a detail, and is logged with the source address", () =>
    Effect.gen(function*() {
      const response = yield* raw("POST", "/admin/login", {
        body: { username: TestServer.ADMIN_USERNAME, password: "wrong-password" }
      })
      expect(response.status).toBe(401)
      expect(response.body).toEqual({ detail: "invalid username or password" })
      const admin = yield* asAdmin
      const page = yield* admin.operationsLog.list({ urlParams: { limit: 5 } })
      const failure = page.entries.find((e) => e.kind === "admin.login" && e.outcome === "failure")
      expect(failure?.principal).toBe(TestServer.ADMIN_USERNAME)
      expect(failure?.source_address).toMatch(/127\.0\.0\.1|::1/)
    }))

  it.effect("logout answers 204, records the logout and leaves the token usable", () =>
    Effect.gen(function*() {
      const session = yield* adminLogin
      const response = yield* raw("POST", "/admin/logout", { headers: { "x-admin-token": session.api_token } })
      expect(response.status).toBe(204)
      expect(response.text).toBe("")
      const admin = yield* client({ "x-admin-token": session.api_token })
      const page = yield* admin.operationsLog.list({ urlParams: { limit: 1 } })
      expect(page.entries[0]).toMatchObject({ kind: "admin.logout", outcome: "success" })
    }))

  it.effect("logout and rotation without a valid admin token are 401", () =>
    Effect.gen(function*() {
      for (const path of ["/admin/logout", "/admin/rotate-token"]) {
        const missing = yield* raw("POST", path)
        expect(missing.status).toBe(401)
        expect(missing.body).toEqual({
          detail: "missing X-Admin-Token header: send the admin API token from POST /admin/login"
        })
        const wrong = yield* raw("POST", path, { headers: { "x-admin-token": "tenet_not-a-real-token" } })
        expect(wrong.status).toBe(401)
        expect(wrong.body).toEqual({ detail: "invalid admin token" })
      }
      const tenantCall = yield* raw("GET", "/vpcs")
      expect(tenantCall).toMatchObject({
        status: 401,
        body: { detail: "missing X-Auth-Token header: send the tenant API token from POST /tenants/login" }
      })
    }))

  it.effect("rotation issues a new token and the old one stops working at once", () =>
    Effect.gen(function*() {
      const old = yield* adminLogin
      const rotated = yield* (yield* client({ "x-admin-token": old.api_token })).adminIdentity.rotateToken()
      expect(rotated.api_token).not.toBe(old.api_token)
      const stale = yield* raw("GET", "/tenants", { headers: { "x-admin-token": old.api_token } })
      expect(stale.status).toBe(401)
      const fresh = yield* raw("GET", "/tenants", { headers: { "x-admin-token": rotated.api_token } })
      expect(fresh.status).toBe(200)
      expect((yield* adminLogin).api_token).toBe(rotated.api_token)
    }))
})

layer(testServer(), { excludeTestServices: true })("tenant authentication", (it) => {
  it.effect("login returns id, name and the current token", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      expect(Object.keys(session).sort()).toEqual(["api_token", "expires_at", "id", "name"])
      expect(session.expires_at).toBeNull()
      expect(session.id).toBe(tenant.id)
      const again = yield* (yield* client()).tenantIdentity.login({
        payload: { name: tenant.name, password: TENANT_PASSWORD }
      })
      expect(again.api_token).toBe(session.api_token)
    }))

  it.effect("an unknown name and a wrong password fail alike with 401", () =>
    Effect.gen(function*() {
      const { tenant } = yield* newTenant()
      const wrong = yield* raw("POST", "/tenants/login", { body: { name: tenant.name, password: "not the password" } })
      const unknown = yield* raw("POST", "/tenants/login", {
        body: { name: uniqueName("ghost"), password: "whatever1" }
      })
      expect(wrong.status).toBe(401)
      expect(unknown.status).toBe(401)
      expect(wrong.body).toEqual(unknown.body)
    }))

  it.effect("logout takes X-API-Token (or X-Auth-Token), answers 204 and is logged", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const viaApiToken = yield* raw("POST", "/tenants/logout", { headers: { "x-api-token": session.api_token } })
      expect(viaApiToken.status).toBe(204)
      const viaAuthToken = yield* raw("POST", "/tenants/logout", { headers: { "x-auth-token": session.api_token } })
      expect(viaAuthToken.status).toBe(204)
      const bad = yield* raw("POST", "/tenants/logout", { headers: { "x-api-token": "tenet_bogus" } })
      expect(bad.status).toBe(401)
      const page = yield* (yield* asAdmin).operationsLog.list({ urlParams: { limit: 10 } })
      const logouts = page.entries.filter((e) => e.kind === "tenant.logout" && e.tenant_id === tenant.id)
      expect(logouts.map((e) => [e.kind, e.principal, e.tenant_id])).toEqual([
        ["tenant.logout", tenant.name, tenant.id],
        ["tenant.logout", tenant.name, tenant.id]
      ])
    }))

  it.effect("a tenant rotates its own token; the old one stops working at once", () =>
    Effect.gen(function*() {
      const { api, session, tenant } = yield* newTenant()
      const rotated = yield* api.tenantIdentity.rotateToken({ path: { tenant_id: tenant.id } })
      expect(rotated).toMatchObject({ id: tenant.id, name: tenant.name })
      expect(rotated.api_token).not.toBe(session.api_token)
      const stale = yield* raw("POST", "/tenants/logout", { headers: { "x-api-token": session.api_token } })
      expect(stale.status).toBe(401)
      const relogin = yield* (yield* client()).tenantIdentity.login({
        payload: { name: tenant.name, password: TENANT_PASSWORD }
      })
      expect(relogin.api_token).toBe(rotated.api_token)
    }))

  it.effect("a tenant cannot rotate another tenant's token (403), an admin can", () =>
    Effect.gen(function*() {
      const a = yield* newTenant("a")
      const b = yield* newTenant("b")
      const forbidden = yield* raw("POST", `/tenants/${b.tenant.id}/rotate-token`, {
        headers: { "x-auth-token": a.session.api_token }
      })
      expect(forbidden.status).toBe(403)
      expect(forbidden.body).toEqual({ detail: "a tenant can rotate only its own token" })
      const admin = yield* asAdmin
      const rotated = yield* admin.tenantIdentity.rotateToken({ path: { tenant_id: b.tenant.id } })
      expect(rotated.api_token).not.toBe(b.session.api_token)
      const page = yield* admin.operationsLog.list({ urlParams: { limit: 1 } })
      expect(page.entries[0]).toMatchObject({ kind: "tenant.rotate_token", principal: b.tenant.name })
      expect(page.entries[0]?.detail).toContain("admin")
    }))

  it.effect("rotation of an unknown tenant is 404, and with no token at all 401", () =>
    Effect.gen(function*() {
      const admin = yield* adminLogin
      const unknown = "00000000-0000-4000-8000-000000000000"
      const missing = yield* raw("POST", `/tenants/${unknown}/rotate-token`, {
        headers: { "x-admin-token": admin.api_token }
      })
      expect(missing.status).toBe(404)
      const anonymous = yield* raw("POST", `/tenants/${unknown}/rotate-token`)
      expect(anonymous.status).toBe(401)
    }))
})

layer(testServer({ sessionTtl: "2 seconds" }), { excludeTestServices: true })("sign-in sessions", (it) => {
  const sessionLogin = (path: string, body: Record<string, unknown>) =>
    Effect.map(raw("POST", path, { body: { ...body, session: true } }), (r) => r.body as Record<string, any>)

  it.effect("a tenant's session acts as its token until signed out; the API token and other sessions go on", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const [one, two] = [
        yield* sessionLogin("/tenants/login", { name: tenant.name, password: TENANT_PASSWORD }),
        yield* sessionLogin("/tenants/login", { name: tenant.name, password: TENANT_PASSWORD })
      ]
      expect(one).toMatchObject({ id: tenant.id, name: tenant.name, expires_at: expect.any(String) })
      expect(one.api_token).toMatch(/^tenet_/)
      expect(new Set([one.api_token, two.api_token, session.api_token]).size).toBe(3)
      const vpcs = (token: string) =>
        Effect.map(raw("GET", "/vpcs", { headers: { "x-auth-token": token } }), (r) => r.status)
      expect(yield* vpcs(one.api_token)).toBe(200)
      // Signing out with the session's token (the console's Sign out) ends that session only.
      expect((yield* raw("POST", "/tenants/logout", { headers: { "x-api-token": one.api_token } })).status).toBe(204)
      expect(yield* vpcs(one.api_token)).toBe(401)
      expect(yield* vpcs(two.api_token)).toBe(200)
      expect(yield* vpcs(session.api_token)).toBe(200)
      // Logging out with the API token is stateless, as the spec has it: the token stays valid.
      expect((yield* raw("POST", "/tenants/logout", { headers: { "x-api-token": session.api_token } })).status).toBe(
        204
      )
      expect(yield* vpcs(session.api_token)).toBe(200)
      const page = yield* (yield* asAdmin).operationsLog.list({ urlParams: { limit: 10 } })
      const logouts = page.entries.filter((e) => e.kind === "tenant.logout" && e.tenant_id === tenant.id)
      expect(logouts.map((e) => e.detail)).toEqual([null, "session ended"])
      // Rotating the API token ends every session of the tenant.
      const admin = yield* asAdmin
      yield* admin.tenantIdentity.rotateToken({ path: { tenant_id: tenant.id } })
      expect(yield* vpcs(two.api_token)).toBe(401)
    }))

  it.effect("a session cannot rotate the API token it stands for; a logout ends the caller's session it was sent", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const signedIn = yield* sessionLogin("/tenants/login", { name: tenant.name, password: TENANT_PASSWORD })
      const rotated = yield* raw("POST", `/tenants/${tenant.id}/rotate-token`, {
        headers: { "x-auth-token": signedIn.api_token }
      })
      expect(rotated.status).toBe(403)
      expect((rotated.body as { detail: string }).detail).toMatch(/sign-in session cannot rotate/)
      const admin = yield* sessionLogin("/admin/login", {
        username: TestServer.ADMIN_USERNAME,
        password: TestServer.ADMIN_PASSWORD
      })
      expect((yield* raw("POST", "/admin/rotate-token", { headers: { "x-admin-token": admin.api_token } })).status)
        .toBe(403)
      // Nothing was rotated: the API tokens still work.
      const vpcs = (token: string) =>
        Effect.map(raw("GET", "/vpcs", { headers: { "x-auth-token": token } }), (r) => r.status)
      expect(yield* vpcs(session.api_token)).toBe(200)
      expect((yield* raw("GET", "/tenants", { headers: { "x-admin-token": (yield* adminLogin).api_token } })).status)
        .toBe(200)
      // Authenticated by the session in X-Auth-Token, beside a stale X-API-Token: the session ends.
      const logout = yield* raw("POST", "/tenants/logout", {
        headers: { "x-api-token": "tenet_not-a-token", "x-auth-token": signedIn.api_token }
      })
      expect(logout.status).toBe(204)
      expect(yield* vpcs(signedIn.api_token)).toBe(401)
      expect(yield* vpcs(session.api_token)).toBe(200)
    }))

  it.effect("a session expires by itself; the admin's signs out as a tenant's does", () =>
    Effect.gen(function*() {
      const { tenant } = yield* newTenant()
      const short = yield* sessionLogin("/tenants/login", { name: tenant.name, password: TENANT_PASSWORD })
      const admin = yield* sessionLogin("/admin/login", {
        username: TestServer.ADMIN_USERNAME,
        password: TestServer.ADMIN_PASSWORD
      })
      expect(admin.expires_at).toEqual(expect.any(String))
      const tenants = (token: string) =>
        Effect.map(raw("GET", "/tenants", { headers: { "x-admin-token": token } }), (r) => r.status)
      expect(yield* tenants(admin.api_token)).toBe(200)
      expect((yield* raw("POST", "/admin/logout", { headers: { "x-admin-token": admin.api_token } })).status).toBe(204)
      expect(yield* tenants(admin.api_token)).toBe(401)
      expect(yield* tenants((yield* adminLogin).api_token)).toBe(200)
      yield* Effect.sleep("2100 millis")
      expect((yield* raw("GET", "/vpcs", { headers: { "x-auth-token": short.api_token } })).status).toBe(401)
    }))
})

describe("failed-login throttling", () => {
  // A wait long enough that no pause of a busy machine outlasts it between two requests.
  const loginThrottle = {
    ...Identity.defaultThrottlePolicy,
    nameAndAddress: { ...Identity.defaultThrottlePolicy.nameAndAddress, baseMillis: 3_000 }
  }
  layer(testServer({ loginThrottle }), { excludeTestServices: true })("per name and address", (it) => {
    it.effect("a stranger's failures slow the stranger, doubling; the owner, from its own address, gets in", () =>
      Effect.gen(function*() {
        const { tenant } = yield* newTenant()
        const login = (from: string, password: string) =>
          postFrom(from, "/tenants/login", { name: tenant.name, password })
        for (let i = 0; i < 10; i++) {
          const guess = yield* login("127.0.0.2", `guess-${i}-x`)
          // Five are free; then each waits after the last failure (3 s here), refused without a check.
          expect(guess.status, `guess ${i}`).toBe(i < 5 ? 401 : 429)
        }
        const throttled = yield* login("127.0.0.2", TENANT_PASSWORD)
        expect(throttled.status).toBe(429)
        const seconds = /try again in (\d+) seconds/.exec(throttled.body.detail)?.[1]
        // The same wait, as a client reads it (RFC 9110's Retry-After).
        expect(throttled.headers["retry-after"]).toBe(seconds)
        expect(throttled.body).toEqual({ detail: expect.any(String) })
        // The owner, from another address, is not kept out by the stranger.
        const owner = yield* login("127.0.0.3", TENANT_PASSWORD)
        expect(owner.status).toBe(200)
        // After the wait, the stranger may try once more; its failure doubles the wait.
        yield* Effect.sleep(`${Number(seconds) * 1000 + 50} millis`)
        expect((yield* login("127.0.0.2", "guess-again")).status).toBe(401)
        const doubled = yield* login("127.0.0.2", "guess-again")
        expect(doubled).toMatchObject({ status: 429, headers: { "retry-after": "6" } })
        // The operations log names who is slowed, and from where.
        const page = yield* (yield* asAdmin).operationsLog.list({ urlParams: { limit: 20 } })
        const entry = page.entries.find((e) => e.outcome === "throttled" && e.principal === tenant.name)
        expect(entry).toMatchObject({ source_address: "127.0.0.2" })
        expect(entry?.detail).toContain(`for '${tenant.name}' from 127.0.0.2`)
      }))
  })

  layer(testServer(), { excludeTestServices: true })("per name from many addresses", (it) => {
    it.effect("guesses from many addresses only slow the name: the owner waits at most 30 s, then gets in", () =>
      Effect.gen(function*() {
        const { tenant } = yield* newTenant()
        const login = (from: string, password: string) =>
          postFrom(from, "/tenants/login", { name: tenant.name, password })
        // Twenty addresses, one guess each: the name's twenty free failures.
        for (let i = 0; i < 20; i++) expect((yield* login(`127.0.1.${i + 1}`, `guess-${i}-x`)).status).toBe(401)
        const slowed = yield* login("127.0.0.3", TENANT_PASSWORD)
        expect(slowed.status).toBe(429)
        const wait = Number(slowed.headers["retry-after"])
        expect(wait).toBeGreaterThan(0)
        expect(wait).toBeLessThanOrEqual(30)
        yield* Effect.sleep(`${wait * 1000 + 50} millis`)
        expect((yield* login("127.0.0.3", TENANT_PASSWORD)).status).toBe(200)
      }))
  })

  layer(testServer(), { excludeTestServices: true })("per address", (it) => {
    it.effect("after 50 failures from one address every name waits there; elsewhere nothing changes", () =>
      Effect.gen(function*() {
        const { tenant } = yield* newTenant()
        for (let i = 0; i < 50; i++) {
          yield* postFrom("127.0.0.4", "/tenants/login", { name: `nobody-${i}`, password: "whatever1" })
        }
        const refused = yield* postFrom("127.0.0.4", "/tenants/login", { name: tenant.name, password: TENANT_PASSWORD })
        expect(refused.status).toBe(429)
        const elsewhere = yield* postFrom("127.0.0.5", "/tenants/login", {
          name: tenant.name,
          password: TENANT_PASSWORD
        })
        expect(elsewhere.status).toBe(200)
      }))
  })
})
