import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import type { Ids } from "@tenet/core"
import { DeleteMark, Pipeline, Store, Vpcs } from "@tenet/core"
import { DateTime, Effect, Either, Option, Schedule } from "effect"
import * as Reconciler from "../src/Reconciler.js"
import { newTenant, raw, testServer, workspace } from "./Harness.js"

/** A VPC marked for deletion at `since`, as a delete marks it (`Vpcs.marking`). */
const markVpc = (tenantId: Ids.TenantId, id: Ids.VpcId, since: DateTime.Utc) =>
  Effect.flatMap(Pipeline.Pipeline, (pipeline) =>
    pipeline.record(tenantId, (state) =>
      Effect.succeed(Either.getOrElse(
        Vpcs.marking(id, since, null)(state),
        (): Pipeline.Decision<undefined> => ({ writes: [], decidedOn: [], subject: id, result: undefined })
      ))).pipe(
        // A decision on a state that does not hold the VPC yet writes nothing: made again until
        // the mark is written, so a test never waits on a mark that was never made.
        Effect.filterOrFail(({ result }) => result !== undefined, () => "the VPC was not there to mark"),
        Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("5 seconds")))
      ))

layer(testServer({ reconcileInterval: "50 millis" }), { excludeTestServices: true })("reconciler", (it) => {
  it.effect("re-applies a VPC on its schedule once the cluster recovers", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const headers = { "x-auth-token": session.api_token }
      const cluster = yield* SimulatedCluster.ClusterSwitches
      yield* cluster.failApplies("etcd is read-only")
      const vpc = (yield* raw("POST", "/vpcs", {
        headers,
        body: { token: session.api_token, tenant_id: tenant.id, name: "later", enable_internet: true }
      })).body as { id: string; applied: boolean; apply_error: string }
      expect(vpc).toMatchObject({ applied: false, apply_error: "applyVpc: etcd is read-only" })
      yield* cluster.heal
      // Poll what a user would poll; the reconciler runs every 50 ms.
      const converged = yield* raw("GET", `/security-rules?vpc_id=${vpc.id}`, { headers }).pipe(
        Effect.map((r) => r.body as { applied: boolean }),
        Effect.filterOrFail((b) => b.applied, () => "not applied yet"),
        Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("10 seconds")))
      )
      expect(converged.applied).toBe(true)
      expect((yield* cluster.snapshot).vpcs.map((v) => v.vpc_id)).toContain(vpc.id)
    }))

  it.effect("a VPC delete the cluster refuses is 503 and takes its mark back: the VPC takes writes again", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const headers = { "x-auth-token": session.api_token }
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const vpc = (yield* raw("POST", "/vpcs", {
        headers,
        body: { token: session.api_token, tenant_id: tenant.id, name: "kept", enable_internet: true }
      })).body as { id: string }
      yield* cluster.failApplies("etcd is read-only")
      const refused = yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers })
      yield* cluster.heal
      expect(refused.status, refused.text).toBe(503)
      expect((refused.body as { detail: string }).detail).toContain("the VPC is kept, and applied again")
      // A VPC still marked would be 404 to its rules' list; one the cluster may have taken part of
      // is applied again, by the reconciler once the cluster is back.
      const reapplied = yield* raw("GET", `/security-rules?vpc_id=${vpc.id}`, { headers }).pipe(
        Effect.map((r) => r.body as { applied: boolean }),
        Effect.filterOrFail((b) => b.applied, () => "not applied yet"),
        Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("10 seconds")))
      )
      expect(reapplied.applied).toBe(true)
      expect((yield* cluster.snapshot).vpcs.map((v) => v.vpc_id)).toContain(vpc.id)
    }))

  it.effect("finishes a VPC delete a stopped process left marked: the cluster, then the store", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const headers = { "x-auth-token": session.api_token }
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const vpc = (yield* raw("POST", "/vpcs", {
        headers,
        body: { token: session.api_token, tenant_id: tenant.id, name: "abandoned", enable_internet: true }
      })).body as { id: Ids.VpcId }
      expect((yield* cluster.snapshot).vpcs.map((v) => v.vpc_id)).toContain(vpc.id)
      // What a process that stopped right after marking the delete, its lease ago, leaves behind.
      yield* markVpc(
        tenant.id as Ids.TenantId,
        vpc.id,
        DateTime.subtractDuration(yield* DateTime.now, DeleteMark.LEASE)
      )
      const gone = yield* raw("GET", "/vpcs", { headers }).pipe(
        Effect.map((r) => r.body as Array<{ id: string }>),
        Effect.filterOrFail((vpcs) => !vpcs.some((v) => v.id === vpc.id), () => "still there"),
        Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("10 seconds")))
      )
      expect(gone.map((v) => v.id)).not.toContain(vpc.id)
      expect((yield* cluster.snapshot).vpcs.map((v) => v.vpc_id)).not.toContain(vpc.id)
    }))

  it.effect("leaves a delete marked within its lease to the request that marked it", () =>
    Effect.gen(function*() {
      const { session, tenant } = yield* newTenant()
      const headers = { "x-auth-token": session.api_token }
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const store = yield* Store.Store
      const vpc = (yield* raw("POST", "/vpcs", {
        headers,
        body: { token: session.api_token, tenant_id: tenant.id, name: "in-flight", enable_internet: true }
      })).body as { id: Ids.VpcId }
      // What a request holds while the cluster deletes the VPC: a mark made just now.
      yield* markVpc(tenant.id as Ids.TenantId, vpc.id, yield* DateTime.now)
      // Two passes of this test's own (one may find the scheduled pass running and skip).
      yield* Reconciler.pass.pipe(
        Effect.repeat({ until: Option.isSome, schedule: Schedule.spaced("10 millis") }),
        Effect.repeat({ times: 1 })
      )
      expect((yield* store.vpcs.listDeleting).map((v) => v.id)).toContain(vpc.id)
      expect((yield* cluster.snapshot).vpcs.map((v) => v.vpc_id)).toContain(vpc.id)
    }))

  it.effect("finishes a pod delete a stopped process left marked, and never applies it again meanwhile", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const pod = (yield* w.createPod()).body as { id: Ids.PodId }
      expect((yield* cluster.snapshot).pods.map((p) => p.spec.pod_id)).toContain(pod.id)
      // What a process that stopped right after marking the delete, its lease ago, leaves behind, its apply
      // state failed.
      const pipeline = yield* Pipeline.Pipeline
      const since = DateTime.subtractDuration(yield* DateTime.now, DeleteMark.LEASE)
      yield* pipeline.record(w.tenant.id as Ids.TenantId, (state) =>
        Effect.succeed(
          Pipeline.updatingLatest("pods", pod.id, state.pod(pod.id), (latest) => ({
            ...latest,
            lifecycle: "deleting",
            deleting_since: since,
            applied: false
          }))
        ))
      const gone = yield* raw("GET", "/pods", { headers: w.headers }).pipe(
        Effect.map((r) => r.body as Array<{ id: string }>),
        Effect.filterOrFail((pods) => !pods.some((p) => p.id === pod.id), () => "still there"),
        Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("10 seconds")))
      )
      expect(gone.map((p) => p.id)).not.toContain(pod.id)
      expect((yield* cluster.snapshot).pods.map((p) => p.spec.pod_id)).not.toContain(pod.id)
    }))
})
