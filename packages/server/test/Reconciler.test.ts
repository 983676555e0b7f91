import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { Effect, Schedule } from "effect"
import { newTenant, raw, testServer } from "./Harness.js"

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
})
