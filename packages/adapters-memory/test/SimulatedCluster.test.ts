import { describe, expect, it } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { Orchestrator } from "@tenet/core"
import type { Net } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { Effect, Fiber, Option, TestClock } from "effect"

const cluster = Effect.all({ cluster: Orchestrator.Orchestrator, switches: SimulatedCluster.ClusterSwitches })

const withNetwork = Effect.gen(function*() {
  const { cluster: c, switches } = yield* cluster
  const { subnet, vpc } = Fixtures.network()
  yield* c.applyVpc(vpc)
  yield* c.applySubnet(subnet)
  return { cluster: c, switches, subnet, vpc }
})

describe("simulated cluster", () => {
  it.effect("objects must be applied in order: a subnet needs its VPC, a pod its subnet", () =>
    Effect.gen(function*() {
      const { cluster: c } = yield* cluster
      const { subnet, vpc } = Fixtures.network()
      expect(yield* Effect.flip(c.applySubnet(subnet))).toMatchObject({ operation: "applySubnet" })
      expect(yield* Effect.flip(c.applyPod(Fixtures.pod(subnet)))).toMatchObject({ operation: "applyPod" })
      yield* c.applyVpc(vpc)
      yield* c.applySubnet(subnet)
      yield* c.applyPod(Fixtures.pod(subnet))
    }).pipe(Effect.provide(SimulatedCluster.layer())))

  it.effect("preconditions are checked when a change runs, not when it is built", () =>
    Effect.gen(function*() {
      const { cluster: c } = yield* cluster
      const { subnet, vpc } = Fixtures.network()
      const composed = c.applyVpc(vpc).pipe(
        Effect.zipRight(c.applySubnet(subnet)),
        Effect.zipRight(c.applySecurityPlan(Fixtures.emptyPlan({ subnet, vpc })))
      )
      yield* composed
    }).pipe(Effect.provide(SimulatedCluster.layer())))

  it.effect("replicas become ready after the start-up delay", () =>
    Effect.gen(function*() {
      const { cluster: c, subnet } = yield* withNetwork
      const spec = Fixtures.pod(subnet, { replicas: 2 })
      yield* c.applyPod(spec)
      expect(Option.getOrThrow(yield* c.podStatus(spec.pod_id))).toMatchObject({ phase: "pending", ready_replicas: 0 })
      yield* TestClock.adjust("5 seconds")
      expect(Option.getOrThrow(yield* c.podStatus(spec.pod_id))).toMatchObject({ phase: "running", ready_replicas: 2 })
    }).pipe(Effect.provide(SimulatedCluster.layer({ startup: "5 seconds" }))))

  it.effect("failApplies fails every change until healed; reads still work", () =>
    Effect.gen(function*() {
      const { cluster: c, subnet, switches } = yield* withNetwork
      const spec = Fixtures.pod(subnet)
      yield* switches.failApplies("admission webhook denied")
      const error = yield* Effect.flip(c.applyPod(spec))
      expect(error).toMatchObject({ operation: "applyPod", detail: "admission webhook denied" })
      expect(yield* c.podStatus(spec.pod_id)).toEqual(Option.none())
      yield* switches.heal
      yield* c.applyPod(spec)
    }).pipe(Effect.provide(SimulatedCluster.layer())))

  it.effect("failAfter lets a number of changes through, then fails the rest (a batch failing midway)", () =>
    Effect.gen(function*() {
      const { cluster: c, subnet, switches } = yield* withNetwork
      yield* switches.failAfter(2, "quota exceeded")
      const results = yield* Effect.forEach([1, 2, 3, 4], () => Effect.either(c.applyPod(Fixtures.pod(subnet))))
      expect(results.map((r) => r._tag)).toEqual(["Right", "Right", "Left", "Left"])
    }).pipe(Effect.provide(SimulatedCluster.layer())))

  it.effect("an unreachable API server fails reads too", () =>
    Effect.gen(function*() {
      const { cluster: c, subnet, switches } = yield* withNetwork
      const spec = Fixtures.pod(subnet)
      yield* c.applyPod(spec)
      yield* switches.setReachable(false)
      expect(yield* Effect.flip(c.podStatus(spec.pod_id))).toMatchObject({
        detail: "the cluster API server is unreachable"
      })
      yield* switches.setReachable(true)
      expect(Option.isSome(yield* c.podStatus(spec.pod_id))).toBe(true)
    }).pipe(Effect.provide(SimulatedCluster.layer())))

  it.effect("a stopped pod reports stopped until restarted", () =>
    Effect.gen(function*() {
      const { cluster: c, subnet, switches } = yield* withNetwork
      const spec = Fixtures.pod(subnet)
      yield* c.applyPod(spec)
      yield* switches.stopPod(spec.pod_id)
      expect(Option.getOrThrow(yield* c.podStatus(spec.pod_id))).toMatchObject({ phase: "stopped", ready_replicas: 0 })
      yield* c.restartPod(spec.pod_id)
      expect(Option.getOrThrow(yield* c.podStatus(spec.pod_id)).phase).toBe("running")
    }).pipe(Effect.provide(SimulatedCluster.layer())))

  it.effect("a slow delete shows the pod as deleting until it is gone", () =>
    Effect.gen(function*() {
      const { cluster: c, subnet, switches } = yield* withNetwork
      const spec = Fixtures.pod(subnet)
      yield* c.applyPod(spec)
      yield* switches.setDeleteDelay("30 seconds")
      const deleting = yield* Effect.fork(c.deletePod(spec.pod_id))
      yield* TestClock.adjust("10 seconds")
      expect(Option.getOrThrow(yield* c.podStatus(spec.pod_id)).phase).toBe("deleting")
      yield* TestClock.adjust("20 seconds")
      yield* Fiber.join(deleting)
      expect(yield* c.podStatus(spec.pod_id)).toEqual(Option.none())
      expect((yield* switches.snapshot).pods).toEqual([])
    }).pipe(Effect.provide(SimulatedCluster.layer())))

  it.effect("a pod records the registry secrets it pulls with, and fails when one is missing", () =>
    Effect.gen(function*() {
      const { cluster: c, subnet, switches } = yield* withNetwork
      yield* c.applyRegistrySecret({
        tenant_id: subnet.tenant_id,
        name: "ghcr" as Net.DnsLabel,
        server: "ghcr.io",
        username: "bot",
        password: "pull-secret"
      })
      const ok = Fixtures.pod(subnet, { registry_credentials: ["ghcr"] })
      const missing = Fixtures.pod(subnet, { registry_credentials: ["quay"] })
      yield* c.applyPod(ok)
      yield* c.applyPod(missing)
      const snapshot = yield* switches.snapshot
      expect(snapshot.pods.find((p) => p.spec.pod_id === ok.pod_id)?.image_pull_secrets).toEqual([
        `${subnet.tenant_id}/ghcr`
      ])
      expect(JSON.stringify(snapshot.registrySecrets)).not.toContain("pull-secret")
      expect(Option.getOrThrow(yield* c.podStatus(missing.pod_id))).toMatchObject({
        phase: "failed",
        last_error: "image pull secret not found: quay"
      })
    }).pipe(Effect.provide(SimulatedCluster.layer())))

  it.effect("the external pool running dry is an error, not a duplicate address", () =>
    Effect.gen(function*() {
      const { cluster: c, subnet } = yield* withNetwork
      // A /30 has two host addresses; the gateway takes one.
      const pool = { subnet_cidr: "198.51.100.0/30" as Net.Ipv4Network, gateway: "198.51.100.1" as Net.Ipv4Address }
      const first = yield* c.applyPod(Fixtures.pod(subnet, { external_inbound: pool }))
      expect(first.external_ip).toBe("198.51.100.2")
      const error = yield* Effect.flip(c.applyPod(Fixtures.pod(subnet, { external_inbound: pool })))
      expect(error.detail).toContain("no free address")
    }).pipe(Effect.provide(SimulatedCluster.layer())))
})
