/**
 * The worst drift there is, on a real Kubernetes API server (kube-apiserver v1.20.2 and etcd,
 * RBAC on, Kube-OVN's CRDs): etcd wiped and the API server started again on it, so everything
 * Tenet made is gone at once, its watches cut, the cluster's resource versions begun again.
 * Tenet, running throughout, makes every object again from the committed state, and says the
 * tenant's VPC and pod are in force only once they are.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Names } from "@tenet/adapters-k8s"
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import { Effect, Either, Layer } from "effect"
import { afterAll, beforeAll } from "vitest"
import { TestServer } from "../src/index.js"
import { httpsIn, kubeOvnCrds, raw, setProviderConfig, workspace } from "./Harness.js"
import * as Sse from "./Sse.js"

type Json = Record<string, any>

describe.skipIf(!LocalCluster.available(kubeOvnCrds))("etcd wiped under kube-apiserver v1.20.2", () => {
  const suite = LocalCluster.forSuite({ crds: kubeOvnCrds })
  beforeAll(suite.start, 120_000)
  afterAll(suite.stop, 60_000)

  type Ref = readonly [apiVersion: string, kind: string, name: string, namespace?: string]
  const read = ([apiVersion, kind, name, namespace]: Ref) =>
    Effect.either(LocalCluster.read(suite.get().admin, apiVersion, kind, name, namespace))

  /**
   * What the admin reads of an object once it is there again (another object than `before`: the
   * repair may be done before the wipe returns, so absence alone proves nothing), within 90 s.
   */
  const recreated = (ref: Ref, before: Json) =>
    Effect.gen(function*() {
      const [, kind, name] = ref
      const deadline = Date.now() + 90_000
      for (;;) {
        const found = yield* read(ref)
        if (
          found._tag === "Right" && (found.right as Json).metadata?.deletionTimestamp === undefined &&
          (found.right as Json).metadata.uid !== before.metadata.uid
        ) {
          return found.right as Json
        }
        if (Date.now() > deadline) return yield* Effect.die(new Error(`${kind} ${name} not made again within 90 s`))
        yield* Effect.sleep("250 millis")
      }
    })

  // What no watch can tell after a wipe is found by the resync; owners are new, so none settles.
  const server = Layer.suspend(() =>
    TestServer.layer({
      orchestrator: LocalCluster.orchestrator(suite.get()),
      controller: { resync: "2 seconds", settle: 0 }
    })
  )

  layer(server, { excludeTestServices: true, timeout: "240 seconds" })("one server", (it) => {
    it.scoped(
      "every object is made again, and the VPC and pod say applied once they are",
      () =>
        Effect.gen(function*() {
          yield* setProviderConfig()
          const w = yield* workspace
          const created = yield* w.createPod({ replica_count: 2 })
          expect(created.status, created.text).toBe(200)
          const pod = created.body as Json
          const rule = yield* raw("POST", "/security-rules", { headers: w.headers, body: httpsIn(w.vpc.id) })
          expect(rule.status, rule.text).toBe(201)
          expect(rule.body).toMatchObject({ applied: true })
          const namespace = Names.namespace(w.vpc.id)
          const base = yield* Sse.baseUrl
          const watch = yield* Effect.acquireRelease(
            Effect.promise(() => Sse.open(`${base}/watch`, w.headers)),
            (watch) => Effect.sync(() => watch.close())
          )
          /** What the change stream said of the object since the wipe. */
          const said = (kind: string, id: string) =>
            watch.frames.map((f) => f.data).filter((e: Json) => e.kind === kind && e.id === id).map((e: Json) =>
              e.object
            )

          const refs = {
            namespace: ["v1", "Namespace", namespace],
            vpc: ["kubeovn.io/v1", "Vpc", Names.vpc(w.vpc.id)],
            subnet: ["kubeovn.io/v1", "Subnet", Names.subnet(w.subnet.id)],
            deployment: ["apps/v1", "Deployment", Names.workload(pod.id), namespace],
            service: ["v1", "Service", Names.workload(pod.id), namespace]
          } satisfies Record<string, Ref>
          const before: Record<string, Json> = {}
          for (const [key, ref] of Object.entries(refs)) before[key] = Either.getOrThrow(yield* read(ref)) as Json

          yield* Effect.orDie(suite.get().wipe)
          yield* recreated(refs.namespace, before.namespace!)
          yield* recreated(refs.vpc, before.vpc!)
          const subnet = yield* recreated(refs.subnet, before.subnet!)
          const deployment = yield* recreated(refs.deployment, before.deployment!)
          const service = yield* recreated(refs.service, before.service!)
          expect(deployment.spec.replicas).toBe(2)
          // The pod's VIP, which the spec keeps for its life, asked for again on an empty cluster.
          expect(service.spec.clusterIP).toBe(pod.status.vip)
          // The rule in force again: the ACLs come back with the Subnet, or just after it.
          yield* Effect.repeat(
            Effect.map(
              Effect.zipRight(
                Effect.sleep("250 millis"),
                LocalCluster.read(suite.get().admin, "kubeovn.io/v1", "Subnet", subnet.metadata.name)
              ),
              (s) => JSON.stringify((s as Json).spec.acls ?? [])
            ),
            { until: (acls) => acls.includes("tcp.dst == 443") }
          ).pipe(Effect.orDie, Effect.timeout("60 seconds"))

          // Said not applied while it was not, then applied.
          yield* Effect.promise(() =>
            watch.until(
              () =>
                said("vpc", w.vpc.id).some((v) => v.applied === false) &&
                said("vpc", w.vpc.id).at(-1)?.applied === true,
              60_000
            )
          )
          const rules = (yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body as Json
          expect(rules).toMatchObject({ applied: true, apply_error: null })
          const running = yield* Effect.repeat(
            Effect.zipRight(
              Effect.sleep("250 millis"),
              Effect.map(
                raw("GET", "/pods", { headers: w.headers }),
                (r) => (r.body as Array<Json>).find((p) => p.id === pod.id)
              )
            ),
            { until: (p) => p?.status.phase === "running" && p.status.last_error === null }
          ).pipe(Effect.timeout("60 seconds"))
          expect(running?.status.desired_replicas).toBe(2)
        }),
      180_000
    )
  })
})
