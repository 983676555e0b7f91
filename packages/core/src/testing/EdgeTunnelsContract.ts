/** The EdgeTunnels contract, as a vitest suite run with a fresh provider per test. */
import { describe, expect } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect } from "effect"
import { EdgeTunnels } from "../ports/EdgeTunnels.js"
import type { EdgeRoute } from "../ports/EdgeTunnels.js"
import { freshEach } from "./Suite.js"

const account = { account_id: "acct-1", api_token: "token-1" }
const route = (key: string, hostname: string): EdgeRoute => ({
  key,
  hostname,
  protocol: "https",
  service_url: "http://10.96.0.10:80",
  vpc: null
})

export const run = (name: string, makeEdge: () => Layer.Layer<EdgeTunnels>) =>
  describe(`EdgeTunnels contract: ${name}`, () => {
    const test = freshEach(makeEdge)

    test(
      "publishing is idempotent per key and unpublishing absent routes succeeds",
      Effect.gen(function*() {
        const edge = yield* EdgeTunnels
        yield* edge.publish(account, route("k1", "a.example.com"))
        yield* edge.publish(account, route("k1", "a.example.com"))
        yield* edge.publish(account, { ...route("k1", "a.example.com"), service_url: "http://10.96.0.11:8080" })
        yield* edge.unpublish(account, route("k1", "a.example.com"))
        yield* edge.unpublish(account, route("k1", "a.example.com"))
        yield* edge.unpublish(account, route("never-published", "n.example.com"))
      })
    )

    test(
      "a hostname served by another route is a conflict until it is withdrawn",
      Effect.gen(function*() {
        const edge = yield* EdgeTunnels
        yield* edge.publish(account, route("k1", "b.example.com"))
        const error = yield* Effect.flip(edge.publish(account, route("k2", "b.example.com")))
        expect(error).toMatchObject({ _tag: "EdgeError", reason: "conflict" })
        yield* edge.unpublish(account, route("k1", "b.example.com"))
        yield* edge.publish(account, route("k2", "b.example.com"))
      })
    )

    test(
      "calls without credentials are refused as unauthorized",
      Effect.gen(function*() {
        const edge = yield* EdgeTunnels
        const error = yield* Effect.flip(
          edge.publish({ account_id: "acct-1", api_token: "" }, route("k", "c.example.com"))
        )
        expect(error).toMatchObject({ reason: "unauthorized" })
      })
    )
  })
