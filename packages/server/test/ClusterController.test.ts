/**
 * The controller on the simulated cluster, as a tenant's integration tests see it: what is
 * changed behind Tenet's back is put back from the committed state, the change stream says
 * what drifted and who changed it (`applied: false`, then `applied: true` once repaired), and
 * the repair is counted in the metrics.
 */
import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { ClusterController, Ids, Orchestrator } from "@tenet/core"
import type { MetricState } from "effect"
import { Effect, Fiber, Metric } from "effect"
import { httpsIn, raw, testServer, workspace } from "./Harness.js"
import * as Sse from "./Sse.js"

type Json = Record<string, any>

/** Waits until `check` holds of what `read` answers (the controller works in the background). */
const eventually = <A, E, R>(read: Effect.Effect<A, E, R>, check: (a: A) => boolean) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 10_000
    for (;;) {
      const current = yield* read
      if (check(current)) return current
      if (Date.now() > deadline) return yield* Effect.die(new Error("not repaired within 10 s"))
      yield* Effect.sleep("20 millis")
    }
  })

/** A counter's count for one kind so far (the registry is the process's: compare before and after). */
const counted = (name: string, kind: string) =>
  Effect.map(
    Metric.snapshot,
    (pairs) =>
      pairs.filter((pair) => pair.metricKey.name === name && pair.metricKey.tags.some((t) => t.value === kind))
        .reduce((n, pair) => n + (pair.metricState as MetricState.MetricState.Counter<number>).count, 0)
  )

const vpcRepairs = counted("tenet_drift_repairs", "vpc")

layer(testServer(), { excludeTestServices: true, timeout: 60_000 })("the controller on the simulated cluster", (it) => {
  const watchVpc = (w: Effect.Effect.Success<typeof workspace>) =>
    Effect.flatMap(Sse.baseUrl, (base) =>
      Effect.acquireRelease(
        Effect.promise(() => Sse.open(`${base}/watch`, w.headers)),
        (watch) => Effect.sync(() => watch.close())
      ))
  const vpcEvents = (frames: ReadonlyArray<Sse.Frame>, vpcId: string) =>
    frames.map((f) => f.data).filter((e: Json) => e.kind === "vpc" && e.id === vpcId).map((e: Json) => e.object)

  it.scoped("a subnet deleted behind Tenet's back is put back; the VPC says so until it is", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const watch = yield* watchVpc(w)
      yield* cluster.deleteBehindTenet("subnet", w.subnet.id)
      yield* eventually(cluster.snapshot, (s) => s.subnets.some((s) => s.subnet_id === w.subnet.id))
      yield* Effect.promise(() => watch.until((frames) => vpcEvents(frames, w.vpc.id).some((v) => v.applied === true)))
      const seen = vpcEvents(watch.frames, w.vpc.id)
      expect(seen[0]).toMatchObject({
        applied: false,
        apply_error: `Subnet ${w.subnet.id} was deleted outside Tenet; repairing`
      })
      expect(seen.at(-1)).toMatchObject({ applied: true, apply_error: null })
      const rules = (yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body
      expect(rules).toMatchObject({ applied: true, apply_error: null })
      // The only replica leads, and has nothing left to converge.
      const controller = yield* ClusterController.ClusterController
      expect(controller.leading()).toBe(true)
      expect(controller.depth()).toEqual({ waiting: 0, processing: 0 })
    }))

  it.scoped("rules emptied by another field manager come back, and the event names the manager", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const made = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: httpsIn(w.vpc.id)
      })
      expect(made.status, made.text).toBe(201)
      const enforced = (s: SimulatedCluster.ClusterSnapshot) =>
        s.plans.find((p) => p.vpc_id === w.vpc.id)?.entries.length ?? 0
      const before = enforced(yield* cluster.snapshot)
      expect(before).toBeGreaterThan(0)
      const watch = yield* watchVpc(w)
      const repairedBefore = yield* vpcRepairs
      yield* cluster.emptyRulesBehindTenet(w.vpc.id, "kubectl-edit")
      yield* eventually(cluster.snapshot, (s) => enforced(s) === before)
      yield* Effect.promise(() => watch.until((frames) => vpcEvents(frames, w.vpc.id).some((v) => v.applied === true)))
      expect(vpcEvents(watch.frames, w.vpc.id)[0].apply_error).toBe(
        `plan ${w.vpc.id} was changed by kubectl-edit (entries); repairing`
      )
      // The audit trail names who changed it.
      const trail = (yield* raw("GET", `/tenants/${w.tenant.id}/audit-log`, { headers: w.headers })).body as Json
      expect(trail.entries).toContainEqual(expect.objectContaining({
        actor_type: "cluster",
        actor: "kubectl-edit",
        action: "cluster.drift",
        resource_kind: "vpc",
        resource_id: w.vpc.id,
        tenant_id: w.tenant.id
      }))
      expect(yield* vpcRepairs).toBe(repairedBefore + 1)
    }))

  it.scoped("a pod deleted behind Tenet's back runs again, at its VIP", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const created = yield* w.createPod()
      expect(created.status, created.text).toBe(200)
      const pod = created.body as Json
      yield* cluster.deleteBehindTenet("pod", pod.id)
      yield* eventually(cluster.snapshot, (s) => s.pods.some((p) => p.spec.pod_id === pod.id))
      const shown = yield* eventually(
        Effect.map(
          raw("GET", "/pods", { headers: w.headers }),
          (r) => (r.body as Array<Json>).find((p) => p.id === pod.id)
        ),
        (p) => p?.status.phase === "running" && p.status.last_error === null
      )
      expect(shown?.status.ready_replicas).toBeGreaterThan(0)
      expect(shown?.status.vip).toBe(pod.status.vip)
    }))

  it.scoped("a VPC being deleted is nobody's to repair: what goes from the cluster meanwhile is not drift", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const cluster = yield* SimulatedCluster.ClusterSwitches
      yield* cluster.setDeleteDelay("1 second")
      yield* Effect.addFinalizer(() => cluster.heal)
      const deleting = yield* Effect.fork(raw("DELETE", `/vpcs/${w.vpc.id}`, { headers: w.headers }))
      // Marked deleting, the cluster still at it: its subnet goes, as if someone else took it.
      yield* Effect.sleep("200 millis")
      yield* cluster.deleteBehindTenet("subnet", w.subnet.id)
      expect((yield* Fiber.join(deleting)).status).toBe(204)
      yield* Effect.sleep("300 millis")
      expect((yield* cluster.snapshot).subnets.map((s) => s.subnet_id)).not.toContain(w.subnet.id)
      const trail = (yield* raw("GET", `/tenants/${w.tenant.id}/audit-log`, { headers: w.headers })).body as Json
      expect(trail.entries.filter((e: Json) => e.action === "cluster.drift")).toEqual([])
    }))
})

layer(testServer({ controller: { resync: "200 millis", settle: "0 millis" } }), {
  excludeTestServices: true,
  timeout: 60_000
})("the controller's resync on the simulated cluster", (it) => {
  it.effect("a subnet and a pod deleted while no watch saw it are put back at the next resync", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const created = yield* w.createPod()
      expect(created.status, created.text).toBe(200)
      const pod = created.body as Json
      yield* cluster.deleteBehindTenet("pod", pod.id, { announce: false })
      yield* cluster.deleteBehindTenet("subnet", w.subnet.id, { announce: false })
      yield* eventually(
        cluster.snapshot,
        (s) => s.subnets.some((s) => s.subnet_id === w.subnet.id) && s.pods.some((p) => p.spec.pod_id === pod.id)
      )
    }))

  it.effect("a pod in the cluster that no committed state wants is deleted at the next resync", () =>
    Effect.gen(function*() {
      const { cluster, stray } = yield* strayPod
      yield* eventually(cluster.snapshot, (s) => !s.pods.some((p) => p.spec.pod_id === stray.pod_id))
    }))
})

/** A pod made in the cluster for a tenant's subnet that the tenant's committed state does not have. */
const strayPod = Effect.gen(function*() {
  const w = yield* workspace
  const cluster = yield* SimulatedCluster.ClusterSwitches
  const made = yield* w.createPod()
  expect(made.status, made.text).toBe(200)
  const running = (yield* cluster.snapshot).pods.find((p) => p.spec.pod_id === (made.body as Json).id)!
  const stray = { ...running.spec, pod_id: Ids.PodId.make(crypto.randomUUID()), vip: null }
  yield* Effect.orDie(Effect.flatMap(Orchestrator.Orchestrator, (o) => o.applyPod(stray)))
  return { cluster, stray }
})

layer(testServer({ controller: { resync: "200 millis", settle: "0 millis", deleteOrphans: false } }), {
  excludeTestServices: true,
  timeout: 60_000
})("orphans not deleted", (it) => {
  it.scoped("a pod in the cluster that no committed state wants is left in place, and counted", () =>
    Effect.gen(function*() {
      const kept = counted("tenet_drift_orphans_kept", "pod")
      const before = yield* kept
      const { cluster, stray } = yield* strayPod
      // Found at a resync or two, and still there after them.
      yield* eventually(kept, (n) => n > before)
      yield* Effect.sleep("500 millis")
      expect((yield* cluster.snapshot).pods.some((p) => p.spec.pod_id === stray.pod_id)).toBe(true)
    }))
})
