/**
 * The Kubernetes orchestrator against a real API server (kube-apiserver v1.20.2 and etcd, RBAC
 * on, Kube-OVN's CRDs), as Tenet's user holding only the shipped ClusterRole's rules: the
 * Orchestrator contract, and what only a real server shows (RBAC, server-side apply's field
 * managers, discovery, watches, a cluster without controllers).
 */
import { describe, expect, it } from "@effect/vitest"
import type { KubernetesObject } from "@kubernetes/client-node"
import { KubeConfig, KubernetesObjectApi } from "@kubernetes/client-node"
import { KubeApi, KubeLease, Manifests, Names, Permissions } from "@tenet/adapters-k8s"
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import type { Net } from "@tenet/core"
import { Orchestrator } from "@tenet/core"
import { Fixtures, OrchestratorContract } from "@tenet/core/testing"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Schedule } from "effect"
import * as FakeApiServer from "./FakeApiServer.js"
import { onCluster, useCluster } from "./RealCluster.js"

type Obj = KubernetesObject & Record<string, any>

const externalPool = {
  subnet_cidr: "203.0.113.0/24" as Net.Ipv4Network,
  gateway: "203.0.113.1" as Net.Ipv4Address
}

describe.skipIf(!onCluster)("KubeOrchestrator on kube-apiserver v1.20.2", () => {
  const cluster = useCluster()
  const admin = () => KubernetesObjectApi.makeApiClient(cluster().admin)
  const inCluster = (effect: Effect.Effect<void, unknown, Orchestrator.Orchestrator>) =>
    Effect.provide(effect, LocalCluster.orchestrator(cluster(), { syncTimeout: "3 seconds" }))

  OrchestratorContract.run("kubernetes (kube-apiserver v1.20.2)", () => LocalCluster.orchestrator(cluster()), {
    live: true,
    timeout: 60_000,
    externalPool
  })

  /** Everything Tenet labelled with the owner, of every kind it writes, as the admin sees it. */
  const ownedObjects = (label: string, value: string) =>
    Effect.promise(async () => {
      const kinds = [...Object.values(Manifests.Kinds), Manifests.horizontalPodAutoscaler("v2beta2")]
        .filter((k) => k.apiVersion !== "autoscaling/v2")
      const found: Array<Obj> = []
      for (const kind of kinds) {
        const selector = `${label}=${value}`
        const list = await admin().list(
          kind.apiVersion,
          kind.kind,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          selector
        )
        found.push(...(list.items as Array<Obj>).map((item) => ({ ...item, kind: kind.kind })))
      }
      return found
    })
  const ownedBy = (label: string, value: string) =>
    Effect.map(
      ownedObjects(label, value),
      (objects) =>
        objects.map((item) =>
          `${item.kind} ${item.metadata?.namespace ?? ""}/${item.metadata?.name}${
            item.metadata?.deletionTimestamp ? " (terminating)" : ""
          }`
        )
    )

  /** A fresh tenant's VPC and subnet, applied. */
  const withNetwork = Effect.gen(function*() {
    const orchestrator = yield* Orchestrator.Orchestrator
    const { subnet, vpc } = Fixtures.network()
    yield* orchestrator.applyVpc(vpc)
    yield* orchestrator.applySubnet(subnet)
    return { orchestrator, subnet, vpc }
  })

  const eventually = <A>(effect: Effect.Effect<A>, check: (a: A) => boolean) =>
    effect.pipe(
      Effect.filterOrFail(check, (a) => `not yet: ${JSON.stringify(a)}`),
      Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("10 seconds")))
    )

  it("of Kube-OVN's CRDs, the 1.20 server refuses only ones needing x-kubernetes-validations, none a kind Tenet writes", () => {
    const written = new Set(
      Object.values(Manifests.Kinds).filter((k) => k.apiVersion === "kubeovn.io/v1").map((k) =>
        `${k.resource}.kubeovn.io`
      )
    )
    expect(cluster().refusedCrds.length).toBeGreaterThan(0)
    expect(cluster().refusedCrds.filter((name) => written.has(name))).toEqual([])
  })

  it.live(
    "an autoscaled pod has its HPA at autoscaling/v2beta2, the version 1.20 serves, when its apply returns",
    () =>
      inCluster(Effect.gen(function*() {
        const { orchestrator, subnet } = yield* withNetwork
        const spec = Fixtures.pod(subnet, {
          autoscaling: { min_replicas: 2, max_replicas: 4, cpu_target_millicores: 200 }
        })
        yield* orchestrator.applyPod(spec)
        const hpa = yield* Effect.promise(() =>
          admin().read({
            apiVersion: "autoscaling/v2beta2",
            kind: "HorizontalPodAutoscaler",
            metadata: { name: Names.workload(spec.pod_id), namespace: Names.namespace(spec.vpc_id) }
          }) as Promise<Obj>
        )
        expect(hpa.spec).toMatchObject({ minReplicas: 2, maxReplicas: 4 })
        // Turned off, the HPA goes: pruning lists it at the version the cluster serves.
        yield* orchestrator.applyPod({ ...spec, autoscaling: null })
        expect(yield* ownedBy(Names.POD, spec.pod_id)).not.toContainEqual(
          expect.stringMatching(/^HorizontalPodAutoscaler/)
        )
      })),
    30_000
  )

  it.live(
    "a Deployment's status written by its controller shows in the pod's status from the watch, with no read of the API server",
    () =>
      inCluster(
        Effect.gen(function*() {
          const { orchestrator, subnet } = yield* withNetwork
          const spec = Fixtures.pod(subnet, { replicas: 3 })
          yield* orchestrator.applyPod(spec)
          yield* eventually(
            Effect.map(Effect.orDie(orchestrator.podStatus(spec.pod_id)), Option.getOrThrow),
            (s) => s.phase === "running"
          )
          const name = Names.workload(spec.pod_id)
          const namespace = Names.namespace(spec.vpc_id)
          const live = (yield* Effect.promise(() =>
            admin().read({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name, namespace } })
          )) as Obj
          const failing = {
            ...live,
            status: {
              ...live.status,
              readyReplicas: 1,
              availableReplicas: 1,
              conditions: [{
                type: "ReplicaFailure",
                status: "True",
                reason: "FailedCreate",
                message: "quota exceeded"
              }]
            }
          }
          // Only this test writes and Tenet reads while it is counted.
          yield* cluster().pauseControllers(true)
          yield* Effect.addFinalizer(() =>
            cluster().pauseControllers(false)
          )
          const before = yield* Effect.orDie(cluster().requestCounts)
          yield* Effect.orDie(LocalCluster.writeStatus(cluster().admin, failing))
          const seen = yield* eventually(
            Effect.map(Effect.orDie(orchestrator.podStatus(spec.pod_id)), Option.getOrThrow),
            (s) => s.ready_replicas === 1
          )
          const after = yield* Effect.orDie(cluster().requestCounts)
          expect(seen).toMatchObject({ phase: "degraded", ready_replicas: 1, desired_replicas: 3, stale_since: null })
          // Two reads of the admin's own (the status write's read of the object aside): none of Tenet's.
          const reads = Object.entries(after).filter(([key, n]) => /^(GET|LIST) /.test(key) && n !== before[key])
          expect(reads).toEqual([])
        }).pipe(Effect.scoped)
      ),
    30_000
  )

  it.live(
    "deleting a VPC leaves nothing Tenet made of it, with no controller to collect it",
    () =>
      inCluster(Effect.gen(function*() {
        const { orchestrator, subnet, vpc } = yield* withNetwork
        yield* orchestrator.applyRegistrySecret(Fixtures.registrySecret(vpc.tenant_id))
        yield* orchestrator.applyPod(Fixtures.pod(subnet, {
          persistent_mount_path: "/data",
          external_access: true,
          external_inbound: externalPool,
          autoscaling: { min_replicas: 2, max_replicas: 3, cpu_target_millicores: 100 }
        }))
        expect((yield* ownedBy(Names.VPC, vpc.vpc_id)).length).toBeGreaterThan(10)
        yield* orchestrator.deleteVpc(vpc.vpc_id)
        // The namespace stays terminating until the namespace controller (here, the test's) finalizes it.
        const left = yield* eventually(ownedBy(Names.VPC, vpc.vpc_id), (found) => found.length === 0)
        expect(left).toEqual([])
      })),
    30_000
  )

  it.live(
    "applying the same specs again changes no object: no resourceVersion moves",
    () =>
      inCluster(Effect.gen(function*() {
        const { orchestrator, subnet, vpc } = yield* withNetwork
        const spec = Fixtures.pod(subnet, {
          autoscaling: { min_replicas: 2, max_replicas: 4, cpu_target_millicores: 250 },
          external_inbound: externalPool,
          external_access: true
        })
        yield* orchestrator.applyPod(spec)
        // A replica gets its SNAT rule at the apply after the cluster gave it an address (see the
        // differential test): both replicas have one before the apply counted from.
        yield* eventually(
          ownedObjects(Names.TENANT, vpc.tenant_id),
          (objects) => objects.filter((o) => o.kind === "Pod" && o.status?.podIP !== undefined).length === 2
        )
        yield* orchestrator.applyPod(spec)
        const versions = Effect.map(
          ownedObjects(Names.TENANT, vpc.tenant_id),
          (objects) =>
            objects.filter((o) => o.kind !== "Pod" && o.kind !== "Deployment")
              .map((o) => `${o.kind} ${o.metadata?.name} ${o.metadata?.resourceVersion}`).sort()
        )
        // The Deployment is left out: its controller (the test's) writes its status.
        const before = yield* versions
        yield* orchestrator.applyVpc(vpc)
        yield* orchestrator.applySubnet(subnet)
        yield* orchestrator.applyPod(spec)
        expect(yield* versions).toEqual(before)
      })),
    30_000
  )

  it.live(
    "a pod made again asks for its VIP; one another Service holds is not taken, the API server gives another",
    () =>
      inCluster(Effect.gen(function*() {
        const { orchestrator, subnet } = yield* withNetwork
        const first = yield* orchestrator.applyPod(Fixtures.pod(subnet))
        // A free address in the service range: the one the pod had, after the pod is gone.
        const spec = Fixtures.pod(subnet)
        const placed = yield* orchestrator.applyPod(spec)
        yield* orchestrator.deletePod(spec.pod_id)
        const again = yield* orchestrator.applyPod({ ...spec, vip: placed.vip as Net.Ipv4Address })
        expect(again.vip).toBe(placed.vip)
        // Held by another pod's Service: refused for it, so assigned afresh.
        const other = Fixtures.pod(subnet)
        const elsewhere = yield* orchestrator.applyPod({ ...other, vip: first.vip as Net.Ipv4Address })
        expect(elsewhere.vip).not.toBe(first.vip)
        expect(elsewhere.vip).toMatch(/^10\.96\./)
      })),
    30_000
  )

  it.live(
    "turning a feature off removes what it needed; the VIP and the external IP's object go or stay as asked",
    () =>
      inCluster(Effect.gen(function*() {
        const { orchestrator, subnet } = yield* withNetwork
        const spec = Fixtures.pod(subnet, {
          autoscaling: { min_replicas: 2, max_replicas: 4, cpu_target_millicores: 250 },
          persistent_mount_path: "/data",
          external_inbound: externalPool,
          external_access: true
        })
        const first = yield* orchestrator.applyPod(spec)
        const kinds = Effect.map(ownedBy(Names.POD, spec.pod_id), (found) => found.map((f) => f.split(" ")[0]))
        expect(yield* kinds).toEqual(expect.arrayContaining([
          "HorizontalPodAutoscaler",
          "PersistentVolumeClaim",
          "OvnDnatRule",
          "OvnEip"
        ]))
        const plain = yield* orchestrator.applyPod({
          ...spec,
          autoscaling: null,
          persistent_mount_path: null,
          external_inbound: null,
          external_access: false
        })
        expect(plain.vip).toBe(first.vip)
        expect(plain.external_ip).toBeNull()
        // A claim goes once the PVC-protection controller (the test's) releases it.
        const gone = ["HorizontalPodAutoscaler", "PersistentVolumeClaim", "OvnDnatRule", "OvnEip"]
        const left = yield* eventually(kinds, (found) => !found.some((kind) => gone.includes(kind!)))
        expect(left).toEqual(expect.arrayContaining(["Deployment", "Service", "Secret"]))
      })),
    30_000
  )

  it.live(
    "deleting a tenant leaves nothing of it in the cluster",
    () =>
      inCluster(Effect.gen(function*() {
        const { orchestrator, subnet, vpc } = yield* withNetwork
        yield* orchestrator.applyRegistrySecret(Fixtures.registrySecret(vpc.tenant_id))
        yield* orchestrator.applyPod(Fixtures.pod(subnet, { external_access: true }))
        yield* orchestrator.deleteTenant(vpc.tenant_id)
        expect(yield* eventually(ownedBy(Names.TENANT, vpc.tenant_id), (found) => found.length === 0)).toEqual([])
      })),
    // The API server's garbage collection of a tenant's objects took past 30 s on a loaded CI machine.
    90_000
  )

  it.live(
    "the security plan lands on the subnet's acls; the subnet's own fields survive another apply of it",
    () =>
      inCluster(Effect.gen(function*() {
        const { orchestrator, subnet, vpc } = yield* withNetwork
        yield* orchestrator.applySecurityPlan(Fixtures.emptyPlan({ subnet, vpc }))
        yield* orchestrator.applySubnet(subnet)
        const live = (yield* Effect.promise(() =>
          admin().read({
            apiVersion: "kubeovn.io/v1",
            kind: "Subnet",
            metadata: { name: Names.subnet(subnet.subnet_id) }
          })
        )) as Obj
        expect(live.spec).toMatchObject({
          cidrBlock: subnet.cidr,
          gateway: subnet.gateway_ip,
          vpc: Names.vpc(vpc.vpc_id)
        })
        expect(live.spec.acls.length).toBeGreaterThan(0)
      })),
    30_000
  )

  it.live(
    "another field manager's change to a field Tenet renders is taken back; fields Tenet does not render are left",
    () =>
      inCluster(Effect.gen(function*() {
        const { orchestrator, subnet } = yield* withNetwork
        const spec = Fixtures.pod(subnet, { image: "nginx:1.27" })
        yield* orchestrator.applyPod(spec)
        const ref = {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: Names.workload(spec.pod_id), namespace: Names.namespace(spec.vpc_id) }
        }
        const theirs = {
          ...ref,
          metadata: { ...ref.metadata, annotations: { "example.com/owner": "team-a" } },
          spec: { template: { spec: { containers: [{ name: "app", image: "nginx:evil" }] } } }
        }
        // Without force, their apply conflicts with Tenet's ownership of the image.
        const conflict = yield* Effect.either(Effect.tryPromise(() =>
          admin().patch(
            theirs as KubernetesObject,
            undefined,
            undefined,
            "someone-else",
            false,
            "application/apply-patch+yaml"
          )
        ))
        expect(conflict._tag).toBe("Left")
        expect(String((conflict as { left: { error: { code?: number } } }).left.error.code)).toBe("409")
        // With force they take it; Tenet's next apply takes it back and leaves their annotation.
        yield* Effect.promise(() =>
          admin().patch(
            theirs as KubernetesObject,
            undefined,
            undefined,
            "someone-else",
            true,
            "application/apply-patch+yaml"
          )
        )
        yield* orchestrator.applyPod(spec)
        const after = (yield* Effect.promise(() => admin().read(ref))) as Obj
        expect(after.spec.template.spec.containers[0].image).toBe("nginx:1.27")
        expect(after.metadata?.annotations?.["example.com/owner"]).toBe("team-a")
        const managers = (after.metadata?.managedFields ?? []).map((f) => f.manager)
        expect(managers).toContain(Names.FIELD_MANAGER)
      })),
    30_000
  )

  it.live(
    "the recording API server and the real one end the same operations with the same objects and statuses",
    () =>
      Effect.gen(function*() {
        const { subnet, vpc } = Fixtures.network()
        const registry = Fixtures.registrySecret(vpc.tenant_id)
        const spec = Fixtures.pod(subnet, {
          replicas: 2,
          persistent_mount_path: "/data",
          external_access: true,
          external_inbound: externalPool,
          autoscaling: { min_replicas: 2, max_replicas: 3, cpu_target_millicores: 100 }
        })
        /** `addressed`: done once the cluster has given both replicas an address. */
        const operations = (addressed: Effect.Effect<unknown, string>) =>
          Effect.gen(function*() {
            const orchestrator = yield* Orchestrator.Orchestrator
            yield* orchestrator.applyVpc(vpc)
            yield* orchestrator.applySubnet(subnet)
            yield* orchestrator.applySecurityPlan(Fixtures.emptyPlan({ subnet, vpc }))
            yield* orchestrator.applyRegistrySecret(registry)
            yield* orchestrator.applyPod(spec)
            yield* orchestrator.applyPod({ ...spec, autoscaling: null, persistent_mount_path: null })
            const status = yield* eventually(
              Effect.map(Effect.orDie(orchestrator.podStatus(spec.pod_id)), Option.getOrThrow),
              (s) => s.phase === "running"
            )
            // A real cluster makes the replicas after the apply returns (the recording server, at
            // once): their outbound SNAT rules come with the next apply. A known gap (README).
            yield* addressed
            yield* orchestrator.applyPod({ ...spec, autoscaling: null, persistent_mount_path: null })
            return { ...status, vip: status.vip !== null, external_ip: status.external_ip !== null }
          })
        /** What Tenet wrote, as `kind namespace/name`, with the labels and the fields Tenet renders in `spec`. */
        const shape = (objects: ReadonlyArray<Obj>) =>
          objects
            .filter((o) => o.kind !== "Pod")
            .map((o) => ({
              // A replica's SNAT rule is named by the address its cluster happened to give it.
              object: `${o.kind} ${o.metadata?.namespace ?? ""}/${
                o.metadata?.name?.replace(/^(tenet-snat-.{36})-[\d-]+$/, "$1-<replica>")
              }`,
              labels: o.metadata?.labels,
              spec: o.kind === "Subnet" ? { acls: o.spec?.acls, cidrBlock: o.spec?.cidrBlock } : undefined
            }))
            .sort((a, b) => a.object.localeCompare(b.object))

        const recorded = yield* Effect.gen(function*() {
          const status = yield* operations(Effect.void)
          const fake = yield* FakeApiServer.Fake
          const owned = [...fake.objects.values()].filter((o) => o.metadata.labels?.[Names.TENANT] === vpc.tenant_id)
          return { status, objects: shape(owned as Array<Obj>) }
        }).pipe(
          // As 1.20 answers discovery; its v2beta2 HPA is validated by the real server, not the 1.30 schemas here.
          Effect.provide(
            FakeApiServer.layer({ autoscaling: ["v1", "v2beta2"], version: "v1.20.2", validate: () => [] })
          )
        )
        const addressed = eventually(
          ownedObjects(Names.TENANT, vpc.tenant_id),
          (objects) => objects.filter((o) => o.kind === "Pod" && o.status?.podIP !== undefined).length === 2
        )
        const status = yield* Effect.provide(operations(addressed), LocalCluster.orchestrator(cluster()))
        const real = shape(
          (yield* ownedObjects(Names.TENANT, vpc.tenant_id)).filter((o) => !o.metadata?.deletionTimestamp)
        )
        expect({ status, objects: real }).toEqual(recorded)
      }),
    60_000
  )

  /**
   * Leader election on a Lease, as two replicas (two identities) see it, with short periods: one
   * leads at a time; a leader that stops releases the Lease; a leader whose Lease another took
   * stops its work; and nobody takes a Lease until it has gone unrenewed for its duration.
   */
  it.live(
    "one replica leads on a Lease at a time, and the Lease changes hands only as client-go's leader election allows",
    () =>
      Effect.gen(function*() {
        const kube = KubeApi.make(cluster().tenet)
        const periods: KubeLease.Options = {
          namespace: "tenet-system",
          leaseDuration: "2 seconds",
          renewDeadline: "1500 millis",
          retryPeriod: "300 millis"
        }
        const a = KubeLease.make(kube, { ...periods, identity: "replica-a" })
        const b = KubeLease.make(kube, { ...periods, identity: "replica-b" })
        const name = `lease-${crypto.randomUUID().slice(0, 8)}`
        const leading = (who: typeof a) =>
          Effect.gen(function*() {
            const started = yield* Deferred.make<void>()
            const fiber = yield* Effect.fork(
              who.lead(name, Effect.zipRight(Deferred.succeed(started, undefined), Effect.never))
            )
            yield* Deferred.await(started)
            return fiber
          })
        const first = yield* leading(a)
        expect(yield* b.lead(name, Effect.succeed("b"))).toEqual(Option.none())
        // A leader that stops gives the Lease up: the other leads at once.
        yield* Fiber.interrupt(first)
        expect(yield* b.lead(name, Effect.succeed("b"))).toEqual(Option.some("b"))
        // Someone takes the Lease from a leader (a replica that then dies): the leader's work stops.
        const second = yield* leading(b)
        // Read and replaced again when the leader's renewal lands in between (409).
        yield* Effect.retry(
          Effect.tryPromise(async () => {
            const lease = (await admin().read({
              apiVersion: "coordination.k8s.io/v1",
              kind: "Lease",
              metadata: { name, namespace: "tenet-system" }
            })) as Obj
            await admin().replace({
              ...lease,
              spec: {
                ...lease.spec,
                holderIdentity: "replica-gone",
                renewTime: new Date().toISOString().replace("Z", "000Z")
              }
            } as KubernetesObject)
          }),
          { times: 5 }
        )
        const stopped = yield* Fiber.await(second)
        expect(stopped).toMatchObject({ _tag: "Failure" })
        expect(String(Exit.causeOption(stopped).pipe(Option.getOrThrow))).toContain("another replica's")
        // Unrenewed, it is taken over, but only after its duration by the asker's own clock.
        const asked = Date.now()
        for (;;) {
          if (Option.isSome(yield* a.lead(name, Effect.succeed("a")))) break
          expect(Date.now() - asked).toBeLessThan(10_000)
          yield* Effect.sleep("300 millis")
        }
        expect(Date.now() - asked).toBeGreaterThanOrEqual(1_900)
      }),
    60_000
  )

  /**
   * Least privilege, both ways: with the shipped rules everything works (the contract above);
   * without any one (group, resource, verb) of them, some operation fails, and says why. Each grant
   * is withheld from a user of its own (the admin impersonating it), so they are tried six at a time.
   */
  describe("without any one grant of the shipped ClusterRole", () => {
    /** A user bound to exactly these rules, by a ClusterRole and binding of its own name. */
    const userWith = (user: string, rules: ReadonlyArray<Permissions.PolicyRule>) =>
      Effect.promise(async () => {
        await admin().create({
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          metadata: { name: user },
          rules: rules.map((r) => ({ ...r }))
        } as KubernetesObject)
        await admin().create({
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRoleBinding",
          metadata: { name: user },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: user },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }]
        } as KubernetesObject)
      })
    /** The admin's credentials acting as the user: what the user may do, the server decides. */
    const impersonating = (user: string): Pick<LocalCluster.LocalCluster, "tenet"> => {
      const config = new KubeConfig()
      config.loadFromOptions({
        clusters: cluster().admin.clusters,
        users: [{ ...cluster().admin.getCurrentUser()!, name: user, impersonateUser: user }],
        contexts: [{ name: "local", cluster: cluster().admin.getCurrentCluster()!.name, user }],
        currentContext: "local"
      })
      return { tenet: config }
    }
    /** A grant string's parts, as `Permissions.grant` writes it. */
    const parsed = (grant: string) => {
      const [group, rest] = grant.split("/") as [string, string]
      const [resource, verb] = rest.split(":") as [string, string]
      return { apiGroup: group === "core" ? "" : group, resource, verb }
    }
    /** Whether the authorizer lets the user do the first of the rules' grants: its binding is seen. */
    const bound = (user: string, rules: ReadonlyArray<Permissions.PolicyRule>) =>
      Effect.promise(async () => {
        const { apiGroup, resource, verb } = parsed(Permissions.grants(rules)[0]!)
        const review = (await admin().create({
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: { user, resourceAttributes: { verb, group: apiGroup, resource } }
        } as KubernetesObject)) as Obj
        return review.status?.allowed === true
      })

    /** Everything Tenet does, each outcome kept: the failures' messages, and whether statuses were stale. */
    const everything = (as: Pick<LocalCluster.LocalCluster, "tenet">) =>
      Effect.gen(function*() {
        const orchestrator = yield* Orchestrator.Orchestrator
        const failures: Array<string> = []
        const attempt = <A>(effect: Effect.Effect<A, Orchestrator.OrchestratorError>) =>
          Effect.map(Effect.exit(effect), (exit) => {
            if (Exit.isFailure(exit)) failures.push(String(Exit.causeOption(exit).pipe(Option.getOrThrow)))
            return Exit.isSuccess(exit) ? Option.some(exit.value) : Option.none<A>()
          })
        const { subnet, vpc } = Fixtures.network()
        yield* attempt(orchestrator.applyVpc(vpc))
        yield* attempt(orchestrator.applySubnet(subnet))
        yield* attempt(orchestrator.applySecurityPlan(Fixtures.emptyPlan({ subnet, vpc })))
        const registry = Fixtures.registrySecret(vpc.tenant_id)
        yield* attempt(orchestrator.applyRegistrySecret(registry))
        const spec = Fixtures.pod(subnet, {
          persistent_mount_path: "/data",
          external_access: true,
          external_inbound: externalPool,
          autoscaling: { min_replicas: 2, max_replicas: 3, cpu_target_millicores: 100 }
        })
        yield* attempt(orchestrator.applyPod(spec))
        yield* attempt(orchestrator.applyPod({ ...spec, autoscaling: null, persistent_mount_path: null }))
        const status = yield* attempt(orchestrator.podStatus(spec.pod_id))
        const stale = Option.exists(status, (s) => Option.exists(s, (r) => r.stale_since !== null))
        yield* attempt(orchestrator.restartPod(spec.pod_id))
        yield* attempt(orchestrator.deleteRegistrySecret(vpc.tenant_id, registry.name))
        yield* attempt(orchestrator.deletePod(spec.pod_id))
        yield* attempt(orchestrator.deleteSubnet(vpc.vpc_id, subnet.subnet_id))
        yield* attempt(orchestrator.deleteVpc(vpc.vpc_id))
        yield* attempt(orchestrator.deleteTenant(vpc.tenant_id))
        // Leading the controller: a Lease read, created, then renewed (a second lead).
        const leases = KubeLease.make(KubeApi.make(as.tenet), { namespace: "tenet-system", identity: "grants" })
        const lease = `grants-${crypto.randomUUID().slice(0, 8)}`
        for (let i = 0; i < 2; i++) {
          const led = yield* Effect.exit(leases.lead(lease, Effect.void))
          if (Exit.isFailure(led)) {
            failures.push(Option.match(Cause.failureOption(led.cause), {
              onNone: () => Cause.pretty(led.cause),
              onSome: (e) => e.detail
            }))
          }
        }
        return { failures, stale }
      }).pipe(
        // A grant withheld from a list leaves its informer unsynced: reads give up after 1 s.
        Effect.provide(LocalCluster.orchestrator(as, { syncTimeout: "1 second" }))
      )

    it.live("with every grant, nothing fails and statuses are current", () =>
      Effect.gen(function*() {
        yield* userWith("tenet-every-grant", Permissions.rules)
        yield* eventually(bound("tenet-every-grant", Permissions.rules), (a) => a)
        const outcome = yield* everything(impersonating("tenet-every-grant"))
        expect(outcome).toEqual({ failures: [], stale: false })
      }), 60_000)

    const grants = Permissions.grants(Permissions.rules)
    it.live(
      `each of the ${grants.length} grants is needed: without it an operation fails, naming what was forbidden`,
      () =>
        Effect.gen(function*() {
          const unexplained = yield* Effect.forEach(grants, (grant, n) =>
            Effect.gen(function*() {
              const { apiGroup, resource, verb } = parsed(grant)
              const without = Permissions.rules.flatMap((rule) => {
                if (!rule.apiGroups.includes(apiGroup) || !rule.resources.includes(resource)) return [rule]
                const others = rule.resources.filter((r) => r !== resource)
                return [
                  ...(others.length > 0 ? [{ ...rule, resources: others }] : []),
                  { ...rule, resources: [resource], verbs: rule.verbs.filter((v) => v !== verb) }
                ]
              })
              const user = `tenet-without-${n}`
              yield* userWith(user, without)
              yield* eventually(bound(user, without), (a) => a)
              const o = yield* everything(impersonating(user))
              const named = o.failures.some((f) => f.includes(`cannot ${verb} resource "${resource}"`))
              // A watch refused leaves the last list in place: statuses say they are stale.
              const visible = named || (verb === "watch" && o.stale)
              return visible ? [] : [`${grant}: ${JSON.stringify(o)}`]
            }), { concurrency: 6 })
          expect(unexplained.flat().join("\n")).toBe("")
        }),
      300_000
    )
  })
})
