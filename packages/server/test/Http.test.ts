import { expect, layer } from "@effect/vitest"
import { MemoryStore } from "@tenet/adapters-memory"
import { Api } from "@tenet/core"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { TestServer } from "../src/index.js"
import { adminLogin, newTenant, orchestratorUnderTest, raw, storeUnderTest, testServer, workspace } from "./Harness.js"

const admin = Effect.map(adminLogin, (s) => ({ "x-admin-token": s.api_token }))

layer(testServer({ maxBodyBytes: 4096 }), { excludeTestServices: true })("request guard", (it) => {
  it.effect("an unknown path is 404 JSON; a method the path does not have is 405 naming those it has", () =>
    Effect.gen(function*() {
      for (const [method, path] of [["GET", "/nope"], ["POST", "/vpcs/x/y"]] as const) {
        const response = yield* raw(method, path)
        expect(response.status).toBe(404)
        expect(response.contentType).toContain("application/json")
        expect(response.body).toEqual({ detail: `no route for ${method} ${path}` })
      }
      for (
        const [method, path, allowed] of [
          ["PUT", "/tenants", "GET, POST"],
          ["DELETE", "/provider-config", "GET, POST"],
          ["PUT", "/vpcs/7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a?x=1", "DELETE"]
        ] as const
      ) {
        const response = yield* raw(method, path)
        expect(response.status).toBe(405)
        expect(response.headers["allow"]).toBe(allowed)
        expect(response.body).toEqual({
          detail: `${method} is not allowed on ${path.split("?")[0]}; use ${allowed}`
        })
      }
    }))

  it.effect("the server's root sends a browser to the console", () =>
    Effect.gen(function*() {
      const root = yield* raw("GET", "/")
      expect(root.status).toBe(302)
      expect(root.headers["location"]).toBe("/console")
    }))

  it.effect("a NUL character anywhere in a body is refused before any store sees it", () =>
    Effect.gen(function*() {
      const { creds, headers, vpc } = yield* workspace
      const named = yield* raw("POST", "/vpcs", {
        headers,
        body: { ...creds, name: "a\u0000b", enable_internet: true }
      })
      expect(named).toMatchObject({
        status: 400,
        body: { detail: "name: must not contain the NUL character (U+0000)" }
      })
      const rule = yield* raw("POST", "/security-rules", {
        headers,
        body: {
          vpc_id: vpc.id,
          name: "r",
          description: "x\u0000",
          direction: "ingress",
          action: "allow",
          priority: 1,
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0"
        }
      })
      expect(rule).toMatchObject({ status: 422, body: { detail: { field: "description" } } })
      const deep = yield* raw("POST", "/vpcs", { headers, body: "[".repeat(1500) + "]".repeat(1500) })
      expect(deep.status).toBe(400)
    }))

  it.effect("malformed JSON is 400, a non-JSON content type 415, an oversized body 413", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      const malformed = yield* raw("POST", "/tenants", { headers, body: "{\"name\": " })
      expect(malformed.status).toBe(400)
      expect((malformed.body as { detail: string }).detail).toMatch(/^body: is not valid JSON/)
      const form = yield* raw("POST", "/tenants", {
        headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
        body: "name=x&password=y"
      })
      expect(form.status).toBe(415)
      const big = yield* raw("POST", "/tenants", {
        headers,
        body: JSON.stringify({ name: "big", password: "x".repeat(5000) })
      })
      expect(big.status).toBe(413)
      expect(big.body).toEqual({ detail: "the request body exceeds 4096 bytes" })
    }))

  it.effect("the body is checked before authentication, and nothing is created by a rejected request", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      const before = (yield* raw("GET", "/tenants", { headers })).body as Array<unknown>
      yield* raw("POST", "/tenants", { headers, body: "[1,2" })
      yield* raw("POST", "/tenants", { headers: { ...headers, "content-type": "text/plain" }, body: "hello" })
      const after = (yield* raw("GET", "/tenants", { headers })).body as Array<unknown>
      expect(after).toEqual(before)
    }))

  it.effect("security-rule validation failures are 422 naming the field", () =>
    Effect.gen(function*() {
      const { session } = yield* newTenant()
      const response = yield* raw("POST", "/security-rules", {
        headers: { "x-auth-token": session.api_token },
        body: {
          vpc_id: "00000000-0000-4000-8000-000000000000",
          name: "web",
          direction: "ingress",
          action: "allow",
          priority: 5000,
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0"
        }
      })
      expect(response.status).toBe(422)
      const problem = { field: "priority", message: "must be an integer from 1 to 2000" }
      expect(response.body).toEqual({ detail: problem, errors: [problem] })
      // A query parameter left out is an invalid parameter (400), as on every endpoint.
      const missing = yield* raw("GET", "/security-rules", { headers: { "x-auth-token": session.api_token } })
      expect(missing).toMatchObject({ status: 400, body: { errors: [{ field: "vpc_id", message: "is missing" }] } })
    }))
})

layer(testServer(), { excludeTestServices: true })("health, version and documents", (it) => {
  // The switch that takes the store down belongs to the memory store.
  it.effect.skipIf(storeUnderTest !== "memory")(
    "healthz names the backends; 503 with a detail while the store is down",
    () =>
      Effect.gen(function*() {
        const ok = yield* raw("GET", "/healthz")
        expect(ok.status).toBe(200)
        expect(ok.body).toEqual({
          status: "ok",
          store: "memory",
          orchestrator: orchestratorUnderTest,
          edge: "simulated"
        })
        const store = yield* MemoryStore.StoreSwitches
        yield* store.setAvailable(false)
        const down = yield* raw("GET", "/healthz")
        const login = yield* raw("POST", "/tenants/login", { body: { name: "someone", password: "whatever1" } })
        yield* store.setAvailable(true)
        expect(down.status).toBe(503)
        expect((down.body as { detail: string }).detail).toContain("store is unavailable")
        expect(login.status).toBe(503)
        // Worth retrying, and when: a client's backoff starts from it.
        expect([down.headers["retry-after"], login.headers["retry-after"]]).toEqual(["1", "1"])
      })
  )

  it.effect("healthz names the store the suite runs on", () =>
    Effect.gen(function*() {
      expect(((yield* raw("GET", "/healthz")).body as { store: string }).store).toBe(storeUnderTest)
    }))

  it.effect("version reports the server and API versions", () =>
    Effect.gen(function*() {
      const response = yield* raw("GET", "/version")
      expect(response.body).toEqual({ name: "tenet", version: TestServer.VERSION, api: Api.API_VERSION })
    }))

  it.effect("the OpenAPI document lists every endpoint of the contract with its security", () =>
    Effect.gen(function*() {
      const response = yield* raw("GET", "/openapi.json")
      expect(response.status).toBe(200)
      const document = response.body as {
        paths: Record<string, Record<string, { security?: Array<Record<string, unknown>> }>>
        components: {
          securitySchemes: Record<string, { name: string }>
          schemas: Record<string, { examples?: Array<unknown> }>
        }
      }
      const routes = Object.values(Api.TenetApi.groups).flatMap((group) =>
        Object.values(group.endpoints).map((e) => [e.method.toLowerCase(), e.path.replace(/:(\w+)/g, "{$1}")] as const)
      )
      expect(routes.length).toBeGreaterThan(40)
      for (const [method, path] of routes) {
        expect(document.paths[path]?.[method], `${method} ${path}`).toBeDefined()
      }
      expect(document.paths["/tenants"]?.get?.security).toEqual([{ adminToken: [] }])
      // Body failures only where there is a body.
      const statuses = (method: string, path: string) =>
        Object.keys((document.paths[path]?.[method] as { responses: object }).responses)
      for (const status of ["411", "413", "415"]) {
        expect(statuses("get", "/healthz")).not.toContain(status)
        expect(statuses("post", "/vpcs")).toContain(status)
      }
      // Every operation says what it does; every request body comes with an example.
      const operations = Object.values(document.paths).flatMap((ops) => Object.values(ops)) as Array<{
        summary?: string
        requestBody?: { content: { "application/json": { schema: { $ref?: string } } } }
      }>
      const schemas = document.components.schemas
      for (const op of operations) {
        expect(op.summary).toBeTruthy()
        const body = op.requestBody?.content["application/json"].schema
        const ref = body?.$ref
        const schema = ref === undefined ? body : schemas[ref.split("/").pop()!]
        if (body !== undefined) expect(JSON.stringify(schema), ref).toContain(`"examples"`)
      }
      // The answers of the insight endpoints come with an example too.
      for (const name of ["RuleImpact", "TopologyImpact", "ReachabilityMatrix"]) {
        expect(schemas[name]?.examples?.length, name).toBe(1)
      }
      expect(Object.values(document.components.securitySchemes).map((s) => s.name).sort()).toEqual(
        ["X-API-Token", "X-Admin-Token", "X-Auth-Token"]
      )
    }))

  it.effect("the OpenAPI document lists every query parameter an operation takes: dry_run where a dry run is", () =>
    Effect.gen(function*() {
      const document = (yield* raw("GET", "/openapi.json")).body as {
        paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }> }>>
      }
      const queryOf = (endpoint: Api.Endpoint) =>
        (document.paths[endpoint.path.replace(/:(\w+)/g, "{$1}")]?.[endpoint.method.toLowerCase()]?.parameters ?? [])
          .filter((p) => p.in === "query")
          .map((p) => p.name)
      for (const endpoint of Api.endpoints) {
        expect(queryOf(endpoint).sort(), endpoint.endpoint).toEqual([...endpoint.query].sort())
      }
      // The operations whose handlers read `dry_run`: /docs and generated clients must find it there.
      expect(Api.endpoints.filter((e) => queryOf(e).includes("dry_run")).map((e) => e.endpoint).sort()).toEqual([
        "addressSets.update",
        "securityRules.create",
        "securityRules.delete",
        "securityRules.reorder",
        "securityRules.replace",
        "securityRules.update",
        "topology.deploy"
      ])
    }))

  it.effect("the docs page is served under a policy: its own inline scripts only, framed by no one", () =>
    Effect.gen(function*() {
      const response = yield* raw("GET", "/docs")
      expect(response.status).toBe(200)
      expect(response.contentType).toContain("text/html")
      const policy = String(response.headers["content-security-policy"])
      expect(policy).toContain("default-src 'none'")
      expect(policy).toContain("frame-ancestors 'none'")
      expect(policy).not.toContain("'unsafe-eval'")
      expect(policy).toContain("'wasm-unsafe-eval'")
      // Every inline script is allowed by its digest, and nothing else inline is.
      const scripts = [...response.text.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)]
      expect(scripts.length).toBeGreaterThan(0)
      for (const [, script] of scripts) {
        expect(policy).toContain(`'sha256-${createHash("sha256").update(script!).digest("base64")}'`)
      }
      expect(policy).not.toMatch(/script-src[^;]*'unsafe-inline'/)
      expect(response.headers["x-content-type-options"]).toBe("nosniff")
      expect(response.headers["referrer-policy"]).toBe("no-referrer")
      // JSON answers are not sniffed either.
      expect((yield* raw("GET", "/healthz")).headers["x-content-type-options"]).toBe("nosniff")
    }))
})
