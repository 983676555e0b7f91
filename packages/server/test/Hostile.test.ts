/**
 * Hostile input, property-based: every endpoint that takes a body gets random JSON and its
 * documented example with one field replaced by something hostile (wrong types, huge or deeply
 * nested values, unicode, prototype keys, numbers at and past bounds, injection-shaped strings),
 * from an authorized caller; every endpoint with a path gets hostile path values. Never a 500,
 * always a JSON `detail` on errors, and a rejected request changes nothing.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { TestServer } from "../src/index.js"
import { asAdmin, raw, testServer } from "./Harness.js"
import type { Endpoint, Json } from "./Victim.js"
import { endpoints, target, victim } from "./Victim.js"

const injection = fc.constantFrom(
  "'; DROP TABLE tenants; --",
  "\" OR 1=1 --",
  "<script>alert(1)</script>",
  "../../../../etc/passwd",
  "${jndi:ldap://x/a}",
  "{{7*7}}",
  "%00",
  "\u0000",
  "\ud800",
  "𝕋𝕖𝕟𝕖𝕥",
  "ｔｅｎｅｔ",
  "a".repeat(70_000)
)

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  injection,
  fc.constantFrom(
    -1,
    0,
    65_536,
    2 ** 31,
    2 ** 53 + 1,
    1e308,
    -1e308,
    0.5,
    true,
    null,
    [],
    {},
    "NaN",
    "Infinity",
    "",
    " "
  ),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.array(fc.string(), { minLength: 500, maxLength: 2000 }),
  // Deep nesting.
  fc.integer({ min: 50, max: 400 }).map((depth) => {
    let v: unknown = "deep"
    for (let i = 0; i < depth; i++) v = { a: [v] }
    return v
  }),
  fc.jsonValue({ maxDepth: 3 })
)

/** The example with one field made hostile, an extra hostile key, or random JSON instead. */
const hostileBody = (example: unknown): fc.Arbitrary<unknown> => {
  const fields = typeof example === "object" && example !== null ? Object.keys(example) : []
  return fc.oneof(
    fc.jsonValue({ maxDepth: 4 }),
    ...(fields.length === 0 ? [] : [
      fc.tuple(fc.constantFrom(...fields), hostileValue).map(([field, value]) => ({
        ...(example as Json),
        [field]: value
      })),
      fc.tuple(fc.constantFrom("__proto__", "constructor", "prototype", "toString"), hostileValue).map((
        [key, value]
      ) =>
        JSON.parse(JSON.stringify({ ...(example as Json), placeholder: value }).replace("\"placeholder\"", `"${key}"`))
      )
    ])
  )
}

const hostilePathValue = fc.oneof(
  fc.constantFrom(
    "..",
    "%2e%2e",
    "%00",
    "null",
    "undefined",
    "-1",
    "00000000-0000-0000-0000-000000000000",
    "a".repeat(5000)
  ),
  fc.string({ minLength: 1, maxLength: 60 }).map(encodeURIComponent)
)

layer(testServer(), { excludeTestServices: true })("hostile input", (it) => {
  it.effect(
    "bodies and paths from the worst of the internet: never 500, always a JSON detail, nothing changed",
    () =>
      Effect.gen(function*() {
        const v = yield* victim
        const admin = yield* asAdmin
        const { aimedAtVictim, snapshot } = target(v, admin)
        const adminToken = yield* Effect.map(
          raw("POST", "/admin/login", {
            body: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD }
          }),
          (r) => (r.body as Json).api_token as string
        )
        const headersOf = (endpoint: Endpoint) =>
          endpoint.schemes.includes("tenantToken")
            ? { "x-auth-token": v.token }
            : endpoint.schemes.includes("adminToken")
            ? { "x-admin-token": adminToken }
            : {}
        const failures: Array<string> = []
        let calls = 0
        // The state as the last request left it: each check reads it once, after its request.
        let before = yield* snapshot

        const check = (endpoint: Endpoint, method: string, url: string, body: unknown) =>
          Effect.gen(function*() {
            const response = yield* raw(method as Endpoint["method"], url, {
              headers: { ...headersOf(endpoint), "content-type": "application/json" },
              ...(body === undefined ? {} : { body: JSON.stringify(body) })
            })
            calls++
            const detail = typeof response.body === "object" && response.body !== null && "detail" in response.body
            if (response.status >= 500) {
              failures.push(`${endpoint.id}: ${response.status} ${response.text.slice(0, 160)}`)
            }
            if (response.status >= 400 && !detail) {
              failures.push(`${endpoint.id}: ${response.status} without a JSON detail`)
            }
            const after = yield* snapshot
            if (response.status >= 400 && after !== before) {
              failures.push(`${endpoint.id}: a rejected request (${response.status}) changed state`)
            }
            before = after
          })

        for (const endpoint of endpoints.filter((e) => e.schemes.length > 0 && !e.id.endsWith("rotateToken"))) {
          const aimed = aimedAtVictim(endpoint, v.token)
          if (endpoint.example !== undefined) {
            for (const body of fc.sample(hostileBody(aimed.body), 8)) {
              yield* check(endpoint, endpoint.method, aimed.url, body)
            }
          }
          if (endpoint.path.includes(":") && endpoint.method === "GET") {
            for (const value of fc.sample(hostilePathValue, 4)) {
              const url = endpoint.path.replace(/:(\w+)/, value).replace(/:(\w+)/g, "x")
              yield* check(endpoint, endpoint.method, url, undefined)
            }
          }
        }
        expect(failures).toEqual([])
        expect(calls).toBeGreaterThan(100)
      }),
    { timeout: 300_000 }
  )
})
