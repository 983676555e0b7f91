/**
 * Request cost through the real HTTP server on the memory platform: token-authenticated
 * reads, and login at the production scrypt cost (which dominates it, by design).
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { TestServer } from "@tenet/server"
import { Effect, ManagedRuntime } from "effect"
import { afterAll, bench, describe } from "vitest"

const fast = ManagedRuntime.make(TestServer.layer())
const production = ManagedRuntime.make(TestServer.layer({ platform: { scryptLogN: 15 } }))

const send = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.flatMap(HttpClient.HttpClient, (http) => Effect.flatMap(http.execute(request), (r) => r.text)).pipe(
    Effect.scoped
  )

/** Runs one request to completion, for a benchmark iteration. */
const hit = (runtime: typeof fast, request: HttpClientRequest.HttpClientRequest) => async () => {
  await runtime.runPromise(send(request))
}

const login = (username: string, password: string) =>
  HttpClientRequest.post("/admin/login").pipe(HttpClientRequest.bodyUnsafeJson({ username, password }))

const token = await fast.runPromise(Effect.gen(function*() {
  const body = JSON.parse(yield* send(login(TestServer.ADMIN_USERNAME, TestServer.ADMIN_PASSWORD))) as {
    api_token: string
  }
  for (let i = 0; i < 100; i++) {
    yield* send(
      HttpClientRequest.post("/tenants").pipe(
        HttpClientRequest.setHeader("x-admin-token", body.api_token),
        HttpClientRequest.bodyUnsafeJson({ name: `bench-${i}`, password: "bench-password" })
      )
    )
  }
  return body.api_token
}))
await production.runPromise(send(HttpClientRequest.get("/healthz")))

afterAll(async () => {
  await fast.dispose()
  await production.dispose()
})

const listTenants = HttpClientRequest.get("/tenants").pipe(HttpClientRequest.setHeader("x-admin-token", token))

describe("HTTP on the memory platform", () => {
  bench("GET /healthz", hit(fast, HttpClientRequest.get("/healthz")))
  bench("GET /tenants as admin, 100 tenants", hit(fast, listTenants))
  bench(
    "POST /admin/login, scrypt N=2^15",
    hit(production, login(TestServer.ADMIN_USERNAME, TestServer.ADMIN_PASSWORD)),
    {
      iterations: 20
    }
  )
})
