/**
 * The request path has one router, the platform's: every endpoint learns it was matched from
 * the contract's own middleware, and a method a path does not have is a route of that router.
 */
import type { HttpApiEndpoint } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Api, MatchedEndpoint } from "@tenet/core"
import { Effect } from "effect"
import { raw, testServer } from "./Harness.js"

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const

/** A concrete path for a template: every parameter a UUID (what most of them are). */
const concrete = (path: string) => path.replace(/:[a-z_]+/g, "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a")

layer(testServer(), { excludeTestServices: true })("one router", (it) => {
  it("MatchedEndpoint is every endpoint's first middleware (added last, it runs first)", () => {
    for (const group of Object.values(Api.TenetApi.groups)) {
      for (const endpoint of Object.values(group.endpoints)) {
        const middlewares = [...(endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps).middlewares]
        expect(middlewares.at(-1), `${group.identifier}.${endpoint.name}`).toBe(MatchedEndpoint.MatchedEndpoint)
      }
    }
  })

  it.effect("every method a contract path does not have is 405 naming those it has, whatever the path", () =>
    Effect.gen(function*() {
      const paths = [...new Set(Api.endpoints.map((e) => e.path))]
      for (const path of paths) {
        const url = concrete(path)
        // What a request to this URL may reach: its own endpoints, and parametric ones it fits.
        const served = new Set(
          Api.endpoints.filter((e) => {
            const t = e.path.split("/")
            const u = url.split("/")
            return t.length === u.length && t.every((s, i) => s.startsWith(":") || s === u[i])
          }).map((e) => e.method)
        )
        const allowed = [...served].sort().join(", ")
        for (const method of METHODS.filter((m) => !served.has(m))) {
          const response = yield* raw(method, url)
          expect(response.status, `${method} ${url}`).toBe(405)
          expect(response.headers["allow"], `${method} ${url}`).toBe(allowed)
        }
      }
    }))
})
