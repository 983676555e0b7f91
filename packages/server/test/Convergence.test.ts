/**
 * A write does not touch the cluster: it commits, its VPC is converged on the replica's queue,
 * and the answer says `applied` from the first convergence begun after the commit, or, past
 * the bound (`applyWait`), that it is still applying; writes to one VPC that arrive together
 * are applied together.
 */
import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import type { MetricState } from "effect"
import type { Duration } from "effect"
import { Effect, Metric } from "effect"
import { httpsIn, raw, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

/** Security plans applied to the cluster so far (the registry is the process's: compare before and after). */
const planApplies = Effect.map(
  Metric.snapshot,
  (pairs) =>
    pairs.filter((pair) =>
      pair.metricKey.name === "tenet_cluster_calls" &&
      pair.metricKey.tags.some((t) => t.key === "operation" && t.value === "applySecurityPlan")
    ).reduce((n, pair) => n + (pair.metricState as MetricState.MetricState.Counter<number>).count, 0)
)

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
