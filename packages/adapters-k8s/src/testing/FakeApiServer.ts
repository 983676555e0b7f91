/**
 * A local stand-in for the Kubernetes API server that records every request and keeps the
 * objects applied to it, with just enough of the controllers Tenet reads back from: Services
 * get a cluster IP, OvnEips an address of their external subnet, Deployments ready replicas
 * (as Pods with addresses of their subnet), HPAs scale their Deployment into bounds.
 *
 * It authorizes every request as RBAC would, against `Permissions.rules` unless told otherwise,
 * so a call the shipped ClusterRole does not allow fails here as it would in a cluster
 * (discovery is open, as the default `system:discovery` role makes it). Objects may be checked
 * on apply with a `validate` of your own, as a strict API server checks them against schemas.
 *
 * Every change gets a resourceVersion and is streamed to watches (from a version, with a 410
 * for one older than the history it keeps, see `compact`); `dropWatches` breaks them, as a
 * network fault would, and `restore` plays the server back on another etcd. Discovery answers as the Kubernetes version it is told to play (1.29 by
 * default: `autoscaling/v2`).
 *
 * It checks request shape and what Tenet does with the answers, not cluster behaviour: the
 * real-server suites (`LocalCluster`) check that.
 */
import { KubeConfig } from "@kubernetes/client-node"
import { Net } from "@tenet/core"
import { Context, Effect, Layer } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as KubeApi from "../KubeApi.js"
import * as KubeOrchestrator from "../KubeOrchestrator.js"
import * as Permissions from "../Permissions.js"

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  readonly contentType: string | undefined
  readonly body: unknown
  /** What the request asked to do, as RBAC sees it; absent for discovery. */
  readonly attributes: Permissions.Attributes | undefined
  /** Whether RBAC allowed it. */
  readonly allowed: boolean
}

export interface Options {
  /** The RBAC rules the caller holds (default: `Permissions.rules`, what the shipped ClusterRole grants). */
  readonly rules?: ReadonlyArray<Permissions.PolicyRule>
  /** What is wrong with an object on apply, by its schema; an empty list accepts it. */
  readonly validate?: (
    object: Record<string, unknown> & { readonly apiVersion: string; readonly kind: string }
  ) => ReadonlyArray<string>
  /** The Kubernetes version it plays, for `/version` (default `v1.29.0`). */
  readonly version?: string
  /** The versions of the `autoscaling` group it serves (default `["v2", "v1"]`, as 1.29 does). */
  readonly autoscaling?: ReadonlyArray<string>
}

type Obj = Record<string, any>

const builtInResources: Record<string, ReadonlyArray<{ kind: string; name: string; namespaced: boolean }>> = {
  "v1": [
    { kind: "Namespace", name: "namespaces", namespaced: false },
    { kind: "Secret", name: "secrets", namespaced: true },
    { kind: "Service", name: "services", namespaced: true },
    { kind: "PersistentVolumeClaim", name: "persistentvolumeclaims", namespaced: true },
    { kind: "Pod", name: "pods", namespaced: true }
  ],
  "apps/v1": [{ kind: "Deployment", name: "deployments", namespaced: true }],
  // The Kube-OVN kinds Tenet writes, as the CRDs name them (all cluster-scoped).
  "kubeovn.io/v1": [
    { kind: "Vpc", name: "vpcs", namespaced: false },
    { kind: "Subnet", name: "subnets", namespaced: false },
    { kind: "OvnEip", name: "ovn-eips", namespaced: false },
    { kind: "OvnSnatRule", name: "ovn-snat-rules", namespaced: false },
    { kind: "OvnDnatRule", name: "ovn-dnat-rules", namespaced: false }
  ]
}

export interface FakeApiServer {
  readonly url: string
  readonly kubeConfig: KubeConfig
  readonly requests: Array<RecordedRequest>
  /** Objects by `kind/namespace/name`. */
  readonly objects: Map<string, Obj>
  /** Makes the next `count` requests whose method, path and query match fail with `status`. */
  readonly failNext: (
    count: number,
    status: number,
    match?: (method: string, path: string, query: URLSearchParams) => boolean
  ) => void
  readonly put: (object: Obj) => void
  /** Changes a stored object in place as a controller would (a new resourceVersion, an event). */
  readonly update: (kind: string, namespace: string | undefined, name: string, change: (object: Obj) => void) => void
  readonly ofKind: (kind: string) => ReadonlyArray<Obj>
  /** Ends every open watch abruptly. */
  readonly dropWatches: () => void
  /** Forgets the event history: a watch from any version before now gets 410 Gone. */
  readonly compact: () => void
  /**
   * Plays an API server back on another etcd (wiped, or an old backup): every object and the
   * history gone without an event, versions counting on from `revision` (past the old ones or
   * behind them), open watches broken.
   */
  readonly restore: (revision: number) => void
  /** Watches open right now. */
  readonly openWatches: () => number
}

const keyOf = (kind: string, namespace: string | undefined, name: string) => `${kind}/${namespace ?? ""}/${name}`

/** Equality (`k=v`), inequality (`k!=v`) and existence (`k`, `!k`) terms, as label selectors have them. */
const matchesSelector = (labels: Record<string, string> | undefined, selector: string | undefined) =>
  selector === undefined || selector === "" ||
  selector.split(",").every((term) => {
    if (term.includes("!=")) {
      const [k, v] = term.split("!=")
      return labels?.[k!] !== v
    }
    if (term.includes("=")) {
      const [k, v] = term.split("=")
      return labels?.[k!] === v
    }
    return term.startsWith("!") ? labels?.[term.slice(1)] === undefined : labels?.[term] !== undefined
  })

const status = (code: number, message: string) => ({
  kind: "Status",
  apiVersion: "v1",
  status: "Failure",
  message,
  code
})

/** The verb RBAC checks for a request on a resource (`name` absent for a collection). */
const verbOf = (method: string, name: string | undefined, watching: boolean) => {
  switch (method) {
    case "GET":
      return name === undefined ? (watching ? "watch" : "list") : "get"
    case "PATCH":
      return "patch"
    case "DELETE":
      return name === undefined ? "deletecollection" : "delete"
    case "POST":
      return "create"
    case "PUT":
      return "update"
    default:
      return method.toLowerCase()
  }
}

const forbidden = (attributes: Permissions.Attributes) =>
  status(
    403,
    `${attributes.resource}${attributes.apiGroup === "" ? "" : `.${attributes.apiGroup}`} is forbidden: ` +
      `User "system:serviceaccount:tenet-system:tenet" cannot ${attributes.verb} resource "${attributes.resource}" ` +
      `in API group "${attributes.apiGroup}"`
  )

/** Starts the fake; it stops when the scope closes. */
export const make = (options: Options = {}) =>
  Effect.acquireRelease(
    Effect.async<{ server: Http.Server; fake: FakeApiServer }>((resume) => {
      const rules = options.rules ?? Permissions.rules
      const validate = options.validate ?? (() => [])
      const autoscaling = options.autoscaling ?? ["v2", "v1"]
      const resources: Record<string, ReadonlyArray<{ kind: string; name: string; namespaced: boolean }>> = {
        ...builtInResources,
        ...Object.fromEntries(autoscaling.map((v) => [
          `autoscaling/${v}`,
          [{ kind: "HorizontalPodAutoscaler", name: "horizontalpodautoscalers", namespaced: true }]
        ]))
      }
      const byPlural = new Map<string, { kind: string; namespaced: boolean; groupVersion: string }>()
      for (const [groupVersion, list] of Object.entries(resources)) {
        for (const r of list) {
          byPlural.set(`${groupVersion}/${r.name}`, { kind: r.kind, namespaced: r.namespaced, groupVersion })
        }
      }
      /** The history watches replay from, and the watches open now. */
      let revision = 1
      let history: Array<{ revision: number; type: string; object: Obj }> = []
      let compactedAt = 0
      const watches = new Set<{ kind: string; selector: string | undefined; res: Http.ServerResponse }>()
      const emit = (type: string, object: Obj) => {
        const event = { revision, type, object: structuredClone(object) }
        history.push(event)
        for (const w of watches) {
          if (w.kind === object.kind && matchesSelector(object.metadata.labels, w.selector)) {
            w.res.write(JSON.stringify({ type, object: event.object }) + "\n")
          }
        }
      }
      /** Objects by key: every set stamps a new version and streams the change to watches. */
      const written = new Map<string, string>()
      const objects = new (class extends Map<string, Obj> {
        override set(key: string, object: Obj) {
          const existed = this.has(key)
          const { resourceVersion: _, ...metadata } = object.metadata ?? {}
          const content = JSON.stringify({ ...object, metadata })
          // Writing what is already there changes nothing, its version included.
          if (existed && written.get(key) === content) {
            object.metadata.resourceVersion = this.get(key)!.metadata.resourceVersion
            return super.set(key, object)
          }
          written.set(key, content)
          object.metadata.resourceVersion = String(++revision)
          super.set(key, object)
          emit(existed ? "MODIFIED" : "ADDED", object)
          return this
        }
        override delete(key: string) {
          const found = this.get(key)
          if (found === undefined) return false
          written.delete(key)
          super.delete(key)
          found.metadata.resourceVersion = String(++revision)
          emit("DELETED", found)
          return true
        }
      })()
      const requests: Array<RecordedRequest> = []
      let failures: Array<{
        status: number
        match: (method: string, path: string, query: URLSearchParams) => boolean
      }> = []
      let nextUid = 1
      let nextVip = Net.ipv4Of("10.96.0.10")
      const allocated = new Set<string>()

      const ofKind = (kind: string) => [...objects.values()].filter((o) => o.kind === kind)

      /** The first free address of a Kube-OVN subnet, past its network and gateway. */
      const allocateIn = (subnetName: string | undefined): string | undefined => {
        const subnet = objects.get(keyOf("Subnet", undefined, subnetName ?? ""))
        if (subnet === undefined) return undefined
        const cidr = Net.cidrOf(subnet.spec.cidrBlock)
        for (let a = Net.networkOf(cidr) + 1; a < Net.broadcastOf(cidr); a++) {
          const ip = Net.formatIpv4(a)
          const key = `${subnetName}/${ip}`
          if (ip !== subnet.spec.gateway && !allocated.has(key)) {
            allocated.add(key)
            return ip
          }
        }
        return undefined
      }

      /** The Deployment controller: as many ready Pods as replicas, each with an address. */
      const reconcileDeployment = (d: Obj) => {
        const selector = d.spec.selector.matchLabels as Record<string, string>
        const ns = d.metadata.namespace
        const pods = ofKind("Pod").filter((p) =>
          p.metadata.namespace === ns && Object.entries(selector).every(([k, v]) => p.metadata.labels?.[k] === v)
        )
        const want: number = d.spec.replicas ?? 1
        for (const extra of pods.slice(want)) objects.delete(keyOf("Pod", ns, extra.metadata.name))
        for (let i = pods.length; i < want; i++) {
          const name = `${d.metadata.name}-${(nextUid++).toString(36)}`
          const subnet = d.spec.template.metadata?.annotations?.["ovn.kubernetes.io/logical_switch"]
          const ip = allocateIn(subnet)
          objects.set(keyOf("Pod", ns, name), {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name, namespace: ns, labels: { ...d.spec.template.metadata.labels } },
            status: ip === undefined ? { phase: "Pending" } : { phase: "Running", podIP: ip, podIPs: [{ ip }] }
          })
        }
        d.status = { replicas: want, readyReplicas: want, availableReplicas: want }
        if (objects.has(keyOf("Deployment", ns, d.metadata.name))) {
          objects.set(keyOf("Deployment", ns, d.metadata.name), d)
        }
      }

      const scaleByHpa = (hpa: Obj) => {
        const target = objects.get(keyOf("Deployment", hpa.metadata.namespace, hpa.spec.scaleTargetRef.name))
        if (target === undefined) {
          return
        }
        const current: number = target.spec.replicas ?? 1
        target.spec.replicas = Math.min(hpa.spec.maxReplicas, Math.max(hpa.spec.minReplicas ?? 1, current))
        reconcileDeployment(target)
      }

      const applyObject = (kind: string, namespace: string | undefined, name: string, body: Obj): Obj => {
        const key = keyOf(kind, namespace, name)
        const previous = objects.get(key)
        const metadata = {
          ...body.metadata,
          ...(namespace === undefined ? {} : { namespace }),
          uid: previous?.metadata.uid ?? `uid-${nextUid++}`
        }
        const next: Obj = { ...structuredClone(body), metadata }
        if (previous?.status !== undefined) next.status = previous.status
        if (kind === "Service") {
          next.spec.clusterIP = previous?.spec.clusterIP ?? Net.formatIpv4(nextVip++)
        }
        if (kind === "Deployment" && next.spec.replicas === undefined && previous?.spec.replicas !== undefined) {
          // Another manager (the HPA) owns replicas; apply leaves the field to it.
          next.spec.replicas = previous.spec.replicas
        }
        if (kind === "OvnEip" && previous === undefined) {
          const ip = allocateIn(next.spec.externalSubnet)
          if (ip !== undefined) next.status = { v4Ip: ip, ready: true }
        }
        if (kind !== "Deployment") objects.set(key, next)
        if (kind === "Deployment") {
          objects.set(key, next)
          reconcileDeployment(next)
        }
        if (kind === "HorizontalPodAutoscaler") scaleByHpa(next)
        return next
      }

      const deleteObject = (kind: string, namespace: string | undefined, name: string) => {
        const key = keyOf(kind, namespace, name)
        const found = objects.get(key)
        if (found === undefined) return false
        objects.delete(key)
        if (kind === "Namespace") {
          for (const [k, o] of objects) if (o.metadata.namespace === name) objects.delete(k)
        }
        if (kind === "Deployment") {
          const selector = found.spec.selector.matchLabels as Record<string, string>
          for (const p of ofKind("Pod")) {
            if (
              p.metadata.namespace === namespace &&
              Object.entries(selector).every(([k, v]) => p.metadata.labels?.[k] === v)
            ) {
              objects.delete(keyOf("Pod", namespace, p.metadata.name))
            }
          }
        }
        if (kind === "Pod") {
          // The ReplicaSet replaces a deleted replica.
          for (const d of ofKind("Deployment")) {
            if (d.metadata.namespace === namespace) reconcileDeployment(d)
          }
        }
        return true
      }

      const handle = (
        req: Http.IncomingMessage,
        body: string
      ): { code: number; json: unknown; watch?: { kind: string; selector: string | undefined; from: number } } => {
        const url = new URL(req.url ?? "/", "http://fake")
        const method = req.method ?? "GET"
        const query = Object.fromEntries(url.searchParams)
        const parsed = body === "" ? undefined : JSON.parse(body)
        const parts = url.pathname.split("/").filter((p) => p !== "")
        const groupVersion = parts[0] === "api" ? parts[1]! : `${parts[1]}/${parts[2]}`
        const rest = parts.slice(parts[0] === "api" ? 2 : 3)
        const namespace = rest[0] === "namespaces" && rest.length >= 3 ? rest[1] : undefined
        const afterNs = namespace === undefined ? rest : rest.slice(2)
        const resource = byPlural.get(`${groupVersion}/${afterNs[0]}`)
        const name = afterNs[1]
        const attributes = rest.length === 0 || resource === undefined ? undefined : {
          verb: verbOf(method, name, query.watch === "true" || query.watch === "1"),
          apiGroup: groupVersion.includes("/") ? groupVersion.split("/")[0]! : "",
          resource: afterNs[0]!
        }
        // Server-side apply of an object that does not exist yet creates it: the API server also checks `create`.
        const creates = method === "PATCH" && resource !== undefined && name !== undefined &&
          !objects.has(keyOf(resource.kind, namespace, name))
        const allowed = attributes === undefined ||
          (Permissions.allows(rules, attributes) &&
            (!creates || Permissions.allows(rules, { ...attributes, verb: "create" })))
        requests.push({
          method,
          path: url.pathname,
          query,
          contentType: req.headers["content-type"],
          body: parsed,
          attributes,
          allowed
        })
        if (!allowed) return { code: 403, json: forbidden(creates ? { ...attributes!, verb: "create" } : attributes!) }
        const failure = failures.find((f) => f.match(method, url.pathname, url.searchParams))
        if (failure !== undefined) {
          failures = failures.filter((f) => f !== failure)
          return { code: failure.status, json: status(failure.status, "injected failure") }
        }
        if (url.pathname === "/version") {
          return { code: 200, json: { major: "1", gitVersion: options.version ?? "v1.29.0" } }
        }
        if (parts[0] === "apis" && parts.length === 2) {
          const versions = Object.keys(resources).filter((gv) => gv.startsWith(`${parts[1]}/`))
          return versions.length === 0 ? { code: 404, json: status(404, "not found") } : {
            code: 200,
            json: {
              kind: "APIGroup",
              name: parts[1],
              versions: versions.map((gv) => ({ groupVersion: gv, version: gv.split("/")[1] })),
              preferredVersion: { groupVersion: versions[0], version: versions[0]!.split("/")[1] }
            }
          }
        }
        if (rest.length === 0) {
          const list = resources[groupVersion]
          return list === undefined
            ? { code: 404, json: status(404, "not found") }
            : {
              code: 200,
              json: { kind: "APIResourceList", groupVersion, resources: list.map((r) => ({ ...r, verbs: [] })) }
            }
        }
        if (resource === undefined) return { code: 404, json: status(404, `no resource ${url.pathname}`) }
        if (name === undefined) {
          if (method !== "GET") return { code: 405, json: status(405, "method not allowed") }
          if (query.watch === "true" || query.watch === "1") {
            const from = Number(query.resourceVersion ?? "0")
            return from < compactedAt
              ? { code: 410, json: status(410, `too old resource version: ${from} (${compactedAt})`) }
              : { code: 200, json: null, watch: { kind: resource.kind, selector: query.labelSelector, from } }
          }
          const items = ofKind(resource.kind).filter((o) =>
            (namespace === undefined || o.metadata.namespace === namespace) &&
            matchesSelector(o.metadata.labels, query.labelSelector)
          )
          return {
            code: 200,
            json: {
              kind: `${resource.kind}List`,
              apiVersion: groupVersion,
              metadata: { resourceVersion: String(revision) },
              items
            }
          }
        }
        switch (method) {
          case "GET": {
            const found = objects.get(keyOf(resource.kind, namespace, name))
            return found === undefined
              ? { code: 404, json: status(404, `${name} not found`) }
              : { code: 200, json: found }
          }
          case "DELETE":
            return deleteObject(resource.kind, namespace, name)
              ? { code: 200, json: { kind: "Status", apiVersion: "v1", status: "Success" } }
              : { code: 404, json: status(404, `${name} not found`) }
          case "PATCH": {
            if (req.headers["content-type"] !== "application/apply-patch+yaml") {
              return { code: 415, json: status(415, "only server-side apply is served here") }
            }
            if (query.fieldManager === undefined) return { code: 422, json: status(422, "fieldManager is required") }
            const problems = validate(parsed)
            if (problems.length > 0) return { code: 422, json: status(422, problems.join("; ")) }
            if (parsed.metadata?.name !== name) return { code: 400, json: status(400, "name does not match the path") }
            if (
              resource.namespaced && namespace !== undefined && !objects.has(keyOf("Namespace", undefined, namespace))
            ) {
              return { code: 404, json: status(404, `namespaces "${namespace}" not found`) }
            }
            return { code: 200, json: applyObject(resource.kind, namespace, name, parsed) }
          }
          default:
            return { code: 405, json: status(405, "method not allowed") }
        }
      }

      const server = Http.createServer((req, res) => {
        let body = ""
        req.on("data", (chunk) => (body += chunk))
        req.on("end", () => {
          let answer: { code: number; json: unknown }
          try {
            answer = handle(req, body)
          } catch (e) {
            answer = { code: 500, json: status(500, String(e)) }
          }
          const watch = (answer as ReturnType<typeof handle>).watch
          if (watch !== undefined) {
            res.writeHead(200, { "content-type": "application/json" })
            // As the API server does: the watch is held from here, before any event.
            res.flushHeaders()
            for (const event of history) {
              if (
                event.revision > watch.from && event.object.kind === watch.kind &&
                matchesSelector(event.object.metadata.labels, watch.selector)
              ) res.write(JSON.stringify({ type: event.type, object: event.object }) + "\n")
            }
            const open = { kind: watch.kind, selector: watch.selector, res }
            watches.add(open)
            res.on("close", () => watches.delete(open))
            return
          }
          res.writeHead(answer.code, { "content-type": "application/json" })
          res.end(JSON.stringify(answer.json))
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        const kubeConfig = new KubeConfig()
        kubeConfig.loadFromOptions({
          clusters: [{ name: "fake", server: url, skipTLSVerify: true }],
          users: [{ name: "tenet", token: "fake-token" }],
          contexts: [{ name: "fake", cluster: "fake", user: "tenet" }],
          currentContext: "fake"
        })
        resume(Effect.succeed({
          server,
          fake: {
            url,
            kubeConfig,
            requests,
            objects,
            failNext: (count, code, match = () => true) => {
              for (let i = 0; i < count; i++) failures.push({ status: code, match })
            },
            put: (object) => applyObject(object.kind, object.metadata.namespace, object.metadata.name, object),
            update: (kind, namespace, name, change) => {
              const key = keyOf(kind, namespace, name)
              const found = objects.get(key)
              if (found === undefined) throw new Error(`no ${key}`)
              change(found)
              objects.set(key, found)
            },
            ofKind,
            dropWatches: () => {
              for (const w of watches) w.res.destroy()
              watches.clear()
            },
            compact: () => {
              history = []
              compactedAt = revision
            },
            restore: (at) => {
              for (const w of watches) w.res.destroy()
              watches.clear()
              objects.clear()
              written.clear()
              history = []
              compactedAt = 0
              revision = at
            },
            openWatches: () => watches.size
          }
        }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        // Open watches would hold the close forever.
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ fake }) => fake))

export class Fake extends Context.Tag("@tenet/adapters-k8s/testing/FakeApiServer")<Fake, FakeApiServer>() {}

/** The external provider network the contract's external IPs come from. */
export const externalSubnet = {
  apiVersion: "kubeovn.io/v1",
  kind: "Subnet",
  metadata: { name: "ovn-vpc-external-network", labels: {} },
  spec: { cidrBlock: "203.0.113.0/29", gateway: "203.0.113.1", protocol: "IPv4" }
}

/** A fresh fake cluster with the external network, the KubeApi on it, and the Orchestrator. */
export const layer = (options: Options & { readonly orchestrator?: KubeOrchestrator.Options } = {}) => {
  const fake = Layer.scoped(Fake, Effect.tap(make(options), (f) => f.put(externalSubnet)))
  const api = Layer.unwrapEffect(Effect.map(Fake, (f) => KubeApi.layerConfig(f.kubeConfig)))
  const orchestrator = KubeOrchestrator.layer({
    externalIpWait: { attempts: 3, spacingMillis: 10 },
    ...options.orchestrator
  })
  return orchestrator.pipe(Layer.provideMerge(api), Layer.provideMerge(fake))
}
