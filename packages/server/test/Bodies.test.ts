/**
 * Bodies no endpoint accepts, whoever sends them: nesting past the limit (a stack overflow
 * answered 500 before, even unauthenticated), text that cannot be stored as sent (a lone
 * surrogate read back as U+FFFD on the SQL stores), `__proto__` keys (silently dropped from
 * env_vars), and refused values echoed back whole.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Api, JsonBody } from "@tenet/core"
import { Effect, FastCheck as fc } from "effect"
import { TestServer } from "../src/index.js"
import { asAdmin, raw, testServer, uniqueName, workspace } from "./Harness.js"

const adminToken = Effect.map(
  raw("POST", "/admin/login", { body: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD } }),
  (r) => (r.body as { api_token: string }).api_token
)

const nested = (depth: number, leaf: unknown = "x"): unknown => {
  let value = leaf
  for (let i = 0; i < depth; i++) value = { a: value }
  return value
}

layer(testServer(), { excludeTestServices: true })("request bodies", (it) => {
  it.effect("a login nested 5,000 levels deep is a 400 naming the limit, not a 500", () =>
    Effect.gen(function*() {
      const deep = `{"username":${"{\"a\":".repeat(5_000)}"x"${"}".repeat(5_000)},"password":"x"}`
      const response = yield* raw("POST", "/admin/login", { body: deep })
      expect(response.status).toBe(400)
      expect((response.body as { detail: string }).detail).toContain(
        `nests deeper than ${JsonBody.MAX_DEPTH} levels`
      )
    }))

  it.prop(
    "nesting is refused exactly past the limit",
    [fc.integer({ min: 1, max: 2 * JsonBody.MAX_DEPTH })],
    ([depth]) => {
      const problem = JsonBody.problemOf(nested(depth))
      expect(problem === null).toBe(depth <= JsonBody.MAX_DEPTH)
    }
  )

  it.effect("a lone surrogate is refused (400) and nothing is created", () =>
    Effect.gen(function*() {
      const admin = yield* asAdmin
      const name = uniqueName("lone")
      const response = yield* raw("POST", "/tenants", {
        headers: { "x-admin-token": yield* adminToken },
        body: `{"name":"${name}","password":"long enough password","description":"lone\\ud800"}`
      })
      expect(response.status).toBe(400)
      expect((response.body as { detail: string }).detail).toBe(
        "description: must not contain a lone UTF-16 surrogate (text that is not Unicode)"
      )
      expect((yield* admin.tenants.list({ urlParams: {} })).some((t) => t.name === name)).toBe(false)
      // A whole pair is a character like any other.
      expect(JsonBody.problemOf({ description: "tenet \ud835\udd4b" })).toBeNull()
      // Named by path as every other input problem is.
      expect(JsonBody.problemOf({ vpcs: [{ name: "a\u0000" }] })?.path).toEqual(["vpcs", 0, "name"])
    }))

  it.effect("a field no store keeps is 422 naming it where the endpoint declares RuleValidation, 400 elsewhere", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const rule = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: {
          vpc_id: w.vpc.id,
          name: "a\u0000b",
          direction: "ingress",
          action: "allow",
          priority: 10,
          remote_type: "cidr",
          remote_cidr: "10.0.0.0/8"
        }
      })
      expect(rule.status).toBe(422)
      const problem = { field: "name", message: "must not contain the NUL character (U+0000)" }
      expect(rule.body).toEqual({ detail: problem, errors: [problem] })
      const vpc = yield* raw("POST", "/vpcs", { headers: w.headers, body: { ...w.creds, name: "a\u0000b" } })
      expect(vpc.status).toBe(400)
      expect((vpc.body as { detail: string }).detail).toBe("name: must not contain the NUL character (U+0000)")
    }))

  it.effect("an env var named __proto__ is refused, not silently dropped", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const response = yield* w.createPod({ env_vars: JSON.parse("{\"MODE\":\"a\",\"__proto__\":\"b\"}") })
      expect(response.status).toBe(400)
      expect((response.body as { detail: string }).detail).toBe(
        "env_vars.__proto__: '__proto__' is not accepted as a name"
      )
    }))

  it.effect("a refused value is not echoed back whole", () =>
    Effect.gen(function*() {
      const huge = Array.from({ length: 100_000 }, (_, i) => `n${i}`)
      const response = yield* raw("POST", "/admin/login", { body: { username: huge, password: "x" } })
      expect(response.status).toBe(400)
      expect(response.text.length).toBeLessThan(4_000)
    }))
})

describe("the contract's input errors", () => {
  it("RuleValidation is declared for the bodies of the security-rule endpoints (rules, declarations, guardrails) alone", () => {
    const ruleFamily = [
      /^\/security-rules/,
      /^\/vpcs\/:vpc_id\/(security-rules|guardrails)$/,
      /^\/guardrails\//,
      /^\/tenants\/:tenant_id\/guardrails/
    ]
    const ruleEndpoints = Api.endpoints.filter((e) => e.error === "RuleValidation").map((e) => e.path)
    expect(ruleEndpoints.length).toBeGreaterThan(0)
    expect(ruleEndpoints.filter((path) => !ruleFamily.some((family) => family.test(path)))).toEqual([])
    expect(
      Api.endpoints.filter((e) => e.path.startsWith("/security-rules") && e.takesBody).every((e) =>
        e.error === "RuleValidation"
      )
    ).toBe(true)
    // A path's or a query's problem is 400 on every endpoint: a read, which has neither body nor 422, declares none.
    expect(Api.endpoints.filter((e) => e.method === "GET" && e.error === "RuleValidation").map((e) => e.endpoint))
      .toEqual([])
  })
})
