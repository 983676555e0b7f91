/**
 * The isolation matrix. Every endpoint of the contract (enumerated from it, so new endpoints
 * are covered without editing this file) is called with no token, a malformed token, a revoked
 * token, another tenant's token aimed at this tenant's resources, and a tenant token on admin
 * endpoints. None may succeed against the victim, leak the victim's data, or change its state.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestServer } from "../src/index.js"
import { asAdmin, newTenant, raw, testServer } from "./Harness.js"
import type { Json } from "./Victim.js"
import { endpoints, headersFor, target, victim } from "./Victim.js"

layer(testServer(), { excludeTestServices: true })("isolation matrix", (it) => {
  it.effect(
    "no endpoint admits a missing, malformed, revoked or foreign token, or a tenant on admin routes",
    () =>
      Effect.gen(function*() {
        const v = yield* victim
        const intruder = yield* newTenant("intruder")
        const intruderToken = intruder.session.api_token
        // The admin's token before a rotation: revoked by it.
        const revokedAdmin = ((yield* raw("POST", "/admin/login", {
          body: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD }
        })).body as Json).api_token as string
        yield* raw("POST", "/admin/rotate-token", { headers: { "x-admin-token": revokedAdmin } })
        const admin = yield* asAdmin

        const { aimedAtVictim, secrets, snapshot, victimIds } = target(v, admin)
        const before = yield* snapshot
        const failures: Array<string> = []
        let calls = 0

        for (const endpoint of endpoints.filter((e) => e.schemes.length > 0)) {
          const tenantScheme = endpoint.schemes.some((s) => s !== "adminToken")
          const adminOnly = endpoint.schemes.every((s) => s === "adminToken")
          const cases: Array<readonly [string, Record<string, string>, string, ReadonlyArray<number>]> = [
            ["no token", {}, "", [401]],
            ["malformed token", headersFor(endpoint.schemes, "tenet_not-a-real-token"), "tenet_not-a-real-token", [401]]
          ]
          if (tenantScheme) {
            cases.push(["revoked tenant token", headersFor(endpoint.schemes, v.revoked), v.revoked, [401]])
          }
          if (endpoint.schemes.includes("adminToken")) {
            cases.push(["revoked admin token", { "x-admin-token": revokedAdmin }, revokedAdmin, [401]])
          }
          if (adminOnly) {
            cases.push([
              "tenant token on an admin route",
              { "x-auth-token": v.token, "x-admin-token": v.token },
              v.token,
              [401, 403]
            ])
          }
          if (tenantScheme) {
            cases.push([
              "another tenant's token",
              headersFor(endpoint.schemes, intruderToken),
              intruderToken,
              [401, 403, 404]
            ])
          }

          for (const [name, headers, token, statuses] of cases) {
            const { body, url } = aimedAtVictim(endpoint, token)
            const response = yield* raw(endpoint.method, url, {
              headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
              ...(body === undefined ? {} : { body })
            })
            calls++
            const leaked = secrets.filter((s) => response.text.includes(s))
            // Another tenant may use endpoints that name nothing of the victim's: on its own data.
            const ownData = name === "another tenant's token" && response.status < 300 &&
              !Object.values(victimIds).some((id) => url.includes(id) || JSON.stringify(body ?? "").includes(id))
            if (leaked.length > 0) failures.push(`${endpoint.id} (${name}): leaked ${leaked.join(", ")}`)
            if (!ownData && !statuses.includes(response.status)) {
              failures.push(`${endpoint.id} (${name}): ${response.status} ${response.text.slice(0, 120)}`)
            }
            if (
              response.status >= 400 && (typeof response.body !== "object" || !("detail" in (response.body as Json)))
            ) {
              failures.push(`${endpoint.id} (${name}): error without a JSON detail`)
            }
          }
        }
        expect(failures).toEqual([])
        expect(calls).toBeGreaterThan(150)
        expect(yield* snapshot).toBe(before)
      }),
    { timeout: 120_000 }
  )
})
