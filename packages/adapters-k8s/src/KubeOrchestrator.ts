/**
 * The Orchestrator on a Kubernetes cluster networked by Kube-OVN. Every apply is server-side
 * apply of the complete rendered set followed by a prune: objects of the set's kinds that
 * carry its owner labels but were not rendered are deleted, so turning a feature off (say
 * autoscaling) removes what it needed. Deletions go by owner labels, so nothing is orphaned.
 *
 * A pod's runtime (its Deployment's status, its Service's VIP, its OvnEip's address) is read
 * from informers kept in process, so reading pods costs the API server nothing; while a watch
 * is down the statuses carry `stale_since`. The HPA's API version is found by discovery.
 */
import type { Ids, Plan } from "@tenet/core"
import { Orchestrator } from "@tenet/core"
import type { Duration } from "effect"
import { Effect, Layer, Option, PubSub, Stream } from "effect"
import * as Drift from "./Drift.js"
import * as Informer from "./Informer.js"
import { awaitExternalIp, externalIpOf, ipv4, KubeApi } from "./KubeApi.js"
import type { KubeError, LiveObject, Wait } from "./KubeApi.js"
import * as Manifests from "./Manifests.js"
import type { AutoscalingVersion, Kind, Manifest, Settings } from "./Manifests.js"
import { Kinds } from "./Manifests.js"
import * as Names from "./Names.js"
import * as OvnAcl from "./OvnAcl.js"

export interface Options {
  readonly settings?: Partial<Settings>
  /** How long an apply waits for Kube-OVN to assign an external IP before reporting failure. */
  readonly externalIpWait?: Wait
  /** How long a read waits for the informers' first list before answering `unknown` (10 s). */
  readonly syncTimeout?: Duration.DurationInput
  /** The first retry's delay after a watch breaks (200 ms, doubling to 30 s). */
  readonly watchBackoff?: Duration.DurationInput
}

/** Every kind a pod owns, in the order they are deleted; the HPA at the version the cluster serves. */
const podKinds = (autoscaling: Option.Option<AutoscalingVersion>): ReadonlyArray<Kind> => [
  Kinds.OvnDnatRule,
  Kinds.OvnSnatRule,
  Kinds.OvnEip,
  ...Option.toArray(Option.map(autoscaling, Manifests.horizontalPodAutoscaler)),
  Kinds.Deployment,
  Kinds.Service,
  Kinds.PersistentVolumeClaim,
  Kinds.Secret
]

/** Every object Tenet labels with a tenant: what the controller's informers watch. */
const WATCHED = `${Names.MANAGED_BY}=${Names.MANAGER},${Names.TENANT}`

/** Replicas of Tenet's pods, watched for their addresses. */
const REPLICAS = `${Names.MANAGED_BY}=${Names.MANAGER},${Names.POD}`

/** The kinds watched for drift; the HPA is left to the pod's next apply (its version is found late). */
const WATCHED_KINDS: ReadonlyArray<Kind> = [
  Kinds.Namespace,
  Kinds.Vpc,
  Kinds.Subnet,
  Kinds.OvnEip,
  Kinds.OvnSnatRule,
  Kinds.OvnDnatRule,
  Kinds.Secret,
  Kinds.PersistentVolumeClaim,
  Kinds.Service,
  Kinds.Deployment
]

/** Components owned by a tunnel or a registry credential, not by a VPC or pod: not this controller's. */
const NOT_OWNED_BY_A_NETWORK = new Set(["tunnel-connector", "tunnel-token", "udp-route"])

/**
 * What the informers keep of an object: what `runtimeOf` reads, the cache's own keys (name,
 * namespace, version, labels) and the fingerprint of the fields Tenet's manager owns (what drift
 * is read against), a small part of the whole object (BENCHMARKS.md).
 */
const keptFields = (object: LiveObject): LiveObject => {
  const { metadata, spec, status } = object
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: {
      name: metadata?.name,
      namespace: metadata?.namespace,
      resourceVersion: metadata?.resourceVersion,
      labels: metadata?.labels,
      deletionTimestamp: metadata?.deletionTimestamp
    },
    tenetFields: object.tenetFields ?? Drift.fingerprint(object),
    spec: { replicas: spec?.replicas, clusterIP: spec?.clusterIP, v4Ip: spec?.v4Ip },
    status: {
      readyReplicas: status?.readyReplicas,
      v4Ip: status?.v4Ip,
      podIP: status?.podIP,
      podIPs: status?.podIPs,
      conditions: status?.conditions?.map(({ message, reason, status, type }) => ({ message, reason, status, type }))
    }
  } as LiveObject
}

/** The VPC, subnet or pod an object serves, from its labels; none for a tunnel's or a registry credential's. */
const ownerOf = (object: LiveObject): Orchestrator.ClusterOwner | undefined => {
  const labels = object.metadata?.labels ?? {}
  const tenant_id = labels[Names.TENANT] as Ids.TenantId | undefined
  const vpc_id = labels[Names.VPC] as Ids.VpcId | undefined
  if (tenant_id === undefined || vpc_id === undefined) return undefined
  if (labels[Names.REGISTRY] !== undefined || NOT_OWNED_BY_A_NETWORK.has(labels[Names.COMPONENT] ?? "")) {
    return undefined
  }
  return {
    tenant_id,
    vpc_id,
    subnet_id: (labels[Names.SUBNET] ?? null) as Ids.SubnetId | null,
    pod_id: (labels[Names.POD] ?? null) as Ids.PodId | null
  }
}

/**
 * The change a watch event is, if it is one Tenet did not make to an object a VPC or pod owns:
 * a delete (or a delete begun), or fields taken from Tenet's manager; for a replica, its
 * addresses moving.
 */
const changeOf = (event: Informer.Change): Orchestrator.ClusterChange | undefined => {
  const owned = ownerOf(event.object)
  if (owned === undefined) return undefined
  const owner = { ...owned, object: `${event.object.kind ?? "object"} ${nameOf(event.object)}` }
  if (event.object.kind === "Pod") {
    const before = event.previous === undefined ? [] : podIps(event.previous)
    const after = event.type === "DELETED" ? [] : podIps(event.object)
    return before.join() === after.join()
      ? undefined
      : { ...owner, change: "addresses", manager: null, fields: [] }
  }
  const deleting = event.type === "DELETED" ||
    (event.object.metadata?.deletionTimestamp !== undefined &&
      event.previous?.metadata?.deletionTimestamp === undefined)
  if (deleting) return { ...owner, change: "deleted", manager: null, fields: [] }
  const taken = Drift.taken(event.previous?.tenetFields ?? "", event.object)
  return taken.length === 0 ? undefined : {
    ...owner,
    change: "changed",
    manager: taken.map((t) => t.manager).join(", "),
    fields: taken.flatMap((t) => t.fields)
  }
}

/**
 * Every kind a VPC or tenant owns, in the order they are deleted. What runs in a VPC's namespace
 * is deleted by label before the namespace, not left to the namespace controller: the VPC is
 * gone from the cluster's answers at once, and from a cluster without that controller at all.
 */
const networkKinds = (autoscaling: Option.Option<AutoscalingVersion>): ReadonlyArray<Kind> => [
  ...podKinds(autoscaling),
  Kinds.Namespace,
  Kinds.Subnet,
  Kinds.Vpc
]

const orchestratorError = (operation: string) => (e: KubeError) =>
  new Orchestrator.OrchestratorError({ operation, detail: e.message })

const nameOf = (o: { readonly metadata?: { readonly name?: string } }) => o.metadata?.name ?? ""
const namespaceOf = (o: { readonly metadata?: { readonly namespace?: string } }) => o.metadata?.namespace

/** A replica's addresses, as the kubelet reported them. */
const podIps = (pod: LiveObject): ReadonlyArray<string> => {
  const ips: ReadonlyArray<{ ip?: string }> = pod.status?.podIPs ??
    (pod.status?.podIP ? [{ ip: pod.status.podIP }] : [])
  return ips.flatMap((p) => p.ip !== undefined && !p.ip.includes(":") ? [p.ip] : [])
}

export const make = Effect.fn("KubeOrchestrator.make")(function*(options: Options = {}) {
  const kube = yield* KubeApi
  const settings: Settings = { ...Manifests.defaultSettings, ...options.settings }
  const eipWait = options.externalIpWait ?? { attempts: 25, spacingMillis: 200 }
  const syncTimeout = options.syncTimeout ?? "10 seconds"
  const changes = yield* PubSub.unbounded<Orchestrator.ClusterChange>()

  const onChange = (event: Informer.Change) => {
    const change = changeOf(event)
    // Unbounded: publishing never waits, so it can run inside the watch's callback.
    if (change !== undefined) Effect.runSync(PubSub.publish(changes, change))
  }
  const informer = (kind: Kind, selector: string) =>
    Informer.make(kube, {
      kind,
      selector,
      indexes: [Names.TENANT, Names.POD],
      keep: keptFields,
      onChange,
      ...(options.watchBackoff === undefined ? {} : { backoff: options.watchBackoff })
    })
  const informers = yield* Effect.forEach(WATCHED_KINDS, (kind) => informer(kind, WATCHED))
  const replicaPods = yield* informer(Kinds.Pod, REPLICAS)
  const everyInformer = [...informers, replicaPods]
  const informerOf = (kind: string) => everyInformer.find((i) => i.kind.kind === kind)
  const deployments = informerOf(Kinds.Deployment.kind)!
  const services = informerOf(Kinds.Service.kind)!
  const eips = informerOf(Kinds.OvnEip.kind)!

  /** Server-side apply; what it returns is what the informers hold until the watch says more. */
  const apply = (manifest: Manifest) =>
    Effect.tap(kube.apply(manifest), (object) => {
      informerOf(object.kind ?? "")?.observe(object)
    })
  const remove = (kind: Kind, name: string, namespace: string | undefined) =>
    Effect.tap(kube.delete(kind, name, namespace), (deleted) => informerOf(kind.kind)?.forget(name, namespace, deleted))

  const deleteAll = (objects: ReadonlyArray<{ kind: Kind; object: LiveObject }>) =>
    Effect.forEach(objects, ({ kind, object }) => remove(kind, nameOf(object), namespaceOf(object)), {
      discard: true
    })

  /** The HPA version the cluster serves, found once; none when it serves neither Tenet renders. */
  let autoscaling: AutoscalingVersion | undefined
  const autoscalingVersion: Effect.Effect<Option.Option<AutoscalingVersion>, KubeError> = Effect.suspend(() =>
    autoscaling !== undefined
      ? Effect.succeed(Option.some(autoscaling))
      : Effect.map(kube.groupVersions("autoscaling"), (served) => {
        const found = Option.fromNullable(
          Manifests.AUTOSCALING_VERSIONS.find((v): v is AutoscalingVersion => served.includes(v))
        )
        if (Option.isSome(found)) autoscaling = found.value
        return found
      })
  )
  const requireAutoscaling = Effect.flatMap(autoscalingVersion, (found) =>
    Option.match(found, {
      onSome: Effect.succeed,
      onNone: () =>
        Effect.flatMap(
          Effect.zip(kube.serverVersion, kube.groupVersions("autoscaling")),
          ([version, served]) =>
            new Orchestrator.OrchestratorError({
              operation: "applyPod",
              detail: `the cluster (Kubernetes ${version}) serves ${
                served.length === 0 ? "no autoscaling API" : served.map((v) => `autoscaling/${v}`).join(", ")
              }; autoscaled pods need ${Manifests.AUTOSCALING_VERSIONS.map((v) => `autoscaling/${v}`).join(" or ")}`
            })
        )
    }))

  /** Objects of the kinds with the labels, in the kinds' order. */
  const owned = (kinds: ReadonlyArray<Kind>, labels: Record<string, string>) =>
    Effect.map(
      Effect.forEach(kinds, (kind) =>
        Effect.map(kube.list(kind, labels), (items) => items.map((object) => ({ kind, object })))),
      (groups) =>
        groups.flat()
    )

  /** Applies the set, then deletes what the same owner has of those kinds that the set no longer holds. */
  const applySet = (
    desired: ReadonlyArray<Manifest>,
    pruneKinds: ReadonlyArray<Kind>,
    labels: Record<string, string>
  ) =>
    Effect.gen(function*() {
      const applied = yield* Effect.forEach(desired, apply)
      const keep = new Set(desired.map((m) => `${m.kind}/${m.metadata.namespace ?? ""}/${m.metadata.name}`))
      const existing = yield* owned(pruneKinds, labels)
      yield* deleteAll(
        existing.filter(({ kind, object }) => !keep.has(`${kind.kind}/${namespaceOf(object) ?? ""}/${nameOf(object)}`))
      )
      return applied
    })

  /** A pod's replicas' addresses, from the replicas' informer: they move as replicas come and go. */
  const replicaAddresses = (podId: Ids.PodId) =>
    Effect.map(replicaPods.synced(syncTimeout), () => replicaPods.byLabel(Names.POD, podId).flatMap(podIps))

  const applyPod = (spec: Orchestrator.PodSpec) =>
    Effect.gen(function*() {
      const labels = { [Names.POD]: spec.pod_id }
      const hpa = spec.autoscaling === null ? yield* autoscalingVersion : Option.some(yield* requireAutoscaling)
      const version = Option.getOrElse(hpa, () => "v2" as const)
      // First everything but the NAT rules, which need the VIP the API server assigns. The Service
      // asks for the address it has (it cannot change), else the one the pod was given, unless the
      // API server refuses that one: then it assigns one, and the pod's record follows.
      const current = ipv4(services.byLabel(Names.POD, spec.pod_id)[0]?.spec?.clusterIP)
      const wanted = current ?? spec.vip
      const base = (vip: string | null) => Manifests.pod(spec, settings, { vip, replicas: [] }, version)
      const applied = yield* Effect.forEach(base(wanted), apply).pipe(
        Effect.catchIf(
          // Refused for its cluster IP (taken, outside the service range, or not the live one).
          (e) => wanted !== null && e.status === 422 && /clusterIP/i.test(e.detail),
          () => Effect.forEach(base(null), apply)
        )
      )
      const service = applied.find((o) => o.kind === "Service")
      const vip = ipv4(service?.spec?.clusterIP)
      if (vip === null) {
        return yield* new Orchestrator.OrchestratorError({
          operation: "applyPod",
          detail: "the Service got no cluster IP"
        })
      }
      const replicas = yield* replicaAddresses(spec.pod_id)
      yield* applySet(Manifests.pod(spec, settings, { vip, replicas }, version), podKinds(hpa), labels)
      const external = spec.external_access || spec.external_inbound !== null
      const external_ip = external
        ? Option.getOrNull(yield* awaitExternalIp(kube, Names.podEip(spec.pod_id), eipWait))
        : null
      if (external && external_ip === null) {
        return yield* new Orchestrator.OrchestratorError({
          operation: "applyPod",
          detail: `Kube-OVN has not assigned external IP ${Names.podEip(spec.pod_id)} yet`
        })
      }
      return { vip, external_ip } satisfies Orchestrator.PodPlacement
    }).pipe(
      Effect.catchTag("KubeError", (e) => Effect.fail(orchestratorError("applyPod")(e))),
      Effect.withSpan("KubeOrchestrator.applyPod", { attributes: { pod: spec.pod_id } })
    )

  /** Since when the informers' view is not known current, if it is not. */
  const staleSince = (): Date | null =>
    everyInformer.reduce<Date | null>((since, i) => {
      const f = i.freshness()
      return f._tag === "Current" || (since !== null && since <= f.since) ? since : f.since
    }, null)

  /** A pod's runtime as its Deployment, Service and external-IP object report it. */
  const runtimeOf = (
    deployment: LiveObject,
    service: LiveObject | undefined,
    eip: LiveObject | undefined,
    stale_since: Date | null
  ): Orchestrator.PodRuntime => {
    const desired = deployment.spec?.replicas ?? 1
    const ready = deployment.status?.readyReplicas ?? 0
    const conditions = deployment.status?.conditions ?? []
    const failed = conditions.find((c) =>
      (c.type === "ReplicaFailure" && c.status === "True") ||
      (c.type === "Progressing" && c.reason === "ProgressDeadlineExceeded")
    )
    const phase = deployment.metadata?.deletionTimestamp !== undefined
      ? "deleting"
      : desired === 0
      ? "stopped"
      : failed !== undefined && ready === 0
      ? "failed"
      : ready >= desired
      ? "running"
      : ready === 0
      ? "pending"
      : "degraded"
    return {
      phase,
      ready_replicas: ready,
      desired_replicas: desired,
      vip: ipv4(service?.spec?.clusterIP),
      external_ip: eip === undefined ? null : externalIpOf(eip),
      last_error: failed?.message ?? null,
      stale_since
    } satisfies Orchestrator.PodRuntime
  }

  /** Waits for the informers' first lists (a read right after startup), up to `syncTimeout`. */
  const synced = Effect.forEach(everyInformer, (i) => i.synced(syncTimeout), { discard: true })

  const runtimeFor = (podId: Ids.PodId, stale: Date | null) => {
    const deployment = deployments.byLabel(Names.POD, podId)[0]
    if (deployment === undefined) return undefined
    const service = services.byLabel(Names.POD, podId)[0]
    return runtimeOf(deployment, service, eips.get(Names.podEip(podId)), stale)
  }

  const podStatus = (podId: Ids.PodId) =>
    Effect.map(synced, () => Option.fromNullable(runtimeFor(podId, staleSince()))).pipe(
      Effect.mapError(orchestratorError("podStatus"))
    )

  /** From the informers: no cluster call, whatever the number of pods. */
  const podStatuses = (tenantId: Ids.TenantId) =>
    Effect.map(synced, () => {
      const stale = staleSince()
      const statuses = new Map<Ids.PodId, Orchestrator.PodRuntime>()
      for (const deployment of deployments.byLabel(Names.TENANT, tenantId)) {
        const id = deployment.metadata?.labels?.[Names.POD] as Ids.PodId
        const runtime = statuses.has(id) ? undefined : runtimeFor(id, stale)
        if (runtime !== undefined) statuses.set(id, runtime)
      }
      return statuses as ReadonlyMap<Ids.PodId, Orchestrator.PodRuntime>
    }).pipe(Effect.mapError(orchestratorError("podStatuses")))

  /** The ACLs last rendered per subnet, for a subnet that must be created again. */
  const renderedAcls = new Map<Ids.SubnetId, ReadonlyArray<OvnAcl.Acl>>()
  /** Deletes the objects, forgetting the ACLs of the subnets among them. */
  const deleteNetwork = (objects: ReadonlyArray<{ kind: Kind; object: LiveObject }>) =>
    Effect.zipRight(
      deleteAll(objects),
      Effect.sync(() => {
        for (const { object } of objects) {
          const subnet = object.metadata?.labels?.[Names.SUBNET]
          if (subnet !== undefined) renderedAcls.delete(subnet as Ids.SubnetId)
        }
      })
    )

  const applySecurityPlan = (plan: Plan.SecurityPlan) =>
    Effect.gen(function*() {
      yield* replicaPods.synced(syncTimeout)
      const acls = yield* Effect.try({
        try: () => OvnAcl.render(plan, (id) => replicaPods.byLabel(Names.POD, id).flatMap(podIps)),
        catch: (e) => new Orchestrator.OrchestratorError({ operation: "applySecurityPlan", detail: String(e) })
      })
      yield* Effect.forEach(plan.subnets, (s) =>
        Effect.gen(function*() {
          // The Subnet is rendered whole (one field manager owns it); its other fields come
          // from the live object applySubnet wrote. A subnet not in the cluster is skipped.
          const live = yield* kube.read(Kinds.Subnet, Names.subnet(s.subnet_id))
          const shape = Option.flatMapNullable(live, Manifests.subnetShapeOf)
          const rendered = acls.get(s.subnet_id) ?? []
          renderedAcls.set(s.subnet_id, rendered)
          if (Option.isSome(shape)) yield* apply(Manifests.subnet(shape.value, rendered))
        }), { discard: true })
    }).pipe(
      Effect.catchTag("KubeError", (e) => Effect.fail(orchestratorError("applySecurityPlan")(e))),
      Effect.withSpan("KubeOrchestrator.applySecurityPlan", { attributes: { vpc: plan.vpc_id } })
    )

  return Orchestrator.Orchestrator.of({
    backend: "kubernetes",
    applyVpc: (spec) =>
      applySet(Manifests.vpc(spec, settings), [Kinds.OvnEip], {
        [Names.VPC]: spec.vpc_id,
        [Names.COMPONENT]: "vpc-egress"
      })
        .pipe(Effect.asVoid, Effect.mapError(orchestratorError("applyVpc"))),
    deleteVpc: (vpcId) =>
      autoscalingVersion.pipe(
        Effect.flatMap((hpa) => owned(networkKinds(hpa), { [Names.VPC]: vpcId })),
        Effect.flatMap(deleteNetwork),
        Effect.mapError(orchestratorError("deleteVpc"))
      ),
    applySubnet: (spec) =>
      Effect.gen(function*() {
        // Keep the ACLs the last security plan put there; applySecurityPlan replaces them. A
        // subnet deleted behind Tenet's back comes back with the ACLs this process last rendered
        // for it, not open until its plan follows.
        const live = yield* kube.read(Kinds.Subnet, Names.subnet(spec.subnet_id))
        const acls: ReadonlyArray<OvnAcl.Acl> = Option.match(live, {
          onNone: () => renderedAcls.get(spec.subnet_id) ?? [],
          onSome: (s) => s.spec?.acls ?? []
        })
        yield* apply(Manifests.subnet(spec, acls))
        yield* applySet(Manifests.subnetEgress(spec), [Kinds.OvnSnatRule], {
          [Names.SUBNET]: spec.subnet_id,
          [Names.COMPONENT]: "subnet-egress"
        })
      }).pipe(Effect.mapError(orchestratorError("applySubnet"))),
    deleteSubnet: (_vpcId, subnetId) =>
      Effect.flatMap(owned([Kinds.OvnSnatRule, Kinds.Subnet], { [Names.SUBNET]: subnetId }), deleteAll).pipe(
        Effect.tap(() => renderedAcls.delete(subnetId)),
        Effect.mapError(orchestratorError("deleteSubnet"))
      ),
    applySecurityPlan,
    applyPod,
    recreatePod: (spec) =>
      // The Service (the VIP) and the external IP stay; only the workload starts over.
      remove(Kinds.Deployment, Names.workload(spec.pod_id), Names.namespace(spec.vpc_id)).pipe(
        Effect.mapError(orchestratorError("recreatePod")),
        Effect.zipRight(applyPod(spec))
      ),
    restartPod: (podId) =>
      // Deleting the replicas restarts them without touching the Deployment's template.
      Effect.flatMap(owned([Kinds.Pod], { [Names.POD]: podId }), deleteAll).pipe(
        Effect.mapError(orchestratorError("restartPod"))
      ),
    deletePod: (podId) =>
      autoscalingVersion.pipe(
        Effect.flatMap((hpa) => owned(podKinds(hpa), { [Names.POD]: podId })),
        Effect.flatMap(deleteAll),
        Effect.mapError(orchestratorError("deletePod"))
      ),
    podStatus,
    podStatuses,
    applyRegistrySecret: (spec) =>
      Effect.gen(function*() {
        const namespaces = yield* kube.list(Kinds.Namespace, { [Names.TENANT]: spec.tenant_id })
        yield* Effect.forEach(namespaces, (ns) => {
          const vpcId = ns.metadata?.labels?.[Names.VPC]
          return vpcId === undefined
            ? Effect.void
            : Effect.asVoid(apply(Manifests.registrySecret(spec, nameOf(ns), vpcId as Ids.VpcId)))
        }, { discard: true })
      }).pipe(Effect.mapError(orchestratorError("applyRegistrySecret"))),
    deleteRegistrySecret: (tenantId, name) =>
      Effect.flatMap(owned([Kinds.Secret], { [Names.TENANT]: tenantId, [Names.REGISTRY]: name }), deleteAll).pipe(
        Effect.mapError(orchestratorError("deleteRegistrySecret"))
      ),
    deleteTenant: (tenantId) =>
      autoscalingVersion.pipe(
        Effect.flatMap((hpa) => owned(networkKinds(hpa), { [Names.TENANT]: tenantId })),
        Effect.flatMap(deleteNetwork),
        Effect.mapError(orchestratorError("deleteTenant"))
      ),
    changes: Stream.fromPubSub(changes),
    inventory: Effect.map(synced, () => {
      const owners: Array<Orchestrator.ClusterOwner> = []
      const held = (object: LiveObject) => {
        const owner = ownerOf(object)
        if (owner !== undefined) owners.push(owner)
      }
      for (const kind of [Kinds.Vpc, Kinds.Subnet, Kinds.Deployment]) {
        for (const object of informerOf(kind.kind)!.all()) held(object)
      }
      return owners
    }).pipe(Effect.mapError(orchestratorError("inventory")))
  })
})

/** The Orchestrator on the cluster `KubeApi` talks to; its informers stop with the layer. */
export const layer = (options: Options = {}) => Layer.scoped(Orchestrator.Orchestrator, make(options))
