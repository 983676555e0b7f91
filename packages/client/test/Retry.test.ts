/**
 * Retries: calls ride out a 503 or a dropped connection, a POST with the same Idempotency-Key
 * on every attempt; calls that are not safe to repeat (PATCH, a restart, a token rotation) are
 * sent once. A local server answers 503 a set number of times.
 */
import { FetchHttpClient } from "@effect/platform"
import { expect, it } from "@effect/vitest"
import { Errors, TenetClient } from "@tenet/client"
import { Ids } from "@tenet/core"
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A server that answers 503 (or `refusal`) to the first `failures` requests, then what a Tenet
 * server would.
 */
const flaky = (
  failures: number,
  refusal: { readonly status: number; readonly headers?: Record<string, string> } = { status: 503 }
) =>
  Effect.acquireRelease(
    Effect.async<{ server: Http.Server; url: string; hits: Array<string>; keys: Array<string | undefined> }>(
      (resume) => {
        const hits: Array<string> = []
        const keys: Array<string | undefined> = []
        const server = Http.createServer((req, res) => {
          hits.push(`${req.method} ${req.url}`)
          keys.push(req.headers["idempotency-key"] as string | undefined)
          res.setHeader("content-type", "application/json")
          if (hits.length <= failures) {
            res.writeHead(refusal.status, refusal.headers).end(JSON.stringify({ detail: "not now" }))
          } else if (req.url === "/healthz") {
            res.writeHead(200).end(
              JSON.stringify({ status: "ok", store: "memory", orchestrator: "simulated", edge: "simulated" })
            )
          } else {
            res.writeHead(503).end(JSON.stringify({ detail: "the store is unavailable" }))
          }
        })
        server.listen(0, "127.0.0.1", () =>
          resume(
            Effect.succeed({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, keys })
          ))
      }
    ),
    ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
  )

it.scopedLive(
  "a GET is retried through 503s; a POST is retried with one Idempotency-Key, then fails with the server's error",
  () =>
    Effect.gen(function*() {
      const { hits, keys, url } = yield* flaky(2)
      const client = yield* TenetClient.make({ baseUrl: url, retry: { times: 3 } }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const health = yield* client.system.healthz().pipe(Effect.provide(FetchHttpClient.layer))
      expect(health.status).toBe("ok")
      expect(hits).toEqual(["GET /healthz", "GET /healthz", "GET /healthz"])
      const refused = yield* Effect.flip(
        client.adminIdentity.login({ payload: { username: "admin", password: "pw" } }).pipe(
          Effect.provide(FetchHttpClient.layer)
        )
      )
      expect(refused).toBeInstanceOf(Errors.ServiceUnavailable)
      const posts = hits.flatMap((h, i) => h.startsWith("POST") ? [keys[i]] : [])
      expect(posts).toHaveLength(4)
      expect(new Set(posts).size).toBe(1)
      expect(posts[0]).toMatch(/^[0-9a-f-]{36}$/)
      expect(keys.slice(0, 3)).toEqual([undefined, undefined, undefined])
    }).pipe(Effect.provide(FetchHttpClient.layer)),
  { timeout: 20_000 }
)

it.scopedLive(
  "each call gets a key of its own; PATCH, restart and token rotation are sent once",
  () =>
    Effect.gen(function*() {
      const { hits, keys, url } = yield* flaky(0)
      const client = yield* TenetClient.make({
        baseUrl: url,
        retry: { times: 3 },
        tenantToken: "t",
        tenantId: crypto.randomUUID()
      })
      const pod = Ids.PodId.make(crypto.randomUUID())
      yield* Effect.flip(client.pods.restart({ path: { pod_id: pod } }))
      yield* Effect.flip(client.pods.configure({ path: { pod_id: pod }, payload: { auto_healing: true } }))
      yield* Effect.flip(client.tenantIdentity.rotateToken({ path: { tenant_id: Ids.TenantId.make(pod) } }))
      expect(hits.map((h) => h.split(" ")[0])).toEqual(["POST", "PATCH", "POST"])
      yield* Effect.flip(client.pods.addReplica({ path: { pod_id: pod } }))
      yield* Effect.flip(client.pods.removeReplica({ path: { pod_id: pod } }))
      const scaling = keys.slice(3)
      expect(scaling).toHaveLength(8)
      expect(new Set(scaling.slice(0, 4)).size).toBe(1)
      expect(new Set(scaling.slice(4)).size).toBe(1)
      expect(scaling[0]).not.toBe(scaling[4])
    }).pipe(Effect.provide(FetchHttpClient.layer)),
  { timeout: 20_000 }
)

it.scoped("with retries off, a 503 is the caller's at once", () =>
  Effect.gen(function*() {
    const { hits, url } = yield* flaky(1)
    const client = yield* TenetClient.make({ baseUrl: url, retry: false })
    const error = yield* Effect.flip(client.system.healthz())
    expect(error).toBeInstanceOf(Errors.ServiceUnavailable)
    expect(hits).toHaveLength(1)
  }).pipe(Effect.provide(FetchHttpClient.layer)))

it.scopedLive(
  "a 429 is retried after its Retry-After; one longer than the cap is the caller's at once",
  () =>
    Effect.gen(function*() {
      const { hits, url } = yield* flaky(1, { status: 429, headers: { "retry-after": "1" } })
      const client = yield* TenetClient.make({ baseUrl: url })
      const started = Date.now()
      expect((yield* client.system.healthz()).status).toBe("ok")
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
      expect(hits).toHaveLength(2)

      const locked = yield* flaky(1, { status: 429, headers: { "retry-after": "900" } })
      const impatient = yield* TenetClient.make({ baseUrl: locked.url, retry: { cap: "5 seconds" } })
      const error = yield* Effect.flip(impatient.tenantIdentity.login({ payload: { name: "t", password: "guess" } }))
      expect(error).toBeInstanceOf(Errors.TooManyRequests)
      expect(locked.hits).toHaveLength(1)
    }).pipe(Effect.provide(FetchHttpClient.layer)),
  { timeout: 20_000 }
)

it.scopedLive(
  "the budget bounds the time one call waits: past it, the last answer is the caller's",
  () =>
    Effect.gen(function*() {
      // Every wait is at least 1 s (Retry-After); a budget of 2.5 s allows two of them.
      const { hits, url } = yield* flaky(10, { status: 503, headers: { "retry-after": "1" } })
      const client = yield* TenetClient.make({ baseUrl: url, retry: { times: 10, budget: "2500 millis" } })
      const error = yield* Effect.flip(client.system.healthz())
      expect(error).toBeInstanceOf(Errors.ServiceUnavailable)
      expect(hits).toHaveLength(3)
    }).pipe(Effect.provide(FetchHttpClient.layer)),
  { timeout: 20_000 }
)
