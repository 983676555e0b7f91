/**
 * The Kubernetes API as Tenet uses it: server-side apply under one field manager, reads,
 * label-selected lists and deletes (absent is success), on `@kubernetes/client-node`'s
 * `KubernetesObjectApi`, which resolves any kind (Kube-OVN's included) through discovery.
 */
import type { KubernetesObject } from "@kubernetes/client-node"
import { ApiException, KubeConfig, KubernetesObjectApi, PatchStrategy, Watch } from "@kubernetes/client-node"
import { Net } from "@tenet/core"
import { Context, Effect, Layer, Option, Schedule, Schema } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import type { Kind, Manifest } from "./Manifests.js"
import { Kinds } from "./Manifests.js"
import * as Names from "./Names.js"
import type { Acl } from "./OvnAcl.js"

export class KubeError extends Schema.TaggedError<KubeError>()("KubeError", {
  operation: Schema.String,
  /** The API server's HTTP status; 0 when it could not be reached. */
  status: Schema.Number,
  detail: Schema.String
}) {
  override get message() {
    return `${this.operation}: ${this.status === 0 ? "" : `${this.status} `}${this.detail}`
  }
}

/** An object as the API server returns it, with the fields Tenet reads back. */
export interface LiveObject extends KubernetesObject {
  /** What an informer keeps of Tenet's managed fields in place of `managedFields` (`Drift.fingerprint`). */
  readonly tenetFields?: string
  readonly spec?: {
    readonly clusterIP?: string
    readonly replicas?: number
    readonly v4Ip?: string
    readonly cidrBlock?: string
    readonly gateway?: string
    readonly acls?: ReadonlyArray<Acl>
  }
  readonly status?: {
    readonly v4Ip?: string
    readonly podIP?: string
    readonly podIPs?: ReadonlyArray<{ readonly ip?: string }>
    readonly readyReplicas?: number
    readonly conditions?: ReadonlyArray<
      { readonly type?: string; readonly status?: string; readonly reason?: string; readonly message?: string }
    >
  }
}

export interface KubeApiShape {
  /** Server-side apply (create or update) with Tenet's field manager, taking over conflicts. */
  readonly apply: (manifest: Manifest) => Effect.Effect<LiveObject, KubeError>
  readonly read: (kind: Kind, name: string, namespace?: string) => Effect.Effect<Option.Option<LiveObject>, KubeError>
  /** Creates the object; 409 when it exists. */
  readonly create: (manifest: Manifest) => Effect.Effect<LiveObject, KubeError>
  /**
   * Replaces the object whole, with its `metadata.resourceVersion` as the precondition: 409 when
   * it changed since that version was read (optimistic concurrency, as leader election needs).
   */
  readonly replace: (manifest: Manifest) => Effect.Effect<LiveObject, KubeError>
  /** Objects of a kind with the labels; across all namespaces unless one is given. */
  readonly list: (
    kind: Kind,
    labels: Readonly<Record<string, string>>,
    namespace?: string
  ) => Effect.Effect<ReadonlyArray<LiveObject>, KubeError>
  /**
   * Deletes in the background (dependents are collected by the cluster). Absent is success;
   * the object as it was deleted, when there was one.
   */
  readonly delete: (kind: Kind, name: string, namespace?: string) => Effect.Effect<Option.Option<LiveObject>, KubeError>
  /** Every object of a kind with the labels, cluster-wide, and the version the list was read at. */
  readonly snapshot: (kind: Kind, selector: string) => Effect.Effect<Snapshot, KubeError>
  /**
   * Watches a kind from a version, cluster-wide: `onOpen` once the server holds the watch, then
   * each event to `onEvent` as it arrives. Succeeds when the server ends the watch (its timeout),
   * fails when it cannot be held or the server says the version is gone (410). Interrupting it
   * closes the stream.
   */
  readonly watch: (
    kind: Kind,
    selector: string,
    resourceVersion: string,
    handlers: { readonly onOpen: () => void; readonly onEvent: (event: WatchEvent) => void }
  ) => Effect.Effect<void, KubeError>
  /** The versions of an API group the cluster serves (none when it does not serve the group). */
  readonly groupVersions: (group: string) => Effect.Effect<ReadonlyArray<string>, KubeError>
  /** The cluster's version as `/version` states it (`v1.20.2`). */
  readonly serverVersion: Effect.Effect<string, KubeError>
}

export interface Snapshot {
  readonly items: ReadonlyArray<LiveObject>
  readonly resourceVersion: string
}

/** One event of a watch, as the API server streams it. */
export interface WatchEvent {
  readonly type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR"
  readonly object: LiveObject & { readonly code?: number; readonly message?: string }
}

/** How long the API server holds one watch open before ending it (Tenet then watches again). */
export const WATCH_TIMEOUT_SECONDS = 60

export class KubeApi extends Context.Tag("@tenet/adapters-k8s/KubeApi")<KubeApi, KubeApiShape>() {}

const failure = (operation: string) => (cause: unknown): KubeError => {
  if (cause instanceof ApiException) {
    const body = typeof cause.body === "string" ? safeParse(cause.body) : cause.body
    const detail = typeof body === "object" && body !== null && "message" in body ? String(body.message) : cause.message
    return new KubeError({ operation, status: cause.code, detail })
  }
  return new KubeError({ operation, status: 0, detail: cause instanceof Error ? cause.message : String(cause) })
}

/**
 * An apply that would create the object is also authorized as `create`; the API server's
 * refusal then gives no reason. Say which permission is missing, in RBAC's words.
 */
const forbiddenCreate = (e: KubeError, manifest: Manifest): KubeError => {
  if (!/is forbidden: *$/.test(e.detail)) return e
  const group = manifest.apiVersion.includes("/") ? manifest.apiVersion.split("/")[0] : ""
  const resource = Object.values(Kinds).find((k) => k.kind === manifest.kind)?.resource ?? manifest.kind
  return new KubeError({
    ...e,
    detail: `${e.detail}User cannot create resource "${resource}" in API group "${group}" ` +
      `(server-side apply of an object that does not exist yet needs "create" as well as "patch")`
  })
}

const safeParse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const describe = (kind: Kind, name: string, namespace?: string) =>
  `${kind.kind} ${namespace === undefined ? "" : `${namespace}/`}${name}`

export const make = (config: KubeConfig): KubeApiShape => {
  const api = KubernetesObjectApi.makeApiClient(config)
  const watcher = new Watch(config)
  const call = <A>(operation: string, run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: failure(operation) })
  const header = (kind: Kind, name: string, namespace?: string) => ({
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    metadata: namespace === undefined ? { name } : { name, namespace }
  })
  return {
    apply: (manifest) =>
      call(
        `apply ${manifest.kind} ${manifest.metadata.name}`,
        () =>
          api.patch(
            manifest as KubernetesObject,
            undefined,
            undefined,
            Names.FIELD_MANAGER,
            true,
            PatchStrategy.ServerSideApply
          ) as Promise<LiveObject>
      ).pipe(Effect.mapError((e) => e.status === 403 ? forbiddenCreate(e, manifest) : e)),
    create: (manifest) =>
      call(
        `create ${manifest.kind} ${manifest.metadata.name}`,
        () => api.create(manifest as KubernetesObject, undefined, undefined, Names.FIELD_MANAGER) as Promise<LiveObject>
      ),
    replace: (manifest) =>
      call(
        `replace ${manifest.kind} ${manifest.metadata.name}`,
        () =>
          api.replace(manifest as KubernetesObject, undefined, undefined, Names.FIELD_MANAGER) as Promise<LiveObject>
      ),
    read: (kind, name, namespace) =>
      call(`read ${describe(kind, name, namespace)}`, () => api.read(header(kind, name, namespace))).pipe(
        Effect.map((o) => Option.some(o as LiveObject)),
        Effect.catchIf((e) => e.status === 404, () => Effect.succeed(Option.none()))
      ),
    list: (kind, labels, namespace) =>
      call(
        `list ${kind.kind}`,
        () =>
          api.list(
            kind.apiVersion,
            kind.kind,
            namespace,
            undefined,
            undefined,
            undefined,
            undefined,
            Names.selector(labels)
          )
      ).pipe(
        Effect.map((list) => list.items as ReadonlyArray<LiveObject>),
        // A kind the cluster does not serve has no objects to find.
        Effect.catchIf((e) => e.status === 404, () => Effect.succeed([]))
      ),
    delete: (kind, name, namespace) =>
      call(
        `delete ${describe(kind, name, namespace)}`,
        () => api.delete(header(kind, name, namespace), undefined, undefined, undefined, undefined, "Background")
      ).pipe(
        Effect.map((answer) =>
          // A Status when the object goes at once; the object itself while finalizers hold it.
          typeof answer === "object" && answer !== null && (answer as { kind?: string }).kind === kind.kind
            ? Option.some(answer as LiveObject)
            : Option.none()
        ),
        Effect.catchIf((e) => e.status === 404, () => Effect.succeed(Option.none()))
      ),
    snapshot: (kind, selector) =>
      call(
        `list ${kind.kind}`,
        () => api.list(kind.apiVersion, kind.kind, undefined, undefined, undefined, undefined, undefined, selector)
      ).pipe(
        Effect.map((list) => ({
          items: list.items as ReadonlyArray<LiveObject>,
          resourceVersion: list.metadata?.resourceVersion ?? ""
        }))
      ),
    watch: (kind, selector, resourceVersion, { onEvent, onOpen }) =>
      Effect.async<void, KubeError>((resume) => {
        const operation = `watch ${kind.kind}`
        let controller: AbortController | undefined
        let ended = false
        void watcher.watch(
          collectionPath(kind),
          {
            labelSelector: selector,
            resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: WATCH_TIMEOUT_SECONDS
          },
          (type: string, object: unknown) => onEvent({ type, object } as WatchEvent),
          (error: unknown) => {
            if (ended) return
            ended = true
            resume(
              error === null || error === undefined
                ? Effect.void
                : Effect.fail(watchFailure(operation, error))
            )
          }
        ).then((c) => {
          controller = c
          if (ended) c.abort()
          else onOpen()
        }, (error) => {
          if (ended) return
          ended = true
          resume(Effect.fail(watchFailure(operation, error)))
        })
        return Effect.sync(() => {
          ended = true
          controller?.abort()
        })
      }),
    groupVersions: (group) =>
      raw(config, `/apis/${group}`).pipe(
        Effect.map((answer) =>
          answer.status === 404
            ? []
            : ((answer.body as { versions?: ReadonlyArray<{ version?: string }> }).versions ?? []).flatMap((v) =>
              v.version === undefined ? [] : [v.version]
            )
        )
      ),
    serverVersion: raw(config, "/version").pipe(
      Effect.map((answer) => String((answer.body as { gitVersion?: unknown }).gitVersion ?? "unknown"))
    )
  }
}

/** A kind's collection across all namespaces, as watch and list address it. */
export const collectionPath = (kind: Kind) =>
  `${kind.apiVersion.includes("/") ? "/apis" : "/api"}/${kind.apiVersion}/${kind.resource}`

const watchFailure = (operation: string, error: unknown) => {
  const status = (error as { statusCode?: unknown }).statusCode
  return new KubeError({
    operation,
    status: typeof status === "number" ? status : 0,
    detail: error instanceof Error ? error.message : String(error)
  })
}

/** A GET of a discovery path with the kubeconfig's credentials; 404 is an answer, not a failure. */
const raw = (config: KubeConfig, path: string) =>
  Effect.tryPromise({
    try: async () => {
      const options: Https.RequestOptions = {}
      await config.applyToHTTPSOptions(options)
      const server = config.getCurrentCluster()?.server ?? ""
      return new Promise<{ status: number; body: unknown }>((resolve, reject) => {
        const url = new URL(path, server)
        const request = (url.protocol === "https:" ? Https : Http).get(url, options, (response) => {
          let text = ""
          response.on("data", (chunk) => (text += chunk))
          response.on("end", () => {
            const status = response.statusCode ?? 0
            if (status !== 200 && status !== 404) reject(Object.assign(new Error(text), { statusCode: status }))
            else resolve({ status, body: status === 200 ? safeParse(text) : {} })
          })
        })
        request.on("error", reject)
      })
    },
    catch: (error) => watchFailure(`GET ${path}`, error)
  })

/** On a loaded kubeconfig. */
export const layerConfig = (config: KubeConfig) => Layer.sync(KubeApi, () => make(config))

/** The kubeconfig in `KUBECONFIG` (or `~/.kube/config`), else the in-cluster service account. */
export const layer = Layer.suspend(() =>
  Effect.try({
    try: () => {
      const config = new KubeConfig()
      config.loadFromDefault()
      if (config.getCurrentCluster() === null) throw new Error("no cluster in the kubeconfig")
      return config
    },
    catch: (cause) =>
      new KubeError({
        operation: "load kubeconfig",
        status: 0,
        detail: cause instanceof Error ? cause.message : String(cause)
      })
  }).pipe(Effect.map((config) => make(config)), Layer.effect(KubeApi))
)

/** An address the cluster reported, when it is an IPv4 address. */
export const ipv4 = (text: unknown): Net.Ipv4Address | null =>
  typeof text === "string" && Option.isSome(Net.parseIpv4(text)) ? text as Net.Ipv4Address : null

/** The address Kube-OVN gave an OvnEip, once it has. */
export const externalIpOf = (eip: LiveObject): Net.Ipv4Address | null => ipv4(eip.status?.v4Ip) ?? ipv4(eip.spec?.v4Ip)

export interface Wait {
  readonly attempts: number
  readonly spacingMillis: number
}

/**
 * Kube-OVN assigns an external IP shortly after the OvnEip appears: reads it until it has one,
 * a few times; none when it still has not.
 */
export const awaitExternalIp = (kube: KubeApiShape, name: string, wait: Wait) =>
  kube.read(Kinds.OvnEip, name).pipe(
    Effect.flatMap((eip) => Effect.fromNullable(Option.getOrNull(Option.flatMapNullable(eip, externalIpOf)))),
    Effect.retry({
      while: (e) => e._tag === "NoSuchElementException",
      times: wait.attempts,
      schedule: Schedule.spaced(wait.spacingMillis)
    }),
    Effect.optionFromOptional
  )
