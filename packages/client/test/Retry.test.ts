/**
 * Retries: idempotent calls ride out a 503 or a dropped connection; calls that may not be
 * safe to repeat (POST, PATCH) are sent once. A local server answers 503 a set number of times.
 */
import { FetchHttpClient } from "@effect/platform"
import { expect, it } from "@effect/vitest"
import { Errors, TenetClient } from "@tenet/client"
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** A server that answers 503 to the first `failures` requests, then what a Tenet server would. */
const flaky = (failures: number) =>
  Effect.acquireRelease(
    Effect.async<{ server: Http.Server; url: string; hits: Array<string> }>((resume) => {
      const hits: Array<string> = []
      const server = Http.createServer((req, res) => {
        hits.push(`${req.method} ${req.url}`)
        res.setHeader("content-type", "application/json")
        if (hits.length <= failures) {
          res.writeHead(503).end(JSON.stringify({ detail: "the store is unavailable" }))
        } else if (req.url === "/healthz") {
          res.writeHead(200).end(
            JSON.stringify({ status: "ok", store: "memory", orchestrator: "simulated", edge: "simulated" })
          )
        } else {
          res.writeHead(503).end(JSON.stringify({ detail: "the store is unavailable" }))
        }
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits })))
    }),
    ({ server }) =>
      Effect.async<void>((resume) =>
        void server.close(() => resume(Effect.void))
      )
  )

it.scopedLive(
  "a GET is retried through 503s; a POST is sent once and fails with the server's error",
  () =>
    Effect.gen(function*() {
      const { hits, url } = yield* flaky(2)
      const client = yield* TenetClient.make({ baseUrl: url, retries: 3 }).pipe(Effect.provide(FetchHttpClient.layer))
      const health = yield* client.system.healthz().pipe(Effect.provide(FetchHttpClient.layer))
      expect(health.status).toBe("ok")
      expect(hits).toEqual(["GET /healthz", "GET /healthz", "GET /healthz"])
      const refused = yield* Effect.flip(
        client.adminIdentity.login({ payload: { username: "admin", password: "pw" } }).pipe(
          Effect.provide(FetchHttpClient.layer)
        )
      )
      expect(refused).toBeInstanceOf(Errors.ServiceUnavailable)
      expect(hits.filter((h) => h.startsWith("POST"))).toHaveLength(1)
    }).pipe(Effect.provide(FetchHttpClient.layer)),
  { timeout: 20_000 }
)

it.scoped("with retries off, a 503 is the caller's at once", () =>
  Effect.gen(function*() {
    const { hits, url } = yield* flaky(1)
    const client = yield* TenetClient.make({ baseUrl: url, retries: 0 })
    const error = yield* Effect.flip(client.system.healthz())
    expect(error).toBeInstanceOf(Errors.ServiceUnavailable)
    expect(hits).toHaveLength(1)
  }).pipe(Effect.provide(FetchHttpClient.layer)))
