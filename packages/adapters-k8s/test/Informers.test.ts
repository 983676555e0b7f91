/**
 * What the informers do when the cluster misbehaves, on the recording API server (a real one
 * cannot be made to drop its watches or compact its history on demand): a broken watch makes
 * statuses say since when they are stale until a watch holds again; a version too old to watch
 * from (410) is listed again, and what changed meanwhile is seen. Also the HPA's version by
 * discovery, on the answers of clusters other than the real 1.20 one.
 */
import { describe, expect, it } from "@effect/vitest"
import { Names } from "@tenet/adapters-k8s"
import { Orchestrator } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { type Duration, Effect, Option, Queue, Schedule, Stream } from "effect"
import * as FakeApiServer from "./FakeApiServer.js"

const cluster = (options: Parameters<typeof FakeApiServer.layer>[0] = {}) =>
  FakeApiServer.layer({ orchestrator: { watchBackoff: "50 millis" }, ...options })

const withPod = (overrides: Parameters<typeof Fixtures.pod>[1] = {}) =>
  Effect.gen(function*() {
    const orchestrator = yield* Orchestrator.Orchestrator
    const fake = yield* FakeApiServer.Fake
    const { subnet, vpc } = Fixtures.network()
    yield* orchestrator.applyVpc(vpc)
    yield* orchestrator.applySubnet(subnet)
    const spec = Fixtures.pod(subnet, overrides)
    yield* orchestrator.applyPod(spec)
    const status = Effect.map(Effect.orDie(orchestrator.podStatus(spec.pod_id)), Option.getOrThrow)
    const deployment = [`Deployment`, Names.namespace(spec.vpc_id), Names.workload(spec.pod_id)] as const
    return { orchestrator, fake, spec, status, deployment }
  })

/** A pod, and every change the orchestrator announces from now on. */
const withPodWatched = Effect.gen(function*() {
  const pod = yield* withPod()
  const seen = yield* Queue.unbounded<Orchestrator.ClusterChange>()
  yield* Effect.forkScoped(Stream.runForEach(pod.orchestrator.changes, (c) => Queue.offer(seen, c)))
  yield* Effect.sleep("50 millis")
  return { ...pod, seen }
})

const eventually = <A>(
  effect: Effect.Effect<A>,
  check: (a: A) => boolean,
  within: Duration.DurationInput = "5 seconds"
) =>
  effect.pipe(
    Effect.filterOrFail(check, (a) => `not yet: ${JSON.stringify(a)}`),
    Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo(within)))
  )

describe("informers", () => {
  it.live(
    "while watches cannot be held the status is the last one seen, stale since the break; then current again",
    () =>
      Effect.gen(function*() {
        const { fake, status, deployment } = yield* withPod({ replicas: 2 })
        expect(yield* status).toMatchObject({ phase: "running", stale_since: null })
        // The next watches and lists fail; the open ones break.
        const broken = Date.now()
        fake.failNext(6, 503, (method, path) => method === "GET" && !path.includes("/namespaces/"))
        fake.dropWatches()
        const stale = yield* eventually(status, (s) => s.stale_since !== null)
        expect(stale).toMatchObject({ phase: "running", ready_replicas: 2 })
        expect(stale.stale_since!.getTime()).toBeGreaterThanOrEqual(broken - 1000)
        // A change made while blind shows once a watch holds again.
        fake.update(...deployment, (d) => {
          d.status = { ...d.status, readyReplicas: 1 }
        })
        const back = yield* eventually(status, (s) => s.stale_since === null && s.ready_replicas === 1)
        expect(back.phase).toBe("degraded")
      }).pipe(Effect.provide(cluster())),
    20_000
  )

  it.live(
    "while watches are refused and lists are not, the status stays stale: a list alone is not current",
    () =>
      Effect.gen(function*() {
        const { fake, status } = yield* withPod({ replicas: 2 })
        expect(yield* status).toMatchObject({ stale_since: null })
        // The drop, then four watches of Deployments refused, each after a list that succeeds.
        let refused = 0
        fake.failNext(4, 403, (method, path, query) => {
          const watch = method === "GET" && path === "/apis/apps/v1/deployments" &&
            ["true", "1"].includes(query.get("watch") ?? "")
          if (watch) refused++
          return watch
        })
        fake.dropWatches()
        yield* eventually(status, (s) => s.stale_since !== null)
        // Read again and again until the last refusal: never current in between.
        const read: Array<Orchestrator.PodRuntime> = []
        while (refused < 4) read.push(yield* Effect.zipLeft(status, Effect.sleep("2 millis")))
        expect(read.length).toBeGreaterThan(0)
        expect(read.filter((s) => s.stale_since === null)).toEqual([])
        yield* eventually(status, (s) => s.stale_since === null, "15 seconds")
      }).pipe(Effect.provide(cluster())),
    20_000
  )

  it.live(
    "a watch from a version the server no longer has (410) lists again and sees what changed",
    () =>
      Effect.gen(function*() {
        const { fake, status, deployment } = yield* withPod({ replicas: 3 })
        expect(yield* status).toMatchObject({ ready_replicas: 3 })
        fake.compact()
        fake.dropWatches()
        fake.update(...deployment, (d) => {
          d.status = { ...d.status, readyReplicas: 0 }
        })
        // The update's event went to no watch and is not in the history: only a new list shows it.
        const relisted = yield* eventually(status, (s) => s.ready_replicas === 0 && s.stale_since === null)
        expect(relisted.phase).toBe("pending")
        expect(
          fake.requests.filter((r) =>
            r.method === "GET" && r.query.watch === undefined &&
            r.path === "/apis/apps/v1/deployments"
          ).length
        ).toBeGreaterThanOrEqual(2)
      }).pipe(Effect.provide(cluster())),
    20_000
  )

  it.live(
    "an object deleted while no watch held is announced as deleted when the informer lists again",
    () =>
      Effect.gen(function*() {
        const { fake, seen, spec } = yield* withPodWatched
        const service = `Service ${Names.workload(spec.pod_id)}`
        // Its event went to no watch and is not in the history: only the next list can tell.
        fake.compact()
        fake.objects.delete(`Service/${Names.namespace(spec.vpc_id)}/${Names.workload(spec.pod_id)}`)
        fake.dropWatches()
        const announced = yield* Queue.take(seen).pipe(
          Effect.repeat({ until: (c) => c.object === service }),
          Effect.timeout("5 seconds")
        )
        expect(announced).toMatchObject({
          tenant_id: spec.tenant_id,
          vpc_id: spec.vpc_id,
          pod_id: spec.pod_id,
          change: "deleted",
          manager: null
        })
      }).pipe(Effect.scoped, Effect.provide(cluster())),
    20_000
  )

  for (
    const [where, revision] of [["past every version the cache holds", 1_000_000], ["behind them", 1]] as const
  ) {
    it.live(
      `an API server back on another etcd, its versions ${where}: every object it lost is announced as deleted`,
      () =>
        Effect.gen(function*() {
          const { fake, orchestrator, seen, spec } = yield* withPodWatched
          fake.restore(revision)
          const deleted = new Set<string>()
          yield* Queue.take(seen).pipe(
            Effect.tap((c) => c.change === "deleted" ? deleted.add(c.object) : undefined),
            Effect.repeat({
              until: () =>
                deleted.has(`Service ${Names.workload(spec.pod_id)}`) && deleted.has(`Vpc ${Names.vpc(spec.vpc_id)}`)
            }),
            Effect.timeout("5 seconds")
          )
          // What the caches hold becomes the new server's, each kind's once it lists: no Deployment.
          yield* eventually(Effect.orDie(orchestrator.podStatus(spec.pod_id)), Option.isNone)
        }).pipe(Effect.scoped, Effect.provide(cluster())),
      20_000
    )
  }

  it.live("reading pods asks the API server nothing", () =>
    Effect.gen(function*() {
      const { fake, orchestrator, spec } = yield* withPod()
      const before = fake.requests.length
      for (let i = 0; i < 20; i++) {
        yield* orchestrator.podStatus(spec.pod_id)
        yield* orchestrator.podStatuses(spec.tenant_id)
      }
      expect(fake.requests.slice(before)).toEqual([])
    }).pipe(Effect.provide(cluster())))
})

describe("the HPA's version, by discovery", () => {
  const autoscaled = { autoscaling: { min_replicas: 2, max_replicas: 4, cpu_target_millicores: 200 } }

  it.live("autoscaling/v2 where served (1.23 and later)", () =>
    Effect.gen(function*() {
      const { fake } = yield* withPod(autoscaled)
      expect(fake.ofKind("HorizontalPodAutoscaler").map((h) => h.apiVersion)).toEqual(["autoscaling/v2"])
    }).pipe(Effect.provide(cluster({ version: "v1.29.0", autoscaling: ["v2", "v1"] }))))

  it.live("autoscaling/v2beta2 where v2 is not (1.20 to 1.22)", () =>
    Effect.gen(function*() {
      const { fake, status } = yield* withPod(autoscaled)
      expect(fake.ofKind("HorizontalPodAutoscaler").map((h) => h.apiVersion)).toEqual(["autoscaling/v2beta2"])
      expect((yield* status).desired_replicas).toBeGreaterThanOrEqual(2)
    }).pipe(
      // The published schemas at hand are 1.30's, which has no v2beta2 (the real 1.20 server validates it).
      Effect.provide(cluster({ version: "v1.21.3", autoscaling: ["v1", "v2beta1", "v2beta2"], validate: () => [] }))
    ))

  it.live("neither: the pod is refused, naming the cluster's version and what it serves", () =>
    Effect.gen(function*() {
      const orchestrator = yield* Orchestrator.Orchestrator
      const { subnet, vpc } = Fixtures.network()
      yield* orchestrator.applyVpc(vpc)
      yield* orchestrator.applySubnet(subnet)
      const error = yield* Effect.flip(orchestrator.applyPod(Fixtures.pod(subnet, autoscaled)))
      expect(error.message).toBe(
        "applyPod: the cluster (Kubernetes v1.12.0) serves autoscaling/v1; autoscaled pods need autoscaling/v2 or " +
          "autoscaling/v2beta2"
      )
      // A pod without autoscaling still runs there.
      yield* orchestrator.applyPod(Fixtures.pod(subnet))
    }).pipe(Effect.provide(cluster({ version: "v1.12.0", autoscaling: ["v1"] }))))
})
