/**
 * What the Kubernetes orchestrator's informers hold in memory per 1,000 pods: a real API server
 * (`LocalCluster`: kube-apiserver v1.20.2 and etcd) is given 1,000 pods' Deployments (with a
 * controller's status), Services and OvnEips (with Kube-OVN's address), applied by Tenet's user
 * as Tenet applies them; then the heap is measured (after a full GC) before and after the
 * orchestrator's informers list them; then how long a Deployment's status written in the
 * cluster takes to show in the pod's status (the watch's latency). Needs `--expose-gc` (as `pnpm bench` runs) and the
 * binaries of `.ci/kube-apiserver`; without them it says so and measures nothing.
 *
 *   node --expose-gc --conditions=@tenet/source --import tsx packages/server/bench/Informers.ts
 */
import { KubeApi, KubeOrchestrator, Manifests, Names } from "@tenet/adapters-k8s"
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import { Orchestrator } from "@tenet/core"
import * as Fixtures from "@tenet/core/testing/Fixtures"
import { Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

export interface InformerMemory {
  readonly pods: number
  /** Heap the informers' caches took, in bytes. */
  readonly heapBytes: number
  /** The objects' JSON as listed, with and without `metadata.managedFields`, in bytes. */
  readonly listedBytes: number
  readonly listedSlimBytes: number
  readonly syncMillis: number
  /** From a Deployment's status written in the cluster to the pod's status showing it, in ms. */
  readonly statusLatencyMillis: ReadonlyArray<number>
}

const crds = process.env.TENET_KUBE_OVN_CRDS ??
  fileURLToPath(new URL("../../../../shared/vendor/kube-ovn/kube-ovn-crd.yaml", import.meta.url))

const heap = () => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error("run with node --expose-gc")
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

const jsonBytes = (objects: ReadonlyArray<unknown>) => Buffer.byteLength(JSON.stringify(objects))

export const available = () => LocalCluster.available(crds) && existsSync(crds)

export const run = (pods = 1000) =>
  Effect.gen(function*() {
    const cluster = yield* LocalCluster.Cluster
    // Only Tenet's user and this benchmark touch the cluster while it is measured.
    yield* cluster.pauseControllers(true)
    const kube = KubeApi.make(cluster.tenet)
    const { subnet, vpc } = Fixtures.network()
    const namespace = Manifests.vpc(vpc, Manifests.defaultSettings).find((m) => m.kind === "Namespace")!
    yield* kube.apply(namespace)
    yield* Effect.forEach(Array.from({ length: pods }, (_, i) => i), (i) =>
      Effect.gen(function*() {
        const spec = Fixtures.pod(subnet, { replicas: 2, external_access: true })
        const objects = Manifests.pod(spec, Manifests.defaultSettings, { vip: null, replicas: [] })
          .filter((m) => ["Deployment", "Service", "OvnEip"].includes(m.kind))
        const applied = yield* Effect.forEach(objects, kube.apply)
        for (const object of applied) {
          const status = object.kind === "Deployment"
            ? {
              observedGeneration: 1,
              replicas: 2,
              readyReplicas: 2,
              availableReplicas: 2,
              updatedReplicas: 2,
              conditions: [{ type: "Available", status: "True", reason: "MinimumReplicasAvailable" }]
            }
            : object.kind === "OvnEip"
            ? { v4Ip: `203.0.${113 + Math.floor(i / 250)}.${2 + (i % 250)}`, ready: true }
            : undefined
          if (status !== undefined) yield* Effect.orDie(LocalCluster.writeStatus(cluster.admin, { ...object, status }))
        }
      }), { concurrency: 8, discard: true })

    const selector = `${Names.MANAGED_BY}=${Names.MANAGER},${Names.POD}`
    const listed = yield* Effect.forEach(
      [Manifests.Kinds.Deployment, Manifests.Kinds.Service, Manifests.Kinds.OvnEip],
      (kind) => Effect.map(kube.snapshot(kind, selector), (s) => s.items)
    )
    const all = listed.flat()
    const slim = all.map((o) => ({ ...o, metadata: { ...o.metadata, managedFields: undefined } }))

    const before = heap()
    const started = performance.now()
    const orchestrator = yield* Layer.build(
      KubeOrchestrator.layer().pipe(Layer.provide(KubeApi.layerConfig(cluster.tenet)))
    ).pipe(
      Effect.map((context) => context.unsafeMap.get(Orchestrator.Orchestrator.key) as Orchestrator.OrchestratorShape)
    )
    const statuses = yield* orchestrator.podStatuses(vpc.tenant_id)
    const syncMillis = performance.now() - started
    if (statuses.size !== pods) throw new Error(`the informers hold ${statuses.size} pods, not ${pods}`)
    const after = heap()

    const latencies: Array<number> = []
    const sample = [...statuses.keys()].slice(0, 20)
    for (const [i, podId] of sample.entries()) {
      const deployment = listed[0]!.find((d) => d.metadata?.labels?.[Names.POD] === podId)!
      const ready = i % 2 === 0 ? 1 : 2
      const live = yield* Effect.orDie(
        LocalCluster.read(
          cluster.admin,
          "apps/v1",
          "Deployment",
          deployment.metadata!.name!,
          deployment.metadata!.namespace
        )
      )
      const written = performance.now()
      yield* Effect.orDie(LocalCluster.writeStatus(cluster.admin, {
        ...live,
        status: { ...live.status, readyReplicas: ready, availableReplicas: ready }
      }))
      for (;;) {
        const runtime = yield* orchestrator.podStatus(podId)
        if (runtime._tag === "Some" && runtime.value.ready_replicas === ready) break
        yield* Effect.sleep("1 millis")
      }
      latencies.push(performance.now() - written)
    }
    return {
      pods,
      heapBytes: after - before,
      listedBytes: jsonBytes(all),
      listedSlimBytes: jsonBytes(slim),
      syncMillis,
      statusLatencyMillis: latencies
    } satisfies InformerMemory
  }).pipe(Effect.scoped, Effect.provide(LocalCluster.layer({ crds })))

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

export const toMarkdown = (m: InformerMemory) =>
  [
    `The Kubernetes orchestrator's informers (Deployments, Services, OvnEips of every pod) holding`,
    `${m.pods.toLocaleString("en")} pods listed from kube-apiserver v1.20.2 (\`bench/Informers.ts\`):`,
    "",
    "| what | per 1,000 pods |",
    "|---|---|",
    `| heap the caches take (after a full GC) | ${mb((m.heapBytes * 1000) / m.pods)} |`,
    `| the objects as listed (JSON) | ${mb((m.listedBytes * 1000) / m.pods)} |`,
    `| the same without \`managedFields\` | ${mb((m.listedSlimBytes * 1000) / m.pods)} |`,
    `| first list until every pod's status is served | ${(m.syncMillis * 1000 / m.pods).toFixed(0)} ms |`,
    "",
    `A Deployment's status written in the cluster shows in the pod's status (from the watch) after`,
    `${quantile(m.statusLatencyMillis, 0.5).toFixed(1)} ms at the median and ${
      Math.max(...m.statusLatencyMillis).toFixed(1)
    } ms at worst, over ${m.statusLatencyMillis.length} changes (the status write's own round trip included).`
  ].join("\n")

const quantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!available()) {
    console.log("no kube-apiserver (build it with .ci/kube-apiserver), etcd or Kube-OVN CRDs: nothing measured")
  } else {
    console.log(toMarkdown(await Effect.runPromise(run(Number(process.env.TENET_INFORMER_PODS ?? 1000)))))
  }
}
