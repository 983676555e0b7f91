/**
 * Tenet on a real Kubernetes API server (kube-apiserver v1.20.2 and etcd, RBAC on, Kube-OVN's
 * CRDs; `LocalCluster` plays the controllers), as a plain user holding only the shipped
 * ClusterRole: what a tenant does through the API becomes cluster objects, reading pods costs
 * the API server nothing (the informers answer), a controller's status shows within a second,
 * and two replicas of the built server share one cluster without fighting over it.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Manifests, Names } from "@tenet/adapters-k8s"
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import { PgDatabase } from "@tenet/adapters-postgres"
import { NodeVault } from "@tenet/core/node"
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, it as plain } from "vitest"
import { TestServer } from "../src/index.js"
import { adminLogin, httpsIn, kubeOvnCrds, raw, setProviderConfig, sshFromSet, workspace } from "./Harness.js"
import { call, until } from "./Loopback.js"

/** Waits for an answer that only a request can give. */
const untilAnswered = async (check: () => Promise<boolean>, what: string, ms: number) => {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
import { spawnServer } from "./ServerProcess.js"

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")
const crds = kubeOvnCrds
const databaseUrl = process.env.TENET_TEST_DATABASE_URL

type Counts = Readonly<Record<string, number>>

/** Requests the API server served between two readings of its counters, by `VERB resource`, of the verbs. */
const served = (before: Counts, after: Counts, verbs: ReadonlyArray<string>) =>
  Object.fromEntries(
    Object.entries(after).flatMap(([key, n]) => {
      const delta = n - (before[key] ?? 0)
      return verbs.includes(key.split(" ")[0]!) && delta > 0 ? [[key, delta]] : []
    })
  )
const total = (counts: Counts) => Object.values(counts).reduce((a, b) => a + b, 0)
const READS = ["GET", "LIST"]
const WRITES = ["POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"]
/** What Tenet writes: the API server's own bookkeeping (leases, endpoints) is not Tenet's. */
const TENETS: ReadonlySet<string> = new Set(Object.values(Manifests.Kinds).map((k) => k.resource))
const tenets = (counts: Counts) =>
  Object.fromEntries(Object.entries(counts).filter(([k]) => TENETS.has(k.split(" ")[1]!)))

describe.skipIf(!LocalCluster.available(crds))("Tenet on kube-apiserver v1.20.2", () => {
  const suite = LocalCluster.forSuite({ crds })
  beforeAll(suite.start, 120_000)
  afterAll(suite.stop, 60_000)
  const read = (apiVersion: string, kind: string, name: string, namespace?: string) =>
    Effect.orDie(LocalCluster.read(suite.get().admin, apiVersion, kind, name, namespace))

  const server = Layer.suspend(() =>
    TestServer.layer({
      orchestrator: LocalCluster.orchestrator(suite.get())
    })
  )

  layer(server, { excludeTestServices: true, timeout: "60 seconds" })("one server", (it) => {
    /** A tenant with a VPC, a subnet and a running pod of three replicas, through the API. */
    const runningPod = Effect.gen(function*() {
      yield* setProviderConfig()
      const w = yield* workspace
      const created = yield* w.createPod({ replica_count: 3 })
      expect(created.status, created.text).toBe(200)
      const pod = created.body as Record<string, any>
      return { ...w, pod }
    })

    it.effect("a tenant's network, rule and pod become cluster objects; the pod runs with the Service's VIP", () =>
      Effect.gen(function*() {
        const { headers, pod, subnet, vpc } = yield* runningPod
        const rule = yield* raw("POST", "/security-rules", {
          headers,
          body: httpsIn(vpc.id)
        })
        expect(rule.status, rule.text).toBe(201)
        const kubeSubnet = yield* read("kubeovn.io/v1", "Subnet", Names.subnet(subnet.id))
        expect(kubeSubnet.spec).toMatchObject({ vpc: Names.vpc(vpc.id), cidrBlock: "10.0.1.0/24" })
        expect(JSON.stringify(kubeSubnet.spec.acls)).toContain("tcp.dst == 443")
        const service = yield* read("v1", "Service", Names.workload(pod.id), Names.namespace(vpc.id))
        const shown = yield* Effect.repeat(
          Effect.map(raw("GET", "/pods", { headers }), (r) => (r.body as Array<any>).find((p) => p.id === pod.id)),
          { until: (p) => p?.status.phase === "running" }
        )
        expect(shown.status).toMatchObject({
          phase: "running",
          ready_replicas: 3,
          vip: service.spec.clusterIP,
          stale_since: null
        })
      }))

    it.effect("an address set's edit re-renders the ACLs of every VPC whose rules name it: one ACL, the set's literal", () =>
      Effect.gen(function*() {
        const w = yield* workspace
        const other = yield* w.newVpc()
        const otherSubnet = (yield* raw("POST", "/subnets", {
          headers: w.headers,
          body: { ...w.creds, vpc_id: other.id, name: "db", cidr: "10.0.2.0/24", gateway_ip: "10.0.2.1" }
        })).body as Record<string, any>
        const set = (yield* raw("POST", "/address-sets", {
          headers: w.headers,
          body: { name: "offices", entries: [{ cidr: "198.51.100.0/24" }, { cidr: "192.0.2.0/25" }] }
        })).body as Record<string, any>
        for (const vpcId of [w.vpc.id, other.id]) {
          const made = yield* raw("POST", "/security-rules", { headers: w.headers, body: sshFromSet(vpcId, set.id) })
          expect(made.status, made.text).toBe(201)
        }
        const edited = yield* raw("PATCH", `/address-sets/${set.id}`, {
          headers: w.headers,
          body: { entries: [{ cidr: "198.51.100.0/24" }, { cidr: "203.0.113.0/24" }] }
        })
        expect(edited.status, edited.text).toBe(200)
        for (const subnetId of [w.subnet.id, otherSubnet.id]) {
          const acls = (yield* read("kubeovn.io/v1", "Subnet", Names.subnet(subnetId))).spec.acls as Array<
            { match: string }
          >
          expect(acls.filter((a) => a.match.includes("tcp.dst == 22")).map((a) => a.match)).toEqual([
            expect.stringContaining("ip4.src == {198.51.100.0/24, 203.0.113.0/24}")
          ])
        }
      }))

    it.effect("a VPC delete a guardrail refuses leaves every object in place, in the store and the cluster", () =>
      Effect.gen(function*() {
        const { headers, newVpc, pod, subnet, vpc } = yield* runningPod
        // Another VPC whose SSH from private space is denied by a rule naming `vpc` first: once
        // `vpc` is gone, that rule matches nothing and the allow below would break the guardrail.
        const guarded = yield* newVpc()
        const listed = (yield* raw("GET", `/security-rules?vpc_id=${guarded.id}`, { headers })).body
        for (const r of (listed as Record<string, any>).rules) {
          yield* raw("DELETE", `/security-rules/${r.id}`, { headers })
        }
        const ssh = { direction: "ingress", protocol: "tcp", ports: "22", target_type: "vpc" }
        for (
          const body of [
            { name: "no ssh from it", action: "deny", priority: 10, remote_type: "vpc", remote_vpc_id: vpc.id },
            {
              name: "ssh from its block",
              action: "allow",
              priority: 20,
              remote_type: "cidr",
              remote_cidr: "10.0.1.0/24"
            }
          ]
        ) {
          const made = yield* raw("POST", "/security-rules", { headers, body: { ...ssh, ...body, vpc_id: guarded.id } })
          expect(made.status, made.text).toBe(201)
        }
        const guardrail = yield* raw("POST", `/vpcs/${guarded.id}/guardrails`, {
          headers,
          body: {
            name: "no ssh from private space",
            description: null,
            require: "deny",
            direction: "ingress",
            protocol: "tcp",
            ports: "22",
            remote_cidr: "10.0.0.0/8",
            local: null
          }
        })
        expect(guardrail.status, guardrail.text).toBe(201)

        const refused = yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers })
        expect(refused.status, refused.text).toBe(409)
        expect((refused.body as Record<string, any>).violations[0]).toMatchObject({ vpc_id: guarded.id })
        // Nothing was touched: the cluster's objects, the store's rows, the pod still running.
        yield* read("kubeovn.io/v1", "Vpc", Names.vpc(vpc.id))
        yield* read("kubeovn.io/v1", "Subnet", Names.subnet(subnet.id))
        yield* read("v1", "Namespace", Names.namespace(vpc.id))
        yield* read("v1", "Service", Names.workload(pod.id), Names.namespace(vpc.id))
        yield* read("apps/v1", "Deployment", Names.workload(pod.id), Names.namespace(vpc.id))
        expect(((yield* raw("GET", "/vpcs", { headers })).body as Array<any>).map((v) => v.id)).toContain(vpc.id)
        const shown = yield* Effect.repeat(
          Effect.map(raw("GET", "/pods", { headers }), (r) => (r.body as Array<any>).find((p) => p.id === pod.id)),
          { until: (p) => p?.status.phase === "running" }
        )
        expect(shown.status.phase).toBe("running")
      }))

    it.effect(
      "100 reads of pods and 100 of the tenant cost the API server at most 5 GET or LIST requests",
      () =>
        Effect.gen(function*() {
          const { headers, tenant } = yield* runningPod
          const asAdmin = { "x-admin-token": (yield* adminLogin).api_token }
          const cluster = suite.get()
          yield* cluster.pauseControllers(true)
          yield* Effect.addFinalizer(() => cluster.pauseControllers(false))
          const before = yield* cluster.requestCounts
          const started = Date.now()
          for (let i = 0; i < 100; i++) {
            expect((yield* raw("GET", "/pods", { headers })).status).toBe(200)
            expect((yield* raw("GET", `/tenants/${tenant.id}`, { headers: asAdmin })).status).toBe(200)
          }
          const elapsed = Date.now() - started
          const after = yield* cluster.requestCounts
          // The same time idle: what the cluster costs anyway (informers' watches, the server's own).
          yield* Effect.sleep(elapsed)
          const idle = yield* cluster.requestCounts
          const cost = total(served(before, after, READS)) - total(served(after, idle, READS))
          expect(cost, JSON.stringify(served(before, after, READS))).toBeLessThanOrEqual(5)
        }).pipe(Effect.scoped),
      { timeout: 30_000 }
    )

    it.effect("a Deployment's status changed in the cluster shows in GET /pods, from the watch", () =>
      Effect.gen(function*() {
        const { headers, pod, vpc } = yield* runningPod
        yield* Effect.repeat(
          Effect.map(raw("GET", "/pods", { headers }), (r) => (r.body as Array<any>).find((p) => p.id === pod.id)),
          { until: (p) => p?.status.phase === "running" }
        )
        const live = yield* read("apps/v1", "Deployment", Names.workload(pod.id), Names.namespace(vpc.id))
        const cluster = suite.get()
        yield* cluster.pauseControllers(true)
        yield* Effect.addFinalizer(() => cluster.pauseControllers(false))
        const before = yield* Effect.orDie(cluster.requestCounts)
        yield* Effect.orDie(LocalCluster.writeStatus(cluster.admin, {
          ...live,
          status: { ...live.status, readyReplicas: 2, availableReplicas: 2 }
        }))
        const shown = yield* Effect.repeat(
          Effect.map(raw("GET", "/pods", { headers }), (r) => (r.body as Array<any>).find((p) => p.id === pod.id)),
          { until: (p) => p?.status.ready_replicas === 2 }
        )
        // From the watch: reading GET /pods until it showed cost the API server no read.
        expect(served(before, yield* Effect.orDie(cluster.requestCounts), READS)).toEqual({})
        expect(shown.status).toMatchObject({ phase: "degraded", ready_replicas: 2, desired_replicas: 3 })
      }).pipe(Effect.scoped))
  })

  plain(
    "the rendered deployment (deploy/kubernetes/base) passes the API server's own checks: kubectl apply --dry-run=server",
    () => {
      const kubeconfig = suite.get().kubeconfigFile("admin")
      const rendered = execFileSync("kubectl", ["kustomize", resolve(repo, "deploy/kubernetes/base")], {
        encoding: "utf8"
      })
      // The namespace for real first: a dry run creates nothing for the objects in it to land in.
      execFileSync("kubectl", ["--kubeconfig", kubeconfig, "create", "namespace", "tenet-system"], { encoding: "utf8" })
      const answer = execFileSync(
        "kubectl",
        ["--kubeconfig", kubeconfig, "apply", "--dry-run=server", "-f", "-"],
        { encoding: "utf8", input: rendered }
      )
      // LocalCluster made a ClusterRole and binding named tenet already: those are "configured".
      expect(
        answer.trim().split("\n").map((line) => line.replace(/ (created|configured) \(server dry run\)$/, "")).sort()
      )
        .toEqual([
          "clusterrole.rbac.authorization.k8s.io/tenet",
          "clusterrolebinding.rbac.authorization.k8s.io/tenet",
          "configmap/tenet",
          "deployment.apps/tenet",
          "namespace/tenet-system",
          "service/tenet",
          "serviceaccount/tenet"
        ])
    },
    30_000
  )

  it.live.skipIf(databaseUrl === undefined)(
    "two replicas of the built server on one database and one cluster both serve, idle for 20 s (a reconciler pass a second, a controller resync every 4 s) neither writes to the cluster, and the leader killed is replaced",
    () =>
      Effect.gen(function*() {
        const cluster = suite.get()
        const name = `tenet_test_kube_${Date.now().toString(36)}`
        const target = new URL(databaseUrl!)
        target.pathname = `/${name}`
        const client = yield* Layer.build(PgDatabase.layerClient({ url: databaseUrl!, maxConnections: 1 }))
        const sql = yield* Effect.provide(SqlClient.SqlClient, client)
        yield* sql.unsafe(`CREATE DATABASE ${name}`)
        yield* Effect.addFinalizer(() => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.orDie))
        yield* Effect.promise(async () => {
          const env = {
            TENET_STORE: "postgres",
            TENET_DATABASE_URL: target.toString(),
            TENET_ENCRYPTION_KEY: NodeVault.generateKey(),
            TENET_ADMIN_PASSWORD: "replicas-admin-password",
            TENET_ORCHESTRATOR: "kubernetes",
            KUBECONFIG: cluster.kubeconfigFile("tenet"),
            // Passes and resyncs often while idle: each must find nothing to do.
            TENET_RECONCILE_INTERVAL: "1 second",
            TENET_CONTROLLER_RESYNC: "4 seconds"
          }
          const first = await spawnServer(env)
          await until(() => first.output().includes("listening"), "the first replica to listen", 60_000)
          const second = await spawnServer(env)
          await until(() => second.output().includes("listening"), "the second replica to listen", 60_000)

          const token = (await call(first.port, "POST", "/admin/login", {
            username: "admin",
            password: "replicas-admin-password"
          })).body.api_token as string
          const asAdmin = { "x-admin-token": token }
          expect(
            (await call(second.port, "POST", "/provider-config", {
              external_subnet_cidr: "203.0.113.0/24",
              external_subnet_gateway: "203.0.113.1",
              peering_subnet_cidr: "100.64.0.0/16"
            }, asAdmin)).status
          ).toBe(200)
          expect(
            (await call(
              first.port,
              "POST",
              "/tenants",
              { name: "replicas", password: "correct horse battery" },
              asAdmin
            )).status
          ).toBe(201)
          const session = (await call(second.port, "POST", "/tenants/login", {
            name: "replicas",
            password: "correct horse battery"
          })).body
          const headers = { "x-auth-token": session.api_token as string }
          const creds = { token: session.api_token, tenant_id: session.id }
          const vpc =
            (await call(first.port, "POST", "/vpcs", { ...creds, name: "shared", enable_internet: true }, headers)).body
          const subnet = (await call(second.port, "POST", "/subnets", {
            ...creds,
            vpc_id: vpc.id,
            name: "apps",
            cidr: "10.0.1.0/24",
            gateway_ip: "10.0.1.1"
          }, headers)).body
          const pod = (await call(first.port, "POST", "/pods", {
            ...creds,
            vpc_id: vpc.id,
            subnet_id: subnet.id,
            name: "api",
            container_image: "nginx:1.27",
            replica_count: 2
          }, headers)).body
          expect(pod.id).toBeDefined()
          // Both replicas see the pod run, from their own informers.
          for (const port of [first.port, second.port]) {
            await untilAnswered(
              async () => {
                const listed = (await call(port, "GET", "/pods", undefined, headers)).body as Array<any>
                return listed.find((p) => p.id === pod.id)?.status.phase === "running"
              },
              `the pod to run on :${port}`,
              20_000
            )
          }

          await Effect.runPromise(cluster.pauseControllers(true))
          try {
            const before = await Effect.runPromise(cluster.requestCounts)
            await new Promise((r) => setTimeout(r, 20_000))
            const after = await Effect.runPromise(cluster.requestCounts)
            expect(tenets(served(before, after, WRITES))).toEqual({})
            for (const port of [first.port, second.port]) {
              const listed = (await call(port, "GET", "/pods", undefined, headers)).body as Array<any>
              expect(listed.find((p) => p.id === pod.id)?.status).toMatchObject({ phase: "running", stale_since: null })
            }
          } finally {
            await Effect.runPromise(cluster.pauseControllers(false))
          }

          // One of them leads the controller. Its subnet is deleted behind its back and it is
          // killed at once, before or during the repair: the other takes over within seconds
          // and puts the subnet back (its resync finds it missing).
          const leading = "leading the cluster controller"
          await until(() => first.output().includes(leading) || second.output().includes(leading), "a leader", 10_000)
          expect(first.output().includes(leading) && second.output().includes(leading)).toBe(false)
          const [leader, follower] = first.output().includes(leading) ? [first, second] : [second, first]
          // On Kubernetes the leader holds a Lease in Tenet's namespace (client-go's leader election).
          const lease = () =>
            Effect.runPromise(
              LocalCluster.read(cluster.admin, "coordination.k8s.io/v1", "Lease", "tenet.controller", "tenet-system")
            )
              .then((l) => (l as { spec: { holderIdentity: string; leaseTransitions?: number } }).spec)
          const held = await lease()
          expect(held.holderIdentity).not.toBe("")
          const subnetObject = {
            apiVersion: "kubeovn.io/v1",
            kind: "Subnet",
            metadata: { name: Names.subnet(subnet.id) }
          }
          await Effect.runPromise(LocalCluster.remove(cluster.admin, subnetObject))
          leader.child.kill("SIGKILL")
          await until(() => follower.output().includes(leading), "the other replica to lead", 15_000)
          const taken = await lease()
          expect(taken.holderIdentity).not.toBe(held.holderIdentity)
          expect(taken.leaseTransitions ?? 0).toBeGreaterThan(held.leaseTransitions ?? 0)
          await untilAnswered(
            () =>
              Effect.runPromise(
                Effect.match(LocalCluster.read(cluster.admin, "kubeovn.io/v1", "Subnet", Names.subnet(subnet.id)), {
                  onFailure: () => false,
                  onSuccess: (s) => s.metadata?.deletionTimestamp === undefined
                })
              ),
            "the subnet back",
            20_000
          )
        })
      }).pipe(Effect.scoped),
    240_000
  )
})
