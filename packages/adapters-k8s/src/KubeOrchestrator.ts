/**
 * The Orchestrator on a Kubernetes cluster networked by Kube-OVN. Every apply is server-side
 * apply of the complete rendered set followed by a prune: objects of the set's kinds that
 * carry its owner labels but were not rendered are deleted, so turning a feature off (say
 * autoscaling) removes what it needed. Deletions go by owner labels, so nothing is orphaned.
 */
import type { Ids, Plan } from "@tenet/core"
import { Orchestrator } from "@tenet/core"
import { Effect, Layer, Option } from "effect"
import { awaitExternalIp, externalIpOf, ipv4, KubeApi } from "./KubeApi.js"
import type { KubeError, LiveObject, Wait } from "./KubeApi.js"
import * as Manifests from "./Manifests.js"
import type { Kind, Manifest, Settings } from "./Manifests.js"
import { Kinds } from "./Manifests.js"
import * as Names from "./Names.js"
import * as OvnAcl from "./OvnAcl.js"

export interface Options {
  readonly settings?: Partial<Settings>
  /** How long an apply waits for Kube-OVN to assign an external IP before reporting failure. */
  readonly externalIpWait?: Wait
}

/** Every kind a pod owns, in the order they are deleted. */
const POD_KINDS: ReadonlyArray<Kind> = [
  Kinds.OvnDnatRule,
  Kinds.OvnSnatRule,
  Kinds.OvnEip,
  Kinds.HorizontalPodAutoscaler,
  Kinds.Deployment,
  Kinds.Service,
  Kinds.PersistentVolumeClaim,
  Kinds.Secret
]

/** Every kind a VPC or tenant owns, in the order they are deleted (the namespace takes the rest). */
const NETWORK_KINDS: ReadonlyArray<Kind> = [
  Kinds.OvnDnatRule,
  Kinds.OvnSnatRule,
  Kinds.OvnEip,
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

  const deleteAll = (objects: ReadonlyArray<{ kind: Kind; object: LiveObject }>) =>
    Effect.forEach(objects, ({ kind, object }) => kube.delete(kind, nameOf(object), namespaceOf(object)), {
      discard: true
    })

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
      const applied = yield* Effect.forEach(desired, kube.apply)
      const keep = new Set(desired.map((m) => `${m.kind}/${m.metadata.namespace ?? ""}/${m.metadata.name}`))
      const existing = yield* owned(pruneKinds, labels)
      yield* deleteAll(
        existing.filter(({ kind, object }) => !keep.has(`${kind.kind}/${namespaceOf(object) ?? ""}/${nameOf(object)}`))
      )
      return applied
    })

  const replicaAddresses = (podId: Ids.PodId) =>
    Effect.map(kube.list(Kinds.Pod, { [Names.POD]: podId }), (pods) => pods.flatMap(podIps))

  const applyPod = (spec: Orchestrator.PodSpec) =>
    Effect.gen(function*() {
      const labels = { [Names.POD]: spec.pod_id }
      // First everything but the NAT rules, which need the VIP the API server assigns.
      const base = Manifests.pod(spec, settings, { vip: null, replicas: [] })
      const applied = yield* Effect.forEach(base, kube.apply)
      const service = applied.find((o) => o.kind === "Service")
      const vip = ipv4(service?.spec?.clusterIP)
      if (vip === null) {
        return yield* new Orchestrator.OrchestratorError({
          operation: "applyPod",
          detail: "the Service got no cluster IP"
        })
      }
      const replicas = yield* replicaAddresses(spec.pod_id)
      yield* applySet(Manifests.pod(spec, settings, { vip, replicas }), POD_KINDS, labels)
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

  /** A pod's runtime as its Deployment, Service and external-IP object report it. */
  const runtimeOf = (
    deployment: LiveObject,
    service: LiveObject | undefined,
    eip: LiveObject | undefined
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
      last_error: failed?.message ?? null
    } satisfies Orchestrator.PodRuntime
  }

  const podStatus = (podId: Ids.PodId) =>
    Effect.gen(function*() {
      const deployments = yield* kube.list(Kinds.Deployment, { [Names.POD]: podId })
      const deployment = deployments[0]
      if (deployment === undefined) return Option.none()
      const services = yield* kube.list(Kinds.Service, { [Names.POD]: podId })
      const eip = yield* kube.read(Kinds.OvnEip, Names.podEip(podId))
      return Option.some(runtimeOf(deployment, services[0], Option.getOrUndefined(eip)))
    }).pipe(Effect.mapError(orchestratorError("podStatus")))

  /** Three cluster-wide list calls by the tenant's label, whatever the number of pods. */
  const podStatuses = (tenantId: Ids.TenantId) =>
    Effect.gen(function*() {
      const selector = { [Names.TENANT]: tenantId }
      const [deployments, services, eips] = yield* Effect.all([
        kube.list(Kinds.Deployment, selector),
        kube.list(Kinds.Service, selector),
        kube.list(Kinds.OvnEip, selector)
      ], { concurrency: 3 })
      const podOf = (o: LiveObject) => o.metadata?.labels?.[Names.POD] as Ids.PodId | undefined
      const serviceOf = new Map<string, LiveObject>()
      for (const service of services) {
        const id = podOf(service)
        if (id !== undefined && !serviceOf.has(id)) serviceOf.set(id, service)
      }
      const eipByName = new Map(eips.map((e) => [e.metadata?.name, e]))
      const statuses = new Map<Ids.PodId, Orchestrator.PodRuntime>()
      for (const deployment of deployments) {
        const id = podOf(deployment)
        if (id === undefined || statuses.has(id)) continue
        statuses.set(id, runtimeOf(deployment, serviceOf.get(id), eipByName.get(Names.podEip(id))))
      }
      return statuses as ReadonlyMap<Ids.PodId, Orchestrator.PodRuntime>
    }).pipe(Effect.mapError(orchestratorError("podStatuses")))

  const applySecurityPlan = (plan: Plan.SecurityPlan) =>
    Effect.gen(function*() {
      const pods = yield* kube.list(Kinds.Pod, { [Names.VPC]: plan.vpc_id }, Names.namespace(plan.vpc_id))
      const addresses = new Map<string, Array<string>>()
      for (const pod of pods) {
        const id = pod.metadata?.labels?.[Names.POD]
        if (id !== undefined) addresses.set(id, [...(addresses.get(id) ?? []), ...podIps(pod)])
      }
      const acls = yield* Effect.try({
        try: () => OvnAcl.render(plan, (id) => addresses.get(id) ?? []),
        catch: (e) => new Orchestrator.OrchestratorError({ operation: "applySecurityPlan", detail: String(e) })
      })
      yield* Effect.forEach(plan.subnets, (s) =>
        Effect.gen(function*() {
          // The Subnet is rendered whole (one field manager owns it); its other fields come
          // from the live object applySubnet wrote. A subnet not in the cluster is skipped.
          const live = yield* kube.read(Kinds.Subnet, Names.subnet(s.subnet_id))
          const shape = Option.flatMapNullable(live, Manifests.subnetShapeOf)
          if (Option.isSome(shape)) yield* kube.apply(Manifests.subnet(shape.value, acls.get(s.subnet_id) ?? []))
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
      Effect.flatMap(owned(NETWORK_KINDS, { [Names.VPC]: vpcId }), deleteAll).pipe(
        Effect.mapError(orchestratorError("deleteVpc"))
      ),
    applySubnet: (spec) =>
      Effect.gen(function*() {
        // Keep the ACLs the last security plan put there; applySecurityPlan replaces them.
        const live = yield* kube.read(Kinds.Subnet, Names.subnet(spec.subnet_id))
        const acls: ReadonlyArray<OvnAcl.Acl> = Option.match(live, {
          onNone: () => [],
          onSome: (s) => s.spec?.acls ?? []
        })
        yield* kube.apply(Manifests.subnet(spec, acls))
        yield* applySet(Manifests.subnetEgress(spec), [Kinds.OvnSnatRule], {
          [Names.SUBNET]: spec.subnet_id,
          [Names.COMPONENT]: "subnet-egress"
        })
      }).pipe(Effect.mapError(orchestratorError("applySubnet"))),
    deleteSubnet: (_vpcId, subnetId) =>
      Effect.flatMap(owned([Kinds.OvnSnatRule, Kinds.Subnet], { [Names.SUBNET]: subnetId }), deleteAll).pipe(
        Effect.mapError(orchestratorError("deleteSubnet"))
      ),
    applySecurityPlan,
    applyPod,
    recreatePod: (spec) =>
      // The Service (the VIP) and the external IP stay; only the workload starts over.
      kube.delete(Kinds.Deployment, Names.workload(spec.pod_id), Names.namespace(spec.vpc_id)).pipe(
        Effect.mapError(orchestratorError("recreatePod")),
        Effect.zipRight(applyPod(spec))
      ),
    restartPod: (podId) =>
      // Deleting the replicas restarts them without touching the Deployment's template.
      Effect.flatMap(owned([Kinds.Pod], { [Names.POD]: podId }), deleteAll).pipe(
        Effect.mapError(orchestratorError("restartPod"))
      ),
    deletePod: (podId) =>
      Effect.flatMap(owned(POD_KINDS, { [Names.POD]: podId }), deleteAll).pipe(
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
            : Effect.asVoid(kube.apply(Manifests.registrySecret(spec, nameOf(ns), vpcId as Ids.VpcId)))
        }, { discard: true })
      }).pipe(Effect.mapError(orchestratorError("applyRegistrySecret"))),
    deleteRegistrySecret: (tenantId, name) =>
      Effect.flatMap(owned([Kinds.Secret], { [Names.TENANT]: tenantId, [Names.REGISTRY]: name }), deleteAll).pipe(
        Effect.mapError(orchestratorError("deleteRegistrySecret"))
      ),
    deleteTenant: (tenantId) =>
      Effect.flatMap(owned(NETWORK_KINDS, { [Names.TENANT]: tenantId }), deleteAll).pipe(
        Effect.mapError(orchestratorError("deleteTenant"))
      )
  })
})

/** The Orchestrator on the cluster `KubeApi` talks to. */
export const layer = (options: Options = {}) => Layer.effect(Orchestrator.Orchestrator, make(options))
