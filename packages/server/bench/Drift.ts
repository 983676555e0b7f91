/**
 * How fast the controller puts back what is changed behind Tenet's back, on a real API server
 * (`LocalCluster`: kube-apiserver v1.20.2 and etcd, Kube-OVN's CRDs, its stand-in controllers):
 * Tenet (on the memory store) runs a tenant with a VPC, a subnet, a rule and pods of 2 replicas;
 * the cluster's admin then makes each change of the issue's table, `rounds` times, and the time
 * from the change to the object back as Tenet wants it is taken by polling the admin's reads
 * every 20 ms; then 100 objects (50 pods' Deployments and Services) are deleted at once; then
 * Tenet's writes to the cluster are counted over an idle period. Needs the binaries of
 * `.ci/kube-apiserver`; without them it says so and measures nothing.
 *
 *   node --conditions=@tenet/source --import tsx packages/server/bench/Drift.ts
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Manifests, Names } from "@tenet/adapters-k8s"
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import type { Ids } from "@tenet/core"
import { Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { TestServer } from "../src/index.js"

const crds = process.env.TENET_KUBE_OVN_CRDS ??
  fileURLToPath(new URL("../../../../shared/vendor/kube-ovn/kube-ovn-crd.yaml", import.meta.url))

export const available = () => LocalCluster.available(crds) && existsSync(crds)

export interface DriftRepairs {
  /** Per change of the table, milliseconds from the change to the repair seen by the admin. */
  readonly rows: ReadonlyArray<{ readonly change: string; readonly millis: ReadonlyArray<number> }>
  /** 100 objects deleted at once: until the last is back. */
  readonly bulk: { readonly objects: number; readonly millis: number }
  /** Tenet's writes to the cluster over an idle period. */
  readonly idle: { readonly seconds: number; readonly writes: number }
}

/** What the benchmark reads of an answer: ids, names, tokens. */
type Answer = Readonly<Record<string, string>>
/** An object as the admin reads it. */
type Live = Effect.Effect.Success<ReturnType<typeof LocalCluster.read>>

const call = (method: "GET" | "POST", path: string, headers: Record<string, string>, body?: unknown) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(headers))
    if (body !== undefined) request = yield* HttpClientRequest.bodyJson(request, body)
    const response = yield* http.execute(request)
    const json = (yield* response.json) as Answer
    if (response.status >= 300) return yield* Effect.die(new Error(`${method} ${path}: ${JSON.stringify(json)}`))
    return json
  }).pipe(Effect.scoped, Effect.orDie)

const WRITES = new Set(["POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"])
const TENETS: ReadonlySet<string> = new Set(Object.values(Manifests.Kinds).map((k) => k.resource))

export const run = (rounds = 5, bulkPods = 50, idleSeconds = 30) =>
  Effect.gen(function*() {
    const cluster = yield* LocalCluster.Cluster
    const admin = cluster.admin
    const context = yield* Layer.build(TestServer.layer({ orchestrator: LocalCluster.orchestrator(cluster) }))
    const inServer = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient>) => Effect.provide(effect, context)

    const adminToken = (yield* inServer(call("POST", "/admin/login", {}, {
      username: TestServer.ADMIN_USERNAME,
      password: TestServer.ADMIN_PASSWORD
    }))).api_token!
    yield* inServer(call("POST", "/provider-config", { "x-admin-token": adminToken }, {
      external_subnet_cidr: "203.0.113.0/24",
      external_subnet_gateway: "203.0.113.1",
      peering_subnet_cidr: "100.64.0.0/16"
    }))
    const tenant = yield* inServer(call("POST", "/tenants", { "x-admin-token": adminToken }, {
      name: "drift-bench",
      password: "correct horse battery",
      description: null
    }))
    const session = yield* inServer(call("POST", "/tenants/login", {}, {
      name: tenant.name,
      password: "correct horse battery"
    }))
    const headers = { "x-auth-token": session.api_token! }
    const creds = { token: session.api_token, tenant_id: tenant.id }
    const vpc = yield* inServer(call("POST", "/vpcs", headers, { ...creds, name: "bench", enable_internet: true }))
    const subnet = yield* inServer(call("POST", "/subnets", headers, {
      ...creds,
      vpc_id: vpc.id,
      name: "apps",
      cidr: "10.0.1.0/24",
      gateway_ip: "10.0.1.1"
    }))
    yield* inServer(call("POST", "/security-rules", headers, {
      vpc_id: vpc.id,
      name: "https in",
      direction: "ingress",
      action: "allow",
      priority: 100,
      protocol: "tcp",
      ports: "443",
      remote_type: "cidr",
      remote_cidr: "0.0.0.0/0",
      target_type: "vpc"
    }))
    const newPod = (name: string) =>
      inServer(call("POST", "/pods", headers, {
        ...creds,
        vpc_id: vpc.id,
        subnet_id: subnet.id,
        name,
        container_image: "nginx:1.27",
        replica_count: 2
      }))
    const pod = yield* newPod("web")
    const namespace = Names.namespace(vpc.id as Ids.VpcId)

    type Ref = {
      readonly apiVersion: string
      readonly kind: string
      readonly name: string
      readonly namespace?: string
    }
    const readObject = (ref: Ref) =>
      Effect.map(
        Effect.either(LocalCluster.read(admin, ref.apiVersion, ref.kind, ref.name, ref.namespace)),
        (read) => read._tag === "Right" && read.right.metadata?.deletionTimestamp === undefined ? read.right : undefined
      )
    const asObject = (ref: Ref) => ({
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: ref.namespace === undefined ? { name: ref.name } : { name: ref.name, namespace: ref.namespace }
    })
    /** Milliseconds from `change` done to `repaired` holding of what the admin reads. */
    const timeRepair = (ref: Ref, change: Effect.Effect<unknown>, repaired: (o: Live | undefined) => boolean) =>
      Effect.gen(function*() {
        yield* change
        const started = performance.now()
        for (;;) {
          if (repaired(yield* readObject(ref))) return performance.now() - started
          if (performance.now() - started > 60_000) return yield* Effect.die(new Error(`${ref.kind} never repaired`))
          yield* Effect.sleep("20 millis")
        }
      })
    const subnetRef = { apiVersion: "kubeovn.io/v1", kind: "Subnet", name: Names.subnet(subnet.id as Ids.SubnetId) }
    const vpcRef = { apiVersion: "kubeovn.io/v1", kind: "Vpc", name: Names.vpc(vpc.id as Ids.VpcId) }
    const deploymentRef = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: Names.workload(pod.id as Ids.PodId),
      namespace
    }
    const serviceRef = { apiVersion: "v1", kind: "Service", name: Names.workload(pod.id as Ids.PodId), namespace }
    const remove = (ref: Ref) => Effect.orDie(LocalCluster.remove(admin, asObject(ref)))
    const patch = (ref: Ref, fields: Readonly<Record<string, unknown>>, manager: string) =>
      Effect.orDie(LocalCluster.mergePatch(admin, { ...asObject(ref), ...fields }, manager))
    const hasAcls = (o: Live | undefined) => JSON.stringify(o?.spec?.acls ?? []).includes("443")
    const present = (o: Live | undefined) => o !== undefined

    const table: ReadonlyArray<readonly [string, Ref, Effect.Effect<unknown>, (o: Live | undefined) => boolean]> = [
      ["the VPC's Kube-OVN Subnet deleted", subnetRef, remove(subnetRef), hasAcls],
      ["the Subnet's ACLs emptied", subnetRef, patch(subnetRef, { spec: { acls: [] } }, "kubectl-edit"), hasAcls],
      ["the pod's Deployment deleted", deploymentRef, remove(deploymentRef), present],
      [
        "the Deployment scaled to 0",
        deploymentRef,
        patch(deploymentRef, { spec: { replicas: 0 } }, "kubectl-scale"),
        (o) => o?.spec?.replicas === 2
      ],
      ["the pod's Service deleted", serviceRef, remove(serviceRef), present],
      ["the Kube-OVN Vpc deleted", vpcRef, remove(vpcRef), present]
    ]
    const rows: Array<{ change: string; millis: Array<number> }> = []
    for (const [change, ref, make, repaired] of table) {
      const millis: Array<number> = []
      for (let i = 0; i < rounds; i++) {
        millis.push(yield* timeRepair(ref, make, repaired))
        // Let the rest of the owner's convergence (and the cluster's controllers) settle.
        yield* Effect.sleep("500 millis")
      }
      rows.push({ change, millis })
    }

    const pods = yield* Effect.forEach(
      Array.from({ length: bulkPods }, (_, i) => `bulk-${i}`),
      newPod,
      { concurrency: 4 }
    )
    const bulkRefs = pods.flatMap((p): ReadonlyArray<Ref> => [
      { apiVersion: "apps/v1", kind: "Deployment", name: Names.workload(p.id as Ids.PodId), namespace },
      { apiVersion: "v1", kind: "Service", name: Names.workload(p.id as Ids.PodId), namespace }
    ])
    // As fast as the admin's client sends them (a refused send is sent again).
    yield* Effect.forEach(
      bulkRefs,
      (ref) => Effect.retry(LocalCluster.remove(admin, asObject(ref)), { times: 3 }).pipe(Effect.orDie),
      { concurrency: 4, discard: true }
    )
    const bulkStarted = performance.now()
    for (const ref of bulkRefs) {
      while (!present(yield* readObject(ref))) {
        if (performance.now() - bulkStarted > 120_000) return yield* Effect.die(new Error("bulk never repaired"))
        yield* Effect.sleep("20 millis")
      }
    }
    const bulkMillis = performance.now() - bulkStarted

    // Idle: what settles first is not idle; then only watches should reach the API server.
    yield* Effect.sleep("5 seconds")
    const before = yield* cluster.requestCounts
    yield* Effect.sleep(`${idleSeconds} seconds`)
    const after = yield* cluster.requestCounts
    const writes = Object.entries(after).reduce((n, [key, count]) => {
      const [verb, resource] = key.split(" ")
      return WRITES.has(verb!) && TENETS.has(resource!) ? n + count - (before[key] ?? 0) : n
    }, 0)
    return {
      rows,
      bulk: { objects: bulkRefs.length, millis: bulkMillis },
      idle: { seconds: idleSeconds, writes }
    } satisfies DriftRepairs
  }).pipe(Effect.scoped, Effect.provide(LocalCluster.layer({ crds })))

const quantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
}
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`

export const toMarkdown = (d: DriftRepairs) =>
  [
    "Each change made by the cluster's admin behind Tenet's back on kube-apiserver v1.20.2",
    `(\`bench/Drift.ts\`, ${d.rows[0]?.millis.length ?? 0} times each), from the change to the object back`,
    "as Tenet wants it (the admin polling every 20 ms): watch-driven, target 5 s at p99.",
    "",
    "| change | median | worst | target |",
    "|---|---:|---:|---|",
    ...d.rows.map((r) =>
      `| ${r.change} | ${seconds(quantile(r.millis, 0.5))} | ${seconds(Math.max(...r.millis))} | ${
        Math.max(...r.millis) <= 5000 ? "met" : "missed"
      } (5 s) |`
    ),
    `| ${d.bulk.objects} objects (Deployments and Services of ${
      d.bulk.objects / 2
    } pods) deleted at once, until the last is back | | ${seconds(d.bulk.millis)} | ${
      d.bulk.millis <= 10_000 ? "met" : "missed"
    } (10 s) |`,
    "",
    `Idle for ${d.idle.seconds} s afterwards, Tenet wrote ${d.idle.writes} times to the cluster (target 0).`
  ].join("\n")

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!available()) {
    console.log("no kube-apiserver (build it with .ci/kube-apiserver), etcd or Kube-OVN CRDs: nothing measured")
  } else {
    console.log(toMarkdown(await Effect.runPromise(run(Number(process.env.TENET_DRIFT_ROUNDS ?? 5)))))
  }
}
