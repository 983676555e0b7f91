/**
 * The provider's half of the controller on the simulated provider, as a tenant's integration
 * tests see it: a route removed or sent elsewhere at the provider behind Tenet's back is
 * published again by the resync (the change stream says what drifted), a route no committed
 * tunnel wants is withdrawn, and a service tunnel whose publish failed is published again.
 */
import { expect, layer } from "@effect/vitest"
import { SimulatedEdge } from "@tenet/adapters-memory"
import { EdgeController } from "@tenet/core"
import { Effect, Option } from "effect"
import { adminLogin, EDGE_ACCOUNT, raw, setProviderConfig, testServer, uniqueName, workspace } from "./Harness.js"
import * as Sse from "./Sse.js"

type Json = Record<string, any>

const admin = Effect.map(adminLogin, (s) => ({ "x-admin-token": s.api_token }))

/** A tenant with a pod and one active tunnel to it, the provider configured. */
const published = Effect.gen(function*() {
  yield* setProviderConfig(EDGE_ACCOUNT)
  const w = yield* workspace
  const pod = (yield* w.createPod({ service_port: 8080 })).body as Json
  const made = yield* raw("POST", `/pods/${pod.id}/tunnel`, {
    headers: w.headers,
    body: { tunnel_name: uniqueName("tun"), subdomain: uniqueName("sub"), protocol_type: "http" }
  })
  expect(made.status, made.text).toBe(201)
  const tunnel = made.body as Json
  expect(tunnel.status).toBe("active")
  return { ...w, pod, tunnel }
})

const routes = Effect.flatMap(SimulatedEdge.EdgeSwitches, (e) => e.routes)

/** A tenant's tunnel whose pod was deleted while the provider was down: the provider still serves it. */
const missedDelete = Effect.gen(function*() {
  const s = yield* published
  const edge = yield* SimulatedEdge.EdgeSwitches
  // The pod's delete withdraws its tunnels as best it can: the provider is down, the pod goes.
  yield* edge.setAvailable(false)
  const deleted = yield* raw("DELETE", `/pods/${s.pod.id}`, { headers: s.headers })
  yield* edge.setAvailable(true)
  expect(deleted.status).toBe(204)
  expect((yield* routes).some((r) => r.key === s.tunnel.id)).toBe(true)
  return s
})

const resync = Effect.flatMap(EdgeController.EdgeController, (c) => Effect.map(c.resync, Option.getOrThrow))

// Nothing settles: a service tunnel made a moment ago is the resync's at once.
layer(testServer({ controller: { settle: 0 } }), { excludeTestServices: true, timeout: 60_000 })(
  "the controller on the simulated provider",
  (it) => {
    it.scoped("a route removed at the provider is published again; the tunnel says so until it is", () =>
      Effect.gen(function*() {
        const s = yield* published
        const base = yield* Sse.baseUrl
        const watch = yield* Effect.acquireRelease(
          Effect.promise(() => Sse.open(`${base}/watch`, s.headers)),
          (w) => Effect.sync(() => w.close())
        )
        const edge = yield* SimulatedEdge.EdgeSwitches
        yield* edge.removeBehindTenet(s.tunnel.id)
        expect((yield* resync).repaired).toBeGreaterThanOrEqual(1)
        expect(yield* routes).toContainEqual(expect.objectContaining({
          key: s.tunnel.id,
          service_url: `http://${s.pod.status.vip}:${s.tunnel.service_port}`
        }))
        const seen = () =>
          watch.frames.map((f) => f.data).filter((e: Json) => e.kind === "tunnel" && e.id === s.tunnel.id).map((
            e: Json
          ) => e.object)
        yield* Effect.promise(() => watch.until(() => seen().some((t) => t.status === "active")))
        expect(seen()[0]).toMatchObject({
          status: "error",
          error: `${s.tunnel.hostname} was removed at the tunnel provider outside Tenet; republishing`
        })
        expect(seen().at(-1)).toMatchObject({ status: "active", error: null })
        // Nothing left to repair: a second resync changes nothing.
        expect(yield* resync).toEqual({ repaired: 0, orphans_withdrawn: 0, orphans_kept: 0 })
      }))

    it.effect("a route sent elsewhere at the provider is sent back", () =>
      Effect.gen(function*() {
        const s = yield* published
        const edge = yield* SimulatedEdge.EdgeSwitches
        yield* edge.redirectBehindTenet(s.tunnel.id, "http://198.51.100.7:80")
        yield* resync
        const route = (yield* routes).find((r) => r.key === s.tunnel.id)
        expect(route?.service_url).toBe(`http://${s.pod.status.vip}:${s.tunnel.service_port}`)
        const now = ((yield* raw("GET", "/tunnels", { headers: s.headers })).body as Array<Json>).find((t) =>
          t.id === s.tunnel.id
        )
        expect(now).toMatchObject({ status: "active", error: null })
      }))

    it.effect("a route whose delete the provider missed is withdrawn; what others hold is left alone", () =>
      Effect.gen(function*() {
        const s = yield* missedDelete
        const other = yield* published
        expect((yield* resync).orphans_withdrawn).toBe(1)
        const keys = (yield* routes).map((r) => r.key)
        expect(keys).not.toContain(s.tunnel.id)
        expect(keys).toContain(other.tunnel.id)
      }))

    it.effect("a service tunnel whose publish failed is published by the next resync", () =>
      Effect.gen(function*() {
        const headers = yield* admin
        yield* setProviderConfig(EDGE_ACCOUNT)
        const edge = yield* SimulatedEdge.EdgeSwitches
        yield* edge.setAvailable(false)
        const made = yield* raw("POST", "/service-tunnels", {
          headers,
          body: { service: uniqueName("gui"), subdomain: uniqueName("gui") }
        })
        yield* edge.setAvailable(true)
        expect(made.body).toMatchObject({ status: "error" })
        yield* resync
        const listed = (yield* raw("GET", "/service-tunnels", { headers })).body as Array<Json>
        expect(listed.find((t) => t.id === (made.body as Json).id)).toMatchObject({ status: "active", error: null })
      }))
  }
)

layer(testServer({ controller: { settle: 0, deleteOrphans: false } }), { excludeTestServices: true, timeout: 60_000 })(
  "orphans not deleted",
  (it) => {
    it.effect("a route no committed tunnel wants is left at the provider, and counted", () =>
      Effect.gen(function*() {
        const s = yield* missedDelete
        expect(yield* resync).toMatchObject({ orphans_withdrawn: 0, orphans_kept: 1 })
        expect((yield* routes).map((r) => r.key)).toContain(s.tunnel.id)
      }))
  }
)
