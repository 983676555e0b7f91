/**
 * A real Kubernetes control plane on loopback for tests: etcd and kube-apiserver as plain
 * processes on free ports, RBAC on, Kube-OVN's CRDs installed, and Tenet authenticated as a
 * plain user (`tenet`) bound only to the rules it is given (default: `Permissions.rules`, what
 * the shipped ClusterRole grants). Both stop, by PID, when the scope closes.
 *
 * A bare API server runs no controllers, so `controllers` plays the part of the ones Tenet reads
 * back from: Kube-OVN (an OvnEip's address, a replica's address on its subnet), the Deployment
 * and HPA controllers (replicas as Pods, status and scale), the garbage collector (replicas of
 * a Deployment that is gone), and the namespace and PVC-protection finalizers. There are no
 * nodes, so the ServiceAccount admission plugin, which waits for a controller's token, is off.
 *
 * Binaries: `TENET_KUBE_APISERVER` (else `.ci/kube-apiserver`'s cache) and `etcd` on the PATH.
 */
import type { KubernetesObject } from "@kubernetes/client-node"
import { KubeConfig, KubernetesObjectApi } from "@kubernetes/client-node"
import { Net } from "@tenet/core"
import type { Duration } from "effect"
import {
  Cause,
  Context,
  Data,
  Effect,
  ExecutionStrategy,
  Exit,
  Layer,
  ManagedRuntime,
  Option,
  Schedule,
  Scope
} from "effect"
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Https from "node:https"
import * as Net_ from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Yaml from "yaml"
import * as KubeApi from "../KubeApi.js"
import * as KubeOrchestrator from "../KubeOrchestrator.js"
import * as Permissions from "../Permissions.js"

export class LocalClusterError extends Data.TaggedError("LocalClusterError")<{ readonly detail: string }> {
  override get message() {
    return this.detail
  }
}

export const VERSION = "v1.20.2"

/** Where `.ci/kube-apiserver` keeps the binary it builds. */
const cachedBinary = () =>
  Path.join(process.env.TENET_KUBE_CACHE ?? Path.join(Os.homedir(), ".cache", "tenet"), `kube-apiserver-${VERSION}`)

const onPath = (name: string) =>
  (process.env.PATH ?? "").split(Path.delimiter).map((dir) => Path.join(dir, name)).find((p) => Fs.existsSync(p))

/** The binaries, when this machine has both. */
export const binaries = (): Option.Option<{ readonly apiserver: string; readonly etcd: string }> => {
  const apiserver = process.env.TENET_KUBE_APISERVER ?? cachedBinary()
  const etcd = process.env.TENET_ETCD ?? onPath("etcd")
  return Fs.existsSync(apiserver) && etcd !== undefined ? Option.some({ apiserver, etcd }) : Option.none()
}

/**
 * Whether the real-server suites can run here: both binaries, and Kube-OVN's CRDs at `crds` when
 * given. CI sets `TENET_REQUIRE_KUBE=1`, so they never skip there (a missing part fails them).
 */
export const available = (crds?: string) =>
  (Option.isSome(binaries()) && (crds === undefined || Fs.existsSync(crds))) || process.env.TENET_REQUIRE_KUBE === "1"

export interface Options {
  /** The rules Tenet's user holds (default: `Permissions.rules`). */
  readonly rules?: ReadonlyArray<Permissions.PolicyRule>
  /** Kube-OVN's CRD bundle (YAML); default `TENET_KUBE_OVN_CRDS`. */
  readonly crds?: string
}

export interface LocalCluster {
  readonly server: string
  /** Everything allowed (`system:masters`): for tests to look and to play the controllers. */
  readonly admin: KubeConfig
  /** Tenet's user, holding only the rules it was given. */
  readonly tenet: KubeConfig
  /** A kubeconfig file for the user, for `KUBECONFIG` or kubectl. */
  readonly kubeconfigFile: (user: "admin" | "tenet") => string
  /** CRDs the API server refused (1.20 lacks `x-kubernetes-validations`), by name. */
  readonly refusedCrds: ReadonlyArray<string>
  /**
   * Sums of `apiserver_request_total` by verb and resource (`LIST deployments`, `PATCH subnets`),
   * from the API server's own metrics: requests for resources only (not discovery or health).
   */
  readonly requestCounts: Effect.Effect<Readonly<Record<string, number>>, LocalClusterError>
  /**
   * Stops (once a round in flight has ended) and starts again the controllers `layer` runs, so
   * a measurement sees Tenet's calls alone.
   */
  readonly pauseControllers: (paused: boolean) => Effect.Effect<void>
  /**
   * A disaster behind Tenet's back: the API server and etcd stopped, etcd's data removed, both
   * started again on the same address and prepared as at start (RBAC, CRDs; with `layer`, the
   * external network). Every object Tenet made is gone; the API server answers again.
   */
  readonly wipe: Effect.Effect<void, LocalClusterError>
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net_.createServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net_.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

const get = (url: string, token: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = Https.get(url, { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false }, (res) => {
      let body = ""
      res.on("data", (c) => (body += c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on("error", reject)
    req.setTimeout(2000, () => req.destroy(new Error("timeout")))
  })

const configFor = (server: string, user: string, token: string) => {
  const config = new KubeConfig()
  config.loadFromOptions({
    clusters: [{ name: "local", server, skipTLSVerify: true }],
    users: [{ name: user, token }],
    contexts: [{ name: "local", cluster: "local", user }],
    currentContext: "local"
  })
  return config
}

/**
 * Runs the command under a shell that stops it when told to (SIGTERM, then SIGKILL after 8 s)
 * and kills it when the process that started it is gone: a test runner killed mid-run leaves no
 * etcd or API server behind.
 */
const WATCHDOG = `"$@" & child=$!
trap 'kill $child 2>/dev/null
  for i in 1 2 3 4 5 6 7 8; do kill -0 $child 2>/dev/null || exit 0; sleep 1; done
  kill -9 $child 2>/dev/null; exit 0' TERM
while kill -0 $PPID 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 1; done
kill -9 $child 2>/dev/null`

/** Starts a process that is killed (SIGTERM, then SIGKILL) when the scope closes. */
const spawn = (name: string, command: string, args: ReadonlyArray<string>, log: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const out = Fs.openSync(log, "a")
      const child = ChildProcess.spawn("/bin/sh", ["-c", WATCHDOG, "sh", command, ...args], {
        stdio: ["ignore", out, out]
      })
      Fs.closeSync(out)
      return child
    }),
    (child) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        // The shell escalates to SIGKILL itself; this is for a shell that does not answer.
        const kill = setTimeout(() => child.kill("SIGKILL"), 15_000)
        child.once("exit", () => {
          clearTimeout(kill)
          resume(Effect.void)
        })
        child.kill("SIGTERM")
      })
  ).pipe(Effect.withSpan(`LocalCluster.${name}`))

const tail = (file: string) => {
  try {
    return Fs.readFileSync(file, "utf8").split("\n").slice(-15).join("\n")
  } catch {
    return ""
  }
}

const awaitReady = (url: string, token: string, log: string, child: ChildProcess.ChildProcess) =>
  Effect.tryPromise({
    try: async () => {
      if (child.exitCode !== null) throw new Error("exited")
      const answer = await get(url, token)
      if (answer.status !== 200) throw new Error(`${answer.status} ${answer.body}`)
    },
    catch: (e) => new LocalClusterError({ detail: String(e) })
  }).pipe(
    Effect.retry({
      while: () => child.exitCode === null,
      schedule: Schedule.spaced("200 millis").pipe(Schedule.upTo("60 seconds"))
    }),
    Effect.mapError(() => new LocalClusterError({ detail: `not ready at ${url}:\n${tail(log)}` }))
  )

const promise = <A>(detail: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (e) => new LocalClusterError({ detail: `${detail}: ${(e as { body?: unknown }).body ?? e}` })
  })

/** The ClusterRole and binding that give Tenet's user exactly the rules. */
const rbac = (rules: ReadonlyArray<Permissions.PolicyRule>): ReadonlyArray<KubernetesObject> => [
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "tenet" },
    rules: rules.map((r) => ({ apiGroups: [...r.apiGroups], resources: [...r.resources], verbs: [...r.verbs] }))
  } as KubernetesObject,
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "tenet" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "tenet" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "tenet" }]
  } as KubernetesObject
]

/** Starts etcd and kube-apiserver and prepares them; both stop when the scope closes. */
export const start = (options: Options = {}) =>
  Effect.gen(function*() {
    const bins = yield* Option.match(binaries(), {
      onNone: () =>
        Effect.fail(
          new LocalClusterError({
            detail: `no kube-apiserver at ${cachedBinary()} (build it with .ci/kube-apiserver) or no etcd on the PATH`
          })
        ),
      onSome: Effect.succeed
    })
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "tenet-kube-"))),
      (d) => Effect.sync(() => Fs.rmSync(d, { recursive: true, force: true }))
    )
    const [etcdPort, peerPort, apiPort] = yield* Effect.promise(() => Promise.all([freePort(), freePort(), freePort()]))
    const adminToken = Crypto.randomBytes(16).toString("hex")
    const tenetToken = Crypto.randomBytes(16).toString("hex")
    Fs.writeFileSync(Path.join(dir, "tokens.csv"), `${adminToken},admin,1,system:masters\n${tenetToken},tenet,2\n`)
    const keys = Crypto.generateKeyPairSync("rsa", { modulusLength: 2048 })
    Fs.writeFileSync(Path.join(dir, "sa.key"), keys.privateKey.export({ type: "pkcs1", format: "pem" }))
    Fs.writeFileSync(Path.join(dir, "sa.pub"), keys.publicKey.export({ type: "spki", format: "pem" }))

    const etcdUrl = `http://127.0.0.1:${etcdPort}`
    const server = `https://127.0.0.1:${apiPort}`
    const admin = configFor(server, "admin", adminToken)
    const tenet = configFor(server, "tenet", tenetToken)
    const refusedCrds: Array<string> = []

    /** etcd and the API server, in `scope`, on an empty or existing data directory; prepared. */
    const boot = (scope: Scope.Scope) =>
      Effect.gen(function*() {
        const etcdLog = Path.join(dir, "etcd.log")
        const etcd = yield* spawn("etcd", bins.etcd, [
          "--name=local",
          `--data-dir=${Path.join(dir, "etcd")}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-cluster=local=http://127.0.0.1:${peerPort}`
        ], etcdLog)
        yield* Effect.tryPromise({
          try: async () => {
            if (etcd.exitCode !== null) throw new Error("exited")
            const res = await fetch(`${etcdUrl}/health`)
            if (!res.ok) throw new Error(String(res.status))
          },
          catch: () => new LocalClusterError({ detail: `etcd not ready:\n${tail(etcdLog)}` })
        }).pipe(Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("30 seconds"))))

        const apiLog = Path.join(dir, "kube-apiserver.log")
        const apiserver = yield* spawn("kube-apiserver", bins.apiserver, [
          `--etcd-servers=${etcdUrl}`,
          "--bind-address=127.0.0.1",
          "--advertise-address=127.0.0.1",
          `--secure-port=${apiPort}`,
          "--insecure-port=0",
          `--cert-dir=${Path.join(dir, "certs")}`,
          `--token-auth-file=${Path.join(dir, "tokens.csv")}`,
          "--authorization-mode=RBAC",
          `--service-account-key-file=${Path.join(dir, "sa.pub")}`,
          `--service-account-signing-key-file=${Path.join(dir, "sa.key")}`,
          "--service-account-issuer=https://kubernetes.default.svc",
          "--service-cluster-ip-range=10.96.0.0/16",
          "--enable-priority-and-fairness=false",
          "--disable-admission-plugins=ServiceAccount",
          "--profiling=false",
          "--logtostderr=true"
        ], apiLog)
        yield* awaitReady(`${server}/readyz`, adminToken, apiLog, apiserver)

        const api = KubernetesObjectApi.makeApiClient(admin)
        for (const object of rbac(options.rules ?? Permissions.rules)) {
          yield* promise(`create ${object.kind}`, () => api.create(object))
        }
        const crds = options.crds ?? process.env.TENET_KUBE_OVN_CRDS
        if (crds !== undefined) {
          for (const crd of documents(Fs.readFileSync(crds, "utf8"))) {
            const created = yield* Effect.either(promise(`create ${crd.metadata?.name}`, () => api.create(crd)))
            if (created._tag === "Left" && !refusedCrds.includes(crd.metadata?.name ?? "")) {
              refusedCrds.push(crd.metadata?.name ?? "")
            }
          }
          // Established: the group's kinds are served (discovery lists them).
          yield* promise("discover kubeovn.io/v1", async () => {
            const answer = await get(`${server}/apis/kubeovn.io/v1`, adminToken)
            const kinds = ["vpcs", "subnets", "ovn-eips", "ovn-snat-rules", "ovn-dnat-rules"]
            if (!kinds.every((k) => answer.body.includes(`"${k}"`))) throw new Error("not yet")
          }).pipe(Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("20 seconds"))))
        }
        // The authorizer sees the binding: Tenet's user may do what its first rule grants.
        const first = (options.rules ?? Permissions.rules)[0]
        if (first !== undefined) {
          yield* promise("authorize Tenet's user", async () => {
            const review = await api.create({
              apiVersion: "authorization.k8s.io/v1",
              kind: "SubjectAccessReview",
              spec: {
                user: "tenet",
                resourceAttributes: { verb: first.verbs[0], group: first.apiGroups[0], resource: first.resources[0] }
              }
            } as KubernetesObject) as Obj
            if (review.status?.allowed !== true) throw new Error("not yet")
          }).pipe(Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("20 seconds"))))
        }
      }).pipe(Scope.extend(scope))

    const outer = yield* Effect.scope
    let processes = yield* Scope.fork(outer, ExecutionStrategy.sequential)
    yield* boot(processes)
    const wipe = Effect.gen(function*() {
      yield* Scope.close(processes, Exit.void)
      Fs.rmSync(Path.join(dir, "etcd"), { recursive: true, force: true })
      processes = yield* Scope.fork(outer, ExecutionStrategy.sequential)
      yield* boot(processes)
    }).pipe(Effect.withSpan("LocalCluster.wipe"))

    const kubeconfigFile = (user: "admin" | "tenet") => {
      const file = Path.join(dir, `${user}.kubeconfig`)
      if (!Fs.existsSync(file)) Fs.writeFileSync(file, (user === "admin" ? admin : tenet).exportConfig())
      return file
    }
    const requestCounts = promise("read metrics", () => get(`${server}/metrics`, adminToken)).pipe(
      Effect.map(({ body }) => {
        const sums: Record<string, number> = {}
        for (const line of body.split("\n")) {
          if (!line.startsWith("apiserver_request_total{") || line.includes("resource=\"\"")) continue
          const verb = /verb="([A-Z]+)"/.exec(line)?.[1] ?? "?"
          const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? "?"
          const key = `${verb} ${resource}`
          sums[key] = (sums[key] ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1))
        }
        return sums
      })
    )
    const gate: Gate = { paused: false, inRound: false }
    const pauseControllers = (paused: boolean) =>
      Effect.suspend(() => {
        gate.paused = paused
        return Effect.repeat(Effect.sleep("10 millis"), { while: () => paused && gate.inRound })
      })
    return {
      server,
      admin,
      tenet,
      kubeconfigFile,
      refusedCrds,
      requestCounts,
      pauseControllers,
      wipe,
      gate
    } satisfies LocalCluster & { gate: Gate }
  })

type Obj = KubernetesObject & Record<string, any>

/** The objects of a multi-document YAML file, empty documents left out. */
const documents = (text: string): ReadonlyArray<KubernetesObject> =>
  Yaml.parseAllDocuments(text).flatMap((doc) => {
    const object = doc.toJS() as KubernetesObject | null
    return object === null || object === undefined ? [] : [object]
  })

/**
 * The controllers a bare API server lacks, as far as Tenet reads them back, as one round over
 * the cluster: run it on a schedule (`controllers`).
 */
export const reconcileOnce = (admin: KubeConfig) => {
  const api = KubernetesObjectApi.makeApiClient(admin)
  const list = (apiVersion: string, kind: string) =>
    promise(`list ${kind}`, () => api.list(apiVersion, kind)).pipe(
      // Items of built-in kinds come without their apiVersion and kind.
      Effect.map((l) => l.items.map((item) => ({ ...item, apiVersion, kind }) as Obj)),
      Effect.catchAll(() => Effect.succeed([] as Array<Obj>))
    )
  const replace = (object: Obj, subresource: "status" | "finalize" | "" = "") =>
    promise(`update ${object.kind} ${object.metadata?.name}`, () => {
      const path = objectPath(admin, object) + (subresource === "" ? "" : `/${subresource}`)
      return request(admin, "PUT", path, object)
    }).pipe(Effect.ignore)
  return Effect.gen(function*() {
    // Kube-OVN: an OvnEip gets the first free address of its external subnet.
    const subnets = yield* list("kubeovn.io/v1", "Subnet")
    const eips = yield* list("kubeovn.io/v1", "OvnEip")
    const taken = new Set(eips.flatMap((e) => e.status?.v4Ip ? [`${e.spec?.externalSubnet}/${e.status.v4Ip}`] : []))
    for (const eip of eips) {
      if (eip.status?.v4Ip || eip.metadata?.deletionTimestamp) continue
      const subnet = subnets.find((s) => s.metadata?.name === eip.spec?.externalSubnet)
      if (subnet === undefined) continue
      const cidr = Net.cidrOf(subnet.spec.cidrBlock)
      for (let a = Net.networkOf(cidr) + 1; a < Net.broadcastOf(cidr); a++) {
        const ip = Net.formatIpv4(a)
        if (ip === subnet.spec.gateway || taken.has(`${subnet.metadata?.name}/${ip}`)) continue
        taken.add(`${subnet.metadata?.name}/${ip}`)
        yield* replace({ ...eip, status: { v4Ip: ip, ready: true } }, "status")
        break
      }
    }
    // The HPA controller keeps its target's replicas within bounds; the Deployment controller
    // reports them ready (there are no nodes, so no Pods).
    const deployments = yield* list("apps/v1", "Deployment")
    for (const version of ["autoscaling/v2", "autoscaling/v2beta2"]) {
      for (const hpa of yield* list(version, "HorizontalPodAutoscaler")) {
        const target = deployments.find((d) =>
          d.metadata?.namespace === hpa.metadata?.namespace && d.metadata?.name === hpa.spec.scaleTargetRef.name
        )
        const current: number = target?.spec.replicas ?? 1
        const bounded = Math.min(hpa.spec.maxReplicas, Math.max(hpa.spec.minReplicas ?? 1, current))
        if (target !== undefined && bounded !== current) {
          yield* replace({ ...target, spec: { ...target.spec, replicas: bounded } })
          delete target.metadata!.resourceVersion
        }
      }
    }
    yield* replicas(admin, yield* list("apps/v1", "Deployment"), yield* list("v1", "Pod"), subnets)
    for (const d of yield* list("apps/v1", "Deployment")) {
      const want: number = d.spec.replicas ?? 1
      // A generation observed keeps the status reported for it (a test may write one of its own).
      if (d.status?.observedGeneration === d.metadata?.generation) continue
      yield* replace({
        ...d,
        status: {
          observedGeneration: d.metadata?.generation,
          replicas: want,
          readyReplicas: want,
          availableReplicas: want,
          updatedReplicas: want
        }
      }, "status")
    }
    // The PVC-protection controller releases claims no pod uses (there are none).
    for (const pvc of yield* list("v1", "PersistentVolumeClaim")) {
      if (pvc.metadata?.deletionTimestamp && (pvc.metadata.finalizers ?? []).length > 0) {
        yield* replace({ ...pvc, metadata: { ...pvc.metadata, finalizers: [] } })
      }
    }
    // The namespace controller empties a terminating namespace, then finalizes it.
    for (const ns of yield* list("v1", "Namespace")) {
      if (!ns.metadata?.deletionTimestamp) continue
      yield* replace({ ...ns, spec: { finalizers: [] } }, "finalize")
    }
  })
}

/** An object as the admin reads it (none when absent). */
export const read = (admin: KubeConfig, apiVersion: string, kind: string, name: string, namespace?: string) =>
  promise(`read ${kind} ${name}`, () =>
    KubernetesObjectApi.makeApiClient(admin).read({
      apiVersion,
      kind,
      metadata: namespace === undefined ? { name } : { name, namespace }
    })).pipe(Effect.map((o) => o as Obj))

/** Writes an object's status as its controller would (the `status` subresource, as the admin). */
export const writeStatus = (admin: KubeConfig, object: KubernetesObject & { readonly status?: unknown }) =>
  promise(
    `write the status of ${object.kind} ${object.metadata?.name}`,
    () => request(admin, "PUT", objectPath(admin, object as Obj) + "/status", object)
  )

/** The objects of a kind with the labels, as the admin lists them. */
export const list = (admin: KubeConfig, apiVersion: string, kind: string, labels: Readonly<Record<string, string>>) =>
  promise(`list ${kind}`, () =>
    KubernetesObjectApi.makeApiClient(admin).list(
      apiVersion,
      kind,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(",")
    )).pipe(Effect.map((l) => l.items as ReadonlyArray<Obj>))

/** Creates an object as the admin would (`kubectl create`), behind Tenet's back. */
export const create = (admin: KubeConfig, object: KubernetesObject) =>
  promise(`create ${object.kind} ${object.metadata?.name}`, () => {
    const path = objectPath(admin, object as Obj)
    return request(admin, "POST", path.slice(0, path.lastIndexOf("/")), object)
  })

/** Deletes an object as the admin would (`kubectl delete`), behind Tenet's back. */
export const remove = (admin: KubeConfig, object: KubernetesObject) =>
  promise(
    `delete ${object.kind} ${object.metadata?.name}`,
    () => request(admin, "DELETE", objectPath(admin, object as Obj), {})
  )

/**
 * Changes an object as `manager` (a JSON merge patch, the way `kubectl edit` or `kubectl scale`
 * writes), behind Tenet's back: the cluster records `manager` as the owner of what it changed.
 */
export const mergePatch = (admin: KubeConfig, object: KubernetesObject, manager: string) =>
  promise(
    `patch ${object.kind} ${object.metadata?.name}`,
    () =>
      request(
        admin,
        "PATCH",
        `${objectPath(admin, object as Obj)}?fieldManager=${encodeURIComponent(manager)}`,
        object,
        "application/merge-patch+json"
      )
  )

/** The annotation that ties a replica to its Deployment, as a ReplicaSet's ownerReference would. */
const OWNER = "local-cluster.tenet.dev/deployment"

/**
 * The ReplicaSet controller, the scheduler and Kube-OVN's IPAM in one: each Deployment has as
 * many Pods as replicas, each Running with an address of its subnet; the garbage collector's
 * part: Pods whose Deployment is gone go too.
 */
const replicas = (
  admin: KubeConfig,
  deployments: ReadonlyArray<Obj>,
  pods: ReadonlyArray<Obj>,
  subnets: ReadonlyArray<Obj>
) =>
  Effect.gen(function*() {
    const api = KubernetesObjectApi.makeApiClient(admin)
    const switchOf = (annotations: Record<string, string> | undefined) =>
      annotations?.["ovn.kubernetes.io/logical_switch"]
    // Addresses are taken per subnet: tests' subnets may share a block in different VPCs.
    const used = new Set(
      pods.flatMap((p) => p.status?.podIP ? [`${switchOf(p.metadata?.annotations)}/${p.status.podIP}`] : [])
    )
    const ownerOf = (p: Obj) => `${p.metadata?.namespace}/${p.metadata?.annotations?.[OWNER]}`
    const live = new Set(
      deployments.filter((d) => !d.metadata?.deletionTimestamp).map((d) =>
        `${d.metadata?.namespace}/${d.metadata?.name}`
      )
    )
    const remove = (p: Obj) =>
      promise("delete pod", () => api.delete({ apiVersion: "v1", kind: "Pod", metadata: p.metadata! })).pipe(
        Effect.ignore
      )
    for (const p of pods) {
      if (p.metadata?.annotations?.[OWNER] !== undefined && !live.has(ownerOf(p))) yield* remove(p)
    }
    for (const d of deployments) {
      if (d.metadata?.deletionTimestamp) continue
      const mine = pods.filter((p) => ownerOf(p) === `${d.metadata?.namespace}/${d.metadata?.name}`)
      const want: number = d.spec.replicas ?? 1
      for (const extra of mine.slice(want)) yield* remove(extra)
      const template = d.spec.template
      for (let i = mine.length; i < want; i++) {
        yield* promise("create pod", () =>
          api.create({
            apiVersion: "v1",
            kind: "Pod",
            metadata: {
              name: `${d.metadata?.name}-${Crypto.randomBytes(3).toString("hex")}`,
              namespace: d.metadata?.namespace,
              labels: template.metadata?.labels,
              annotations: { ...template.metadata?.annotations, [OWNER]: d.metadata?.name }
            },
            spec: template.spec
          } as KubernetesObject)).pipe(Effect.ignore)
      }
      const switchName = switchOf(template.metadata?.annotations)
      const subnet = subnets.find((s) => s.metadata?.name === switchName)
      for (const p of mine.slice(0, want)) {
        if (p.status?.podIP || subnet === undefined) continue
        const cidr = Net.cidrOf(subnet.spec.cidrBlock)
        for (let a = Net.networkOf(cidr) + 1; a < Net.broadcastOf(cidr); a++) {
          const ip = Net.formatIpv4(a)
          if (ip === subnet.spec.gateway || used.has(`${switchName}/${ip}`)) continue
          used.add(`${switchName}/${ip}`)
          yield* promise("pod status", () =>
            request(admin, "PUT", objectPath(admin, { ...p, apiVersion: "v1", kind: "Pod" }) + "/status", {
              ...p,
              apiVersion: "v1",
              kind: "Pod",
              status: { phase: "Running", podIP: ip, podIPs: [{ ip }] }
            })).pipe(Effect.ignore)
          break
        }
      }
    }
  })

/** Whether the controllers are paused, and whether a round of them is running. */
interface Gate {
  paused: boolean
  inRound: boolean
}

/**
 * The cluster's revision: etcd's, which every write advances (a list read from etcd answers
 * with it). Undefined when it cannot be read.
 */
const revision = (admin: KubeConfig) =>
  Effect.promise(() =>
    get(`${admin.getCurrentCluster()!.server}/api/v1/namespaces?limit=1`, admin.getCurrentUser()!.token!).then(
      // An answer that is not a list (the server busy, say) is no revision: the round runs.
      (answer) => (JSON.parse(answer.body) as Obj).metadata?.resourceVersion as string | undefined
    ).catch(() => undefined)
  )

/**
 * `reconcileOnce` every `every`, in the background of the scope, unless the gate is paused. A
 * round runs only when the cluster has changed since the last one began (its revision read
 * first): an idle cluster costs one small read per tick, not a list of every kind.
 */
export const controllers = (
  admin: KubeConfig,
  every: Duration.DurationInput = "100 millis",
  gate: Gate = { paused: false, inRound: false }
) => {
  let reconciledAt: string | undefined
  return Effect.forkScoped(
    Effect.repeat(
      // One round that goes wrong must not stop the ones after it.
      Effect.suspend(() => {
        if (gate.paused) return Effect.void
        gate.inRound = true
        return Effect.flatMap(revision(admin), (now) => {
          if (now !== undefined && now === reconciledAt) return Effect.void
          return Effect.tap(reconcileOnce(admin), () => Effect.sync(() => (reconciledAt = now)))
        }).pipe(Effect.ensuring(Effect.sync(() => (gate.inRound = false))))
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.sync(() => console.warn("LocalCluster controllers:", Cause.pretty(cause)))
        )
      ),
      Schedule.spaced(every)
    )
  )
}

const objectPath = (config: KubeConfig, object: Obj) => {
  const [group, version] = object.apiVersion!.includes("/") ? object.apiVersion!.split("/") : ["", object.apiVersion]
  const plural = pluralOf(object.kind!)
  const base = group === "" ? `/api/${version}` : `/apis/${group}/${version}`
  const ns = object.metadata?.namespace === undefined ? "" : `/namespaces/${object.metadata.namespace}`
  return `${config.getCurrentCluster()!.server}${base}${ns}/${plural}/${object.metadata!.name}`
}

const pluralOf = (kind: string) =>
  ({
    OvnEip: "ovn-eips",
    Namespace: "namespaces",
    Deployment: "deployments",
    Pod: "pods",
    PersistentVolumeClaim: "persistentvolumeclaims"
  } as Record<string, string>)[kind] ?? `${kind.toLowerCase()}s`

const request = (
  config: KubeConfig,
  method: string,
  url: string,
  body: unknown,
  contentType = "application/json"
) =>
  new Promise<void>((resolve, reject) => {
    const user = config.getCurrentUser()!
    const req = Https.request(url, {
      method,
      rejectUnauthorized: false,
      headers: { authorization: `Bearer ${user.token}`, "content-type": contentType }
    }, (res) => {
      let text = ""
      res.on("data", (c) => (text += c))
      res.on(
        "end",
        () => (res.statusCode ?? 500) < 300 ? resolve() : reject(Object.assign(new Error(text), { body: text }))
      )
    })
    req.on("error", reject)
    req.end(JSON.stringify(body))
  })

/**
 * The provider network external IPs come from, as a cluster operator would have made it: a /24,
 * since the tests of a file share the cluster.
 */
export const externalSubnet = {
  apiVersion: "kubeovn.io/v1",
  kind: "Subnet",
  metadata: { name: "ovn-vpc-external-network", labels: {} },
  spec: { cidrBlock: "203.0.113.0/24", gateway: "203.0.113.1", protocol: "IPv4" }
}

export class Cluster extends Context.Tag("@tenet/adapters-k8s/testing/LocalCluster")<Cluster, LocalCluster>() {}

/**
 * A cluster for a test file: started, its controllers running, the external network made; it
 * stops when the layer is released.
 */
export const layer = (options: Options = {}) =>
  Layer.scoped(
    Cluster,
    Effect.gen(function*() {
      const cluster = yield* start(options)
      const api = KubernetesObjectApi.makeApiClient(cluster.admin)
      const external = promise("create the external subnet", () => api.create(externalSubnet))
      yield* external
      yield* controllers(cluster.admin, "100 millis", cluster.gate)
      return { ...cluster, wipe: Effect.zipRight(cluster.wipe, external) }
    })
  )

/**
 * A running cluster as Tenet's user, from the kubeconfig text of `tenet` (`exportConfig()`):
 * for test files that share one cluster started elsewhere (a test runner's global setup).
 */
export const asTenet = (kubeconfig: string): Pick<LocalCluster, "tenet"> => {
  const tenet = new KubeConfig()
  tenet.loadFromString(kubeconfig)
  return { tenet }
}

/** Tenet's orchestrator on the cluster as Tenet's user, with its own informers. */
export const orchestrator = (cluster: Pick<LocalCluster, "tenet">, options: KubeOrchestrator.Options = {}) =>
  KubeOrchestrator.layer({ externalIpWait: { attempts: 50, spacingMillis: 100 }, ...options }).pipe(
    Layer.provide(KubeApi.layerConfig(cluster.tenet))
  )

/**
 * One cluster for a test suite, without a test framework: `start` it before the suite's tests
 * (it takes seconds), `get` it in them, `stop` it after them; or `ensure` it where first needed.
 */
export const forSuite = (options: Options = {}) => {
  const runtime = ManagedRuntime.make(layer(options))
  let started: LocalCluster | undefined
  let starting: Promise<LocalCluster> | undefined
  /** Starts it the first time; every later call has the same cluster. */
  const ensure = () => {
    starting ??= runtime.runPromise(Cluster).then((cluster) => (started = cluster))
    return starting
  }
  return {
    start: async () => {
      await ensure()
    },
    ensure,
    stop: () => runtime.dispose(),
    get: (): LocalCluster => {
      if (started === undefined) throw new Error("the cluster has not started")
      return started
    }
  }
}
