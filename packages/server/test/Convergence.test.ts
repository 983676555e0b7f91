/**
 * A write does not touch the cluster: it commits, its VPC is converged on the replica's queue,
 * and the answer says `applied` from the first convergence begun after the commit, or, past
 * the bound (`applyWait`), that it is still applying; writes to one VPC that arrive together
 * are applied together. Pods the same way: scaled, or made, past the bound.
 */
import { expect, layer } from "@effect/vitest"
import { SimulatedCluster, SimulatedEdge } from "@tenet/adapters-memory"
import type { Duration } from "effect"
import { Effect } from "effect"
import {
  EDGE_ACCOUNT,
  httpsIn,
  planApplies,
  raw,
  setProviderConfig,
  testServer,
  uniqueName,
  workspace
} from "./Harness.js"

type Json = Record<string, any>

/** The first value `probe` finds, asked every 100 ms for up to 20 s. */
const until = <A, E, R>(what: string, probe: () => Effect.Effect<A | undefined, E, R>) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    for (;;) {
      const found = yield* probe()
      if (found !== undefined) return found
      if (Date.now() > deadline) return yield* Effect.die(new Error(`${what}: not within 20 s`))
      yield* Effect.sleep("100 millis")
    }
  })

const slowCluster = (latency: Duration.DurationInput) =>
  Effect.acquireRelease(
    Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.setLatency(latency)),
    () => Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.setLatency(0))
  )

layer(testServer({ applyWait: "300 millis" }), { excludeTestServices: true, timeout: 60_000 })(
  "a write's answer waits for its change in force, up to a bound",
  (it) => {
    it.scoped("past the bound it answers still applying, and the VPC says applied once it is", () =>
      Effect.gen(function*() {
        const w = yield* workspace
        yield* slowCluster("1 second")
        const made = yield* raw("POST", "/security-rules", { headers: w.headers, body: httpsIn(w.vpc.id) })
        expect(made.status, made.text).toBe(201)
        expect(made.body).toMatchObject({
          applied: false,
          apply_error: expect.stringMatching(/^still being applied to the cluster after 300ms/)
        })
        // The VPC says so too while it applies (the change stream with it), then says applied.
        const seen: Array<Json> = []
        const deadline = Date.now() + 20_000
        for (;;) {
          const now = (yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body as Json
          seen.push({ applied: now.applied, apply_error: now.apply_error })
          if (now.applied === true) break
          if (Date.now() > deadline) expect.fail(`not applied within 20 s: ${JSON.stringify(now)}`)
          yield* Effect.sleep("100 millis")
        }
        expect(seen).toContainEqual({ applied: false, apply_error: (made.body as Json).apply_error })
        const plan = (yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)).plans.find((p) =>
          p.vpc_id === w.vpc.id
        )
        expect(plan?.entries.map((e) => e.rule_id)).toContain((made.body as Json).rule.id)
      }))

    it.scoped("a pod scaled past the bound answers still applying, and says applied once its replicas run", () =>
      Effect.gen(function*() {
        const w = yield* workspace
        const pod = (yield* w.createPod()).body as Json
        expect(pod).toMatchObject({ replica_count: 1, status: { last_error: null } })
        yield* slowCluster("1 second")
        const scaled = yield* raw("POST", `/pods/${pod.id}/replicas`, { headers: w.headers })
        expect(scaled.status, scaled.text).toBe(200)
        expect(scaled.body).toMatchObject({
          replica_count: 2,
          status: { last_error: expect.stringMatching(/^still being applied to the cluster after 300ms/) }
        })
        yield* until("the pod applied", () =>
          Effect.map(
            raw("GET", "/pods", { headers: w.headers }),
            (r) => (r.body as Array<Json>).find((p) => p.id === pod.id && p.status.last_error === null)
          ))
        const running = (yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)).pods.find((p) =>
          p.spec.pod_id === pod.id
        )
        expect(running?.spec.replicas).toBe(2)
      }))

    it.scoped("a pod made past the bound has no address yet; its tunnel is published once it has one", () =>
      Effect.gen(function*() {
        expect((yield* setProviderConfig(EDGE_ACCOUNT)).status).toBe(200)
        const w = yield* workspace
        yield* slowCluster("1 second")
        const made = yield* w.createPod({
          service_port: 8080,
          tunnels: [{
            tunnel_name: uniqueName("t"),
            subdomain: uniqueName("late"),
            protocol_type: "http",
            service_port: 8080
          }]
        })
        expect(made.status, made.text).toBe(200)
        const pod = made.body as Json
        // Answered from the pod as it stood at the bound: not yet applied, so its tunnel had no address to go to.
        expect(pod).toMatchObject({ status: { last_error: "not yet applied" } })
        const active = yield* until("the tunnel active", () =>
          Effect.map(
            raw("GET", `/pods/${pod.id}/tunnels`, { headers: w.headers }),
            (r) => (r.body as Array<Json>).find((t) => t.status === "active")
          ))
        const vip = ((yield* raw("GET", "/pods", { headers: w.headers })).body as Array<Json>).find((p) =>
          p.id === pod.id
        )?.status.vip
        expect(vip).toEqual(expect.any(String))
        const served = (yield* Effect.flatMap(SimulatedEdge.EdgeSwitches, (e) => e.routes)).find((r) =>
          r.hostname === active.hostname
        )
        expect(served?.service_url).toBe(`http://${vip}:8080`)
      }))
  }
)

layer(testServer(), { excludeTestServices: true, timeout: 60_000 })("writes converged together", (it) => {
  it.scoped("creates in one VPC that arrive together are a few applies of its plan, not one each", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      yield* slowCluster("50 millis")
      const before = yield* planApplies
      const answers = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => i),
        (i) =>
          raw("POST", "/security-rules", {
            headers: w.headers,
            body: { ...httpsIn(w.vpc.id), name: `port ${8000 + i}`, ports: String(8000 + i), priority: 100 + i }
          }),
        { concurrency: "unbounded" }
      )
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 201))
      // Each answer is the outcome of a convergence begun after its own commit.
      expect(answers.every((a) => (a.body as Json).applied === true)).toBe(true)
      const applies = (yield* planApplies) - before
      expect(applies).toBeGreaterThanOrEqual(1)
      expect(applies).toBeLessThanOrEqual(5)
      const plan = (yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)).plans.find((p) =>
        p.vpc_id === w.vpc.id
      )
      const rules = answers.map((a) => (a.body as Json).rule.id)
      expect(plan?.entries.map((e) => e.rule_id)).toEqual(expect.arrayContaining(rules))
    }))
})
