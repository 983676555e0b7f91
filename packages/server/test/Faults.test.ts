/**
 * Slow dependencies: a cluster or tunnel provider that takes its time holds up only the
 * requests that need it; everything else keeps answering, and the slow requests finish with
 * a consistent result.
 */
import { expect, layer } from "@effect/vitest"
import { SimulatedCluster, SimulatedEdge } from "@tenet/adapters-memory"
import { Effect, Fiber, Option } from "effect"
import { EDGE_ACCOUNT, raw, setProviderConfig, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

/** Reads a tenant makes all the time, none of which needs the cluster or the provider. */
const reads = (w: Effect.Effect.Success<typeof workspace>) =>
  Effect.all([
    raw("GET", "/healthz"),
    raw("GET", "/vpcs", { headers: w.headers }),
    raw("GET", "/subnets", { headers: w.headers }),
    raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers }),
    raw("GET", "/tunnels", { headers: w.headers })
  ], { concurrency: "unbounded" })

layer(testServer(), { excludeTestServices: true, timeout: 60_000 })("slow dependencies", (it) => {
  it.effect("a slow cluster holds up only the requests that need it", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const cluster = yield* SimulatedCluster.ClusterSwitches
      yield* cluster.setLatency("3 seconds")
      const slow = yield* Effect.fork(w.createPod({ name: "patient" }))
      const answered = yield* reads(w)
      // Every read answered while the pod create is still waiting on the cluster.
      expect(answered.map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
      expect(Option.isNone(yield* Fiber.poll(slow))).toBe(true)
      yield* cluster.heal
      const created = yield* Fiber.join(slow)
      expect(created.status).toBe(200)
      const pods = (yield* raw("GET", "/pods", { headers: w.headers })).body as Array<Json>
      expect(pods.map((p) => p.name)).toEqual(["patient"])
    }))

  it.effect("a slow tunnel provider holds up only tunnel changes", () =>
    Effect.gen(function*() {
      yield* setProviderConfig(EDGE_ACCOUNT)
      const w = yield* workspace
      const pod = (yield* w.createPod()).body as Json
      const edge = yield* SimulatedEdge.EdgeSwitches
      yield* edge.setLatency("3 seconds")
      const slow = yield* Effect.fork(raw("POST", `/pods/${pod.id}/tunnel`, {
        headers: w.headers,
        body: { tunnel_name: "web", subdomain: `web-${w.tenant.name}`, protocol_type: "http" }
      }))
      const answered = yield* reads(w)
      expect(answered.map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
      expect(Option.isNone(yield* Fiber.poll(slow))).toBe(true)
      yield* edge.setLatency("0 millis")
      const published = yield* Fiber.join(slow)
      expect(published.status).toBe(201)
      expect((published.body as Json).status).toBe("active")
      expect((yield* edge.routes).map((r) => r.hostname)).toContain(`web-${w.tenant.name}.apps.example.com`)
    }))
})
