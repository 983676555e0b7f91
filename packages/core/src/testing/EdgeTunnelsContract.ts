/** The EdgeTunnels contract, as a vitest suite run with a fresh provider per test. */
import { describe, expect } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect } from "effect"
import { EdgeTunnels, withdrawalOf } from "../ports/EdgeTunnels.js"
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
        yield* edge.unpublish(account, withdrawalOf(route("k1", "a.example.com")))
        yield* edge.unpublish(account, withdrawalOf(route("k1", "a.example.com")))
        yield* edge.unpublish(account, withdrawalOf(route("never-published", "n.example.com")))
      })
    )

    test(
      "a hostname served by another route is a conflict until it is withdrawn",
      Effect.gen(function*() {
        const edge = yield* EdgeTunnels
        yield* edge.publish(account, route("k1", "b.example.com"))
        const error = yield* Effect.flip(edge.publish(account, route("k2", "b.example.com")))
        expect(error).toMatchObject({ _tag: "EdgeError", reason: "conflict" })
        yield* edge.unpublish(account, withdrawalOf(route("k1", "b.example.com")))
        yield* edge.publish(account, route("k2", "b.example.com"))
      })
    )

    test(
      "held lists what is published, as published, and nothing withdrawn",
      Effect.gen(function*() {
        const edge = yield* EdgeTunnels
        expect(yield* edge.held(account)).toEqual([])
        yield* edge.publish(account, route("k1", "h1.example.com"))
        yield* edge.publish(account, { ...route("k2", "h2.example.com"), service_url: "http://10.96.0.11:8080" })
        yield* edge.publish(account, route("k3", "h3.example.com"))
        yield* edge.unpublish(account, withdrawalOf(route("k3", "h3.example.com")))
        const held = [...yield* edge.held(account)].sort((a, b) => a.key.localeCompare(b.key))
        expect(held.map(({ hostname, key, service_url, vpc_id }) => ({ key, hostname, service_url, vpc_id }))).toEqual([
          { key: "k1", hostname: "h1.example.com", service_url: "http://10.96.0.10:80", vpc_id: null },
          { key: "k2", hostname: "h2.example.com", service_url: "http://10.96.0.11:8080", vpc_id: null }
        ])
        // What is held withdraws as it is: the resync withdraws orphans from this alone.
        yield* Effect.forEach(held, (h) => edge.unpublish(account, h), { discard: true })
        expect(yield* edge.held(account)).toEqual([])
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
