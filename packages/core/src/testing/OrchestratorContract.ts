/**
 * The Orchestrator contract: placement and lifecycle rules every cluster backend keeps.
 * Run it with a factory that returns a fresh orchestrator for each test, on a fresh cluster or
 * one that the tests share (each test makes its own tenants and VPCs). A real cluster runs on
 * the real clock (`live`), with a `timeout` per test in milliseconds: its controllers act in
 * their own time, so what they do is awaited (up to `settle`).
 */
import { describe, expect } from "@effect/vitest"
import type { Duration, Layer } from "effect"
import { Cause, Effect, Option, Schedule } from "effect"
import * as Net from "../domain/Net.js"
import type { Ipv4Address, Ipv4Network } from "../domain/Net.js"
import { Orchestrator } from "../ports/Orchestrator.js"
import * as Fixtures from "./Fixtures.js"
import { freshEach, freshEachLive } from "./Suite.js"

const smallPool = { subnet_cidr: "203.0.113.0/29" as Ipv4Network, gateway: "203.0.113.1" as Ipv4Address }

export interface Options {
  readonly live?: boolean
  readonly timeout?: number
  /** How long a controller's work may take to show (default 15 s). */
  readonly settle?: Duration.DurationInput
  /**
   * The external network the cluster gives addresses from (default 203.0.113.0/29); a cluster
   * the tests share needs room for every test's VPCs and pods.
   */
  readonly externalPool?: { readonly subnet_cidr: Ipv4Network; readonly gateway: Ipv4Address }
}

export const run = (name: string, makeCluster: () => Layer.Layer<Orchestrator>, options: Options = {}) =>
  describe(`Orchestrator contract: ${name}`, () => {
    const test = (options.live ? freshEachLive : freshEach)(makeCluster, options.timeout)
    const externalPool = options.externalPool ?? smallPool
    /** The effect's value once `check` holds of it; at once on a cluster that acts synchronously. */
    const eventually = <A, E>(effect: Effect.Effect<A, E>, check: (a: A) => boolean) =>
      effect.pipe(
        Effect.filterOrFail(check, () => new Cause.NoSuchElementException("not yet")),
        Effect.retry({
          while: (e) => e instanceof Cause.NoSuchElementException,
          schedule: Schedule.spaced("100 millis").pipe(Schedule.upTo(options.settle ?? "15 seconds"))
        })
      )

    const withNetwork = Effect.gen(function*() {
      const cluster = yield* Orchestrator
      const { subnet, vpc } = Fixtures.network()
      yield* cluster.applyVpc(vpc)
      yield* cluster.applySubnet(subnet)
      return { cluster, subnet, vpc }
    })

    test(
      "a pod gets a virtual IP that stays with it across applies and recreates",
      Effect.gen(function*() {
        const { cluster, subnet } = yield* withNetwork
        const spec = Fixtures.pod(subnet)
        const first = yield* cluster.applyPod(spec)
        expect(Option.isSome(Net.parseIpv4(first.vip))).toBe(true)
        expect(first.external_ip).toBeNull()
        const again = yield* cluster.applyPod({ ...spec, replicas: 3 })
        const recreated = yield* cluster.recreatePod({ ...spec, env: { MODE: "blue" } })
        expect(again.vip).toBe(first.vip)
        expect(recreated.vip).toBe(first.vip)
      })
    )

    test(
      "distinct pods get distinct virtual IPs",
      Effect.gen(function*() {
        const { cluster, subnet } = yield* withNetwork
        const vips = yield* Effect.forEach(
          Array.from({ length: 12 }, () => Fixtures.pod(subnet)),
          (spec) => Effect.map(cluster.applyPod(spec), (p) => p.vip)
        )
        expect(new Set(vips).size).toBe(vips.length)
      })
    )

    test(
      "external_inbound pods get a usable address of the external subnet, kept across recreates",
      Effect.gen(function*() {
        const { cluster, subnet } = yield* withNetwork
        const spec = Fixtures.pod(subnet, { external_access: true, external_inbound: externalPool })
        const placed = yield* cluster.applyPod(spec)
        const address = Net.ipv4Of(placed.external_ip!)
        const pool = Net.cidrOf(externalPool.subnet_cidr)
        expect(Net.contains(pool, address)).toBe(true)
        expect([Net.networkOf(pool), Net.broadcastOf(pool), Net.ipv4Of(externalPool.gateway)]).not.toContain(address)
        expect((yield* cluster.recreatePod(spec)).external_ip).toBe(placed.external_ip)
      })
    )

    test(
      "the pod's status reports its replicas and addresses; autoscaled pods stay within bounds",
      Effect.gen(function*() {
        const { cluster, subnet } = yield* withNetwork
        const spec = Fixtures.pod(subnet, { replicas: 3 })
        const placed = yield* cluster.applyPod(spec)
        const status = Option.getOrThrow(yield* cluster.podStatus(spec.pod_id))
        expect(status).toMatchObject({ desired_replicas: 3, vip: placed.vip, external_ip: null })
        const scaled = Fixtures.pod(subnet, {
          replicas: 1,
          autoscaling: { min_replicas: 2, max_replicas: 5, cpu_target_millicores: 200 }
        })
        yield* cluster.applyPod(scaled)
        // The HPA controller brings the workload into bounds in its own time.
        const desired = yield* eventually(
          Effect.map(cluster.podStatus(scaled.pod_id), (s) => Option.getOrThrow(s).desired_replicas),
          (n) => n >= 2
        )
        expect(desired).toBeGreaterThanOrEqual(2)
        expect(desired).toBeLessThanOrEqual(5)
      })
    )

    test(
      "the statuses of a tenant's pods, read at once, are each pod's status and no one else's",
      Effect.gen(function*() {
        const { cluster, subnet } = yield* withNetwork
        const plain = Fixtures.pod(subnet, { replicas: 2 })
        const exposed = Fixtures.pod(subnet, { external_access: true, external_inbound: externalPool })
        yield* cluster.applyPod(plain)
        yield* cluster.applyPod(exposed)
        const other = yield* withNetwork
        const stranger = Fixtures.pod(other.subnet)
        yield* cluster.applyPod(stranger)

        const statuses = yield* cluster.podStatuses(subnet.tenant_id)
        expect([...statuses.keys()].sort()).toEqual([plain.pod_id, exposed.pod_id].sort())
        for (const spec of [plain, exposed]) {
          expect(statuses.get(spec.pod_id)).toEqual(Option.getOrThrow(yield* cluster.podStatus(spec.pod_id)))
        }
        yield* cluster.deletePod(plain.pod_id)
        expect([...(yield* cluster.podStatuses(subnet.tenant_id)).keys()]).toEqual([exposed.pod_id])
      })
    )

    test(
      "deleting is idempotent and forgets the pod",
      Effect.gen(function*() {
        const { cluster, subnet } = yield* withNetwork
        const spec = Fixtures.pod(subnet)
        yield* cluster.applyPod(spec)
        yield* cluster.deletePod(spec.pod_id)
        yield* cluster.deletePod(spec.pod_id)
        expect(yield* cluster.podStatus(spec.pod_id)).toEqual(Option.none())
      })
    )

    test(
      "deleting a VPC removes the pods in it; deleting a tenant removes all it had",
      Effect.gen(function*() {
        const { cluster, subnet, vpc } = yield* withNetwork
        const inVpc = Fixtures.pod(subnet)
        yield* cluster.applyPod(inVpc)
        yield* cluster.deleteVpc(vpc.vpc_id)
        yield* cluster.deleteVpc(vpc.vpc_id)
        expect(yield* cluster.podStatus(inVpc.pod_id)).toEqual(Option.none())
        const other = Fixtures.network()
        yield* cluster.applyVpc(other.vpc)
        yield* cluster.applySubnet(other.subnet)
        const inTenant = Fixtures.pod(other.subnet)
        yield* cluster.applyPod(inTenant)
        yield* cluster.deleteTenant(other.vpc.tenant_id)
        expect(yield* cluster.podStatus(inTenant.pod_id)).toEqual(Option.none())
      })
    )

    test(
      "applying the same objects twice changes nothing",
      Effect.gen(function*() {
        const { cluster, subnet, vpc } = yield* withNetwork
        yield* cluster.applyVpc(vpc)
        yield* cluster.applySubnet(subnet)
        yield* cluster.applySecurityPlan(Fixtures.emptyPlan({ subnet, vpc }))
        yield* cluster.applySecurityPlan(Fixtures.emptyPlan({ subnet, vpc }))
        yield* cluster.applyRegistrySecret(Fixtures.registrySecret(vpc.tenant_id))
        const spec = Fixtures.pod(subnet)
        const a = yield* cluster.applyPod(spec)
        const b = yield* cluster.applyPod(spec)
        expect(b).toEqual(a)
        yield* cluster.restartPod(spec.pod_id)
      })
    )
  })
