import { describe, expect, it } from "@effect/vitest"
import { Names, Permissions } from "@tenet/adapters-k8s"
import type { FakeApiServer as Recording } from "@tenet/adapters-k8s/testing"
import { Orchestrator } from "@tenet/core"
import { Fixtures, OrchestratorContract } from "@tenet/core/testing"
import { Effect, Layer } from "effect"
import * as FakeApiServer from "./FakeApiServer.js"

/** Every request any test of this file made, for the RBAC check at the end. */
const seen: Array<Recording.RecordedRequest> = []

/** A fresh fake cluster whose requests are kept in `seen` when the test ends. */
const cluster = () =>
  Layer.scopedDiscard(
    Effect.flatMap(FakeApiServer.Fake, (fake) =>
      Effect.addFinalizer(() => Effect.sync(() => seen.push(...fake.requests))))
  ).pipe(Layer.provideMerge(FakeApiServer.layer()))

describe("KubeOrchestrator", () => {
  OrchestratorContract.run("kubernetes (recording API server)", cluster)

  const withNetwork = Effect.gen(function*() {
    const cluster = yield* Orchestrator.Orchestrator
    const fake = yield* FakeApiServer.Fake
    const network = Fixtures.network()
    yield* cluster.applyVpc(network.vpc)
    yield* cluster.applySubnet(network.subnet)
    return { cluster, fake, ...network }
  })

  it.effect("every write is a server-side apply under Tenet's field manager", () =>
    Effect.gen(function*() {
      const { cluster, fake, subnet, vpc } = yield* withNetwork
      yield* cluster.applySecurityPlan(Fixtures.emptyPlan({ subnet, vpc }))
      yield* cluster.applyPod(Fixtures.pod(subnet, { persistent_mount_path: "/data", external_access: true }))
      const writes = fake.requests.filter((r) => r.method !== "GET" && r.method !== "DELETE")
      expect(writes.length).toBeGreaterThan(5)
      for (const write of writes) {
        expect(write).toMatchObject({
          method: "PATCH",
          contentType: "application/apply-patch+yaml",
          query: { fieldManager: Names.FIELD_MANAGER, force: "true" }
        })
      }
    }).pipe(Effect.provide(cluster())))

  it.effect("applying twice leaves every object as it was", () =>
    Effect.gen(function*() {
      const { cluster, fake, subnet, vpc } = yield* withNetwork
      const spec = Fixtures.pod(subnet, {
        autoscaling: { min_replicas: 2, max_replicas: 4, cpu_target_millicores: 250 },
        external_inbound: { subnet_cidr: "203.0.113.0/29" as any, gateway: "203.0.113.1" as any },
        external_access: true
      })
      yield* cluster.applyPod(spec)
      const before = structuredClone([...fake.objects])
      yield* cluster.applyVpc(vpc)
      yield* cluster.applySubnet(subnet)
      yield* cluster.applyPod(spec)
      expect([...fake.objects]).toEqual(before)
    }).pipe(Effect.provide(cluster())))

  it.effect("turning a feature off removes what it needed; the VIP stays", () =>
    Effect.gen(function*() {
      const { cluster, fake, subnet } = yield* withNetwork
      const spec = Fixtures.pod(subnet, {
        autoscaling: { min_replicas: 2, max_replicas: 4, cpu_target_millicores: 250 },
        persistent_mount_path: "/data",
        external_inbound: { subnet_cidr: "203.0.113.0/29" as any, gateway: "203.0.113.1" as any },
        external_access: true
      })
      const first = yield* cluster.applyPod(spec)
      expect(fake.ofKind("HorizontalPodAutoscaler")).toHaveLength(1)
      expect(fake.ofKind("OvnDnatRule").map((r) => r.spec.protocol).sort()).toEqual(["tcp", "udp"])
      expect(fake.ofKind("OvnSnatRule").filter((r) => r.metadata.labels[Names.POD] === spec.pod_id)).toHaveLength(2)
      const plain = yield* cluster.applyPod({
        ...spec,
        autoscaling: null,
        persistent_mount_path: null,
        external_inbound: null,
        external_access: false
      })
      expect(plain.vip).toBe(first.vip)
      expect(plain.external_ip).toBeNull()
      for (const kind of ["HorizontalPodAutoscaler", "PersistentVolumeClaim", "OvnDnatRule", "OvnEip"]) {
        expect(fake.ofKind(kind).filter((o) => o.metadata.labels?.[Names.POD] === spec.pod_id)).toEqual([])
      }
    }).pipe(Effect.provide(cluster())))

  it.effect("deleting a tenant leaves nothing of it in the cluster", () =>
    Effect.gen(function*() {
      const { cluster, fake, subnet, vpc } = yield* withNetwork
      yield* cluster.applyRegistrySecret(Fixtures.registrySecret(vpc.tenant_id))
      yield* cluster.applyPod(Fixtures.pod(subnet, { external_access: true }))
      yield* cluster.deleteTenant(vpc.tenant_id)
      const left = [...fake.objects.values()].filter((o) =>
        o.metadata.labels?.[Names.TENANT] === vpc.tenant_id || o.metadata.namespace === Names.namespace(vpc.vpc_id)
      )
      expect(left).toEqual([])
    }).pipe(Effect.provide(cluster())))

  it.effect("a refused apply is an OrchestratorError with the API server's message", () =>
    Effect.gen(function*() {
      const { cluster, fake, subnet } = yield* withNetwork
      fake.failNext(1, 403, (method) => method === "PATCH")
      const error = yield* Effect.flip(cluster.applyPod(Fixtures.pod(subnet)))
      expect(error).toBeInstanceOf(Orchestrator.OrchestratorError)
      expect(error.message).toContain("403")
      expect(error.message).toContain("injected failure")
    }).pipe(Effect.provide(cluster())))

  it.effect("the security plan lands on every subnet's acls; the subnet's own fields survive", () =>
    Effect.gen(function*() {
      const { cluster, fake, subnet, vpc } = yield* withNetwork
      const plan = Fixtures.emptyPlan({ subnet, vpc })
      yield* cluster.applySecurityPlan(plan)
      yield* cluster.applySubnet(subnet)
      const live = fake.objects.get(`Subnet//${Names.subnet(subnet.subnet_id)}`)!
      expect(live.spec).toMatchObject({
        cidrBlock: subnet.cidr,
        gateway: subnet.gateway_ip,
        vpc: Names.vpc(vpc.vpc_id)
      })
      expect(live.spec.acls.length).toBeGreaterThan(0)
    }).pipe(Effect.provide(cluster())))

  // Runs last: what the tests above asked of the API server, against what the ClusterRole grants.
  it("asks for every permission the shipped ClusterRole grants, and for nothing it does not", () => {
    expect(seen.filter((r) => !r.allowed).map((r) => `${r.method} ${r.path}`)).toEqual([])
    const used = new Set(seen.flatMap((r) => r.attributes === undefined ? [] : [Permissions.grant(r.attributes)]))
    // Applying an object that does not exist yet is a create as well as a patch.
    for (const r of seen) {
      if (r.attributes?.verb === "patch") used.add(Permissions.grant({ ...r.attributes, verb: "create" }))
    }
    expect(Permissions.grants(Permissions.rules).filter((g) => !used.has(g))).toEqual([])
  })
})
