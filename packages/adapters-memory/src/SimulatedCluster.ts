/**
 * A simulated cluster that behaves like one: objects must be applied in dependency order
 * (VPC, then subnet, then pod), every pod gets a virtual IP from the service range that
 * stays with it until it is deleted, `external_inbound` pods get an address from the external
 * subnet, replicas become ready after a start-up delay, and autoscaled pods stay within their
 * bounds.
 *
 * Its switches inject the failures a real cluster has: applies that fail (all of them, or
 * after a number of successes, to fail midway through a batch), an unreachable API server,
 * a pod that stopped, slow deletes and slow calls; its drift switches change it behind
 * Tenet's back and announce it in `changes`, as a real cluster's watches do, so the controller
 * that repairs a real cluster repairs this one.
 */
import type { Ids, Net as NetTypes, Plan } from "@tenet/core"
import { Net, Orchestrator } from "@tenet/core"
import { Clock, Context, Duration, Effect, Layer, Option, PubSub, Stream } from "effect"

export interface Options {
  /** Where virtual IPs come from; Kubernetes' default service range. */
  readonly serviceCidr?: string
  /** How long a started replica takes to become ready. */
  readonly startup?: Duration.DurationInput
}

interface SimPod {
  readonly spec: Orchestrator.PodSpec
  readonly vip: number
  readonly externalIp: number | null
  readonly startedAt: number
  readonly stopped: boolean
  readonly deleting: boolean
  readonly restarts: number
  readonly lastError: string | null
}

/** What the cluster holds, for tests to look at. */
export interface ClusterSnapshot {
  readonly vpcs: ReadonlyArray<Orchestrator.VpcSpec>
  readonly subnets: ReadonlyArray<Orchestrator.SubnetSpec>
  readonly plans: ReadonlyArray<Plan.SecurityPlan>
  readonly pods: ReadonlyArray<{
    readonly spec: Orchestrator.PodSpec
    readonly vip: string
    readonly external_ip: string | null
    readonly restarts: number
    /** The registry secrets the pod pulls its image with. */
    readonly image_pull_secrets: ReadonlyArray<string>
  }>
  readonly registrySecrets: ReadonlyArray<Omit<Orchestrator.RegistrySecretSpec, "password">>
}

export class ClusterSwitches extends Context.Tag("@tenet/adapters-memory/ClusterSwitches")<ClusterSwitches, {
  /** Every change fails with `detail` until `heal`. */
  readonly failApplies: (detail: string) => Effect.Effect<void>
  /** The next `successes` changes succeed, every later one fails with `detail` until `heal`. */
  readonly failAfter: (successes: number, detail: string) => Effect.Effect<void>
  /** While false, every call, reads included, fails as if the API server were down. */
  readonly setReachable: (reachable: boolean) => Effect.Effect<void>
  /** The pod's workload stops running (as after a crash with healing off) until restarted or recreated. */
  readonly stopPod: (podId: Ids.PodId) => Effect.Effect<void>
  /** Deletes take this long; meanwhile the pod reports `deleting`. */
  readonly setDeleteDelay: (delay: Duration.DurationInput) => Effect.Effect<void>
  /** Every call takes this long. */
  readonly setLatency: (latency: Duration.DurationInput) => Effect.Effect<void>
  /**
   * Someone other than Tenet deletes the VPC (with what runs in it), a subnet or a pod; it is
   * announced in `changes` as a deletion, as a watch would announce it, unless `announce` is
   * false (as while no replica of Tenet was running).
   */
  readonly deleteBehindTenet: (
    target: "vpc" | "subnet" | "pod",
    id: string,
    options?: { readonly announce?: boolean }
  ) => Effect.Effect<void>
  /** Someone (`manager`, as a field manager is named) empties the VPC's enforced rules. */
  readonly emptyRulesBehindTenet: (vpcId: Ids.VpcId, manager?: string) => Effect.Effect<void>
  /** Clears every fault. */
  readonly heal: Effect.Effect<void>
  readonly snapshot: Effect.Effect<ClusterSnapshot>
}>() {}

export const make = (options: Options = {}) =>
  Effect.sync(() => {
    const serviceRange = Net.cidrOf(options.serviceCidr ?? "10.96.0.0/12")
    const startupMillis = Duration.toMillis(options.startup ?? Duration.zero)

    const vpcs = new Map<Ids.VpcId, Orchestrator.VpcSpec>()
    const subnets = new Map<Ids.SubnetId, Orchestrator.SubnetSpec>()
    const plans = new Map<Ids.VpcId, Plan.SecurityPlan>()
    const pods = new Map<Ids.PodId, SimPod>()
    const registrySecrets = new Map<string, Orchestrator.RegistrySecretSpec>()
    const vipsInUse = new Set<number>()
    const externalInUse = new Set<number>()
    let nextVipOffset = 1
    // Unbounded, so announcing never waits.
    const changes = Effect.runSync(PubSub.unbounded<Orchestrator.ClusterChange>())
    const announceChange = (change: Orchestrator.ClusterChange) => Effect.asVoid(PubSub.publish(changes, change))

    let failAll: string | null = null
    let failAfterCount: { remaining: number; detail: string } | null = null
    let reachable = true
    let deleteDelay = Duration.zero
    let latency = Duration.zero

    const fail = (operation: string, detail: string) =>
      Effect.fail(new Orchestrator.OrchestratorError({ operation, detail }))

    const unreachable = (operation: string) =>
      Effect.suspend(() => reachable ? Effect.void : fail(operation, "the cluster API server is unreachable"))

    const slow = Effect.suspend(() => Duration.isZero(latency) ? Effect.void : Effect.sleep(latency))

    /** Every change goes through here, so the fault switches apply to all of them alike. */
    const change = <A>(operation: string, body: Effect.Effect<A, Orchestrator.OrchestratorError>) =>
      slow.pipe(
        Effect.zipRight(unreachable(operation)),
        Effect.zipRight(Effect.suspend(() => {
          if (failAll !== null) return fail(operation, failAll)
          if (failAfterCount !== null) {
            if (failAfterCount.remaining === 0) return fail(operation, failAfterCount.detail)
            failAfterCount.remaining -= 1
          }
          return body
        }))
      )

    const claimVip = (wanted: string | null): number | null => {
      if (wanted === null) return null
      const address = Option.getOrNull(Net.parseIpv4(wanted))
      if (address === null || vipsInUse.has(address) || !Net.contains(serviceRange, address)) return null
      vipsInUse.add(address)
      return address
    }

    const allocateVip = (): number | null => {
      const size = Net.sizeOf(serviceRange)
      const base = Net.networkOf(serviceRange)
      for (let i = 0; i < size - 2; i++) {
        const offset = 1 + (nextVipOffset - 1 + i) % (size - 2)
        const candidate = base + offset
        if (!vipsInUse.has(candidate)) {
          vipsInUse.add(candidate)
          nextVipOffset = offset + 1
          return candidate
        }
      }
      return null
    }

    const allocateExternal = (pool: { readonly subnet_cidr: string; readonly gateway: string }): number | null => {
      const cidr = Net.cidrOf(pool.subnet_cidr)
      const gateway = Net.ipv4Of(pool.gateway)
      for (let a = Net.networkOf(cidr) + 1; a < Net.broadcastOf(cidr); a++) {
        if (a !== gateway && !externalInUse.has(a)) {
          externalInUse.add(a)
          return a
        }
      }
      return null
    }

    const release = (pod: SimPod) => {
      vipsInUse.delete(pod.vip)
      if (pod.externalIp !== null) externalInUse.delete(pod.externalIp)
    }

    const placementOf = (pod: SimPod): Orchestrator.PodPlacement => ({
      vip: Net.formatIpv4(pod.vip) as NetTypes.Ipv4Address,
      external_ip: pod.externalIp === null ? null : Net.formatIpv4(pod.externalIp) as NetTypes.Ipv4Address
    })

    const missingSecrets = (spec: Orchestrator.PodSpec) =>
      spec.registry_credentials.filter((name) => !registrySecrets.has(`${spec.tenant_id}/${name}`))

    /** Creates the pod, or updates it keeping its addresses; `restart` starts its replicas afresh. */
    const place = (operation: string, spec: Orchestrator.PodSpec, restart: boolean) =>
      Effect.gen(function*() {
        const subnet = subnets.get(spec.subnet_id)
        if (subnet === undefined || subnet.vpc_id !== spec.vpc_id) {
          return yield* fail(operation, `subnet ${spec.subnet_id} does not exist in VPC ${spec.vpc_id}`)
        }
        const now = yield* Clock.currentTimeMillis
        const existing = pods.get(spec.pod_id)
        // A pod made again (deleted behind Tenet's back) keeps its VIP while it is free.
        const vip = existing?.vip ?? claimVip(spec.vip) ?? allocateVip()
        if (vip === null) return yield* fail(operation, "the service range has no free virtual IP")
        let externalIp = existing?.externalIp ?? null
        if (spec.external_inbound === null && externalIp !== null) {
          externalInUse.delete(externalIp)
          externalIp = null
        } else if (spec.external_inbound !== null && externalIp === null) {
          externalIp = allocateExternal(spec.external_inbound)
          if (externalIp === null) {
            if (existing === undefined) vipsInUse.delete(vip)
            return yield* fail(
              operation,
              `the external subnet ${spec.external_inbound.subnet_cidr} has no free address`
            )
          }
        }
        const missing = missingSecrets(spec)
        const imageChanged = existing !== undefined && existing.spec.image !== spec.image
        const pod: SimPod = {
          spec,
          vip,
          externalIp,
          startedAt: existing === undefined || restart || imageChanged ? now : existing.startedAt,
          stopped: restart ? false : existing?.stopped ?? false,
          deleting: false,
          restarts: (existing?.restarts ?? 0) + (existing !== undefined && restart ? 1 : 0),
          lastError: missing.length > 0 ? `image pull secret not found: ${missing.join(", ")}` : null
        }
        pods.set(spec.pod_id, pod)
        return placementOf(pod)
      })

    const desiredOf = (spec: Orchestrator.PodSpec) =>
      spec.autoscaling === null
        ? spec.replicas
        : Math.min(Math.max(spec.replicas, spec.autoscaling.min_replicas), spec.autoscaling.max_replicas)

    // Each pod's last runtime: pods are replaced, never changed, so a pod's runtime changes
    // only when its replicas come up; until then a status read hands out the same object.
    const runtimes = new WeakMap<SimPod, Orchestrator.PodRuntime>()
    const runtimeOf = (pod: SimPod, now: number): Orchestrator.PodRuntime => {
      const desired = desiredOf(pod.spec)
      const ready = pod.deleting || pod.stopped || pod.lastError !== null || now - pod.startedAt < startupMillis
        ? 0
        : desired
      const last = runtimes.get(pod)
      if (last !== undefined && last.ready_replicas === ready) return last
      const { external_ip, vip } = placementOf(pod)
      const runtime: Orchestrator.PodRuntime = {
        desired_replicas: desired,
        vip,
        external_ip,
        last_error: pod.lastError,
        stale_since: null,
        ready_replicas: ready,
        phase: pod.deleting
          ? "deleting"
          : pod.stopped
          ? "stopped"
          : pod.lastError !== null
          ? "failed"
          : ready === desired
          ? "running"
          : ready === 0
          ? "pending"
          : "degraded"
      }
      runtimes.set(pod, runtime)
      return runtime
    }

    const deletePodNow = (podId: Ids.PodId) => {
      const pod = pods.get(podId)
      if (pod !== undefined) {
        release(pod)
        pods.delete(podId)
      }
    }

    const deletePod = (podId: Ids.PodId) =>
      change(
        "deletePod",
        Effect.gen(function*() {
          const pod = pods.get(podId)
          if (pod === undefined) return
          if (!Duration.isZero(deleteDelay)) {
            pods.set(podId, { ...pod, deleting: true })
            yield* Effect.sleep(deleteDelay)
          }
          deletePodNow(podId)
        })
      )

    const orchestrator = Orchestrator.Orchestrator.of({
      backend: "simulated",
      applyVpc: (spec) => change("applyVpc", Effect.sync(() => void vpcs.set(spec.vpc_id, spec))),
      deleteVpc: (vpcId) =>
        change(
          "deleteVpc",
          Effect.gen(function*() {
            if (!Duration.isZero(deleteDelay)) {
              for (const [id, pod] of pods) if (pod.spec.vpc_id === vpcId) pods.set(id, { ...pod, deleting: true })
              yield* Effect.sleep(deleteDelay)
            }
            for (const [id, pod] of pods) if (pod.spec.vpc_id === vpcId) deletePodNow(id)
            for (const [id, subnet] of subnets) if (subnet.vpc_id === vpcId) subnets.delete(id)
            plans.delete(vpcId)
            vpcs.delete(vpcId)
          })
        ),
      applySubnet: (spec) =>
        change(
          "applySubnet",
          Effect.suspend(() =>
            vpcs.has(spec.vpc_id)
              ? Effect.sync(() => void subnets.set(spec.subnet_id, spec))
              : fail("applySubnet", `VPC ${spec.vpc_id} does not exist`)
          )
        ),
      deleteSubnet: (vpcId, subnetId) =>
        change(
          "deleteSubnet",
          Effect.suspend(() => {
            const inUse = [...pods.values()].some((p) => p.spec.subnet_id === subnetId)
            if (inUse) return fail("deleteSubnet", `subnet ${subnetId} still has pods`)
            if (subnets.get(subnetId)?.vpc_id === vpcId) subnets.delete(subnetId)
            return Effect.void
          })
        ),
      applySecurityPlan: (plan) =>
        change(
          "applySecurityPlan",
          Effect.suspend(() =>
            vpcs.has(plan.vpc_id)
              ? Effect.sync(() => void plans.set(plan.vpc_id, plan))
              : fail("applySecurityPlan", `VPC ${plan.vpc_id} does not exist`)
          )
        ),
      applyPod: (spec) => change("applyPod", place("applyPod", spec, false)),
      recreatePod: (spec) => change("recreatePod", place("recreatePod", spec, true)),
      restartPod: (podId) =>
        change(
          "restartPod",
          Effect.gen(function*() {
            const pod = pods.get(podId)
            if (pod === undefined) return yield* fail("restartPod", `pod ${podId} does not exist`)
            const now = yield* Clock.currentTimeMillis
            pods.set(podId, { ...pod, startedAt: now, stopped: false, restarts: pod.restarts + 1 })
          })
        ),
      deletePod,
      podStatus: (podId) =>
        slow.pipe(
          Effect.zipRight(unreachable("podStatus")),
          Effect.zipRight(Clock.currentTimeMillis),
          Effect.map((now) => Option.map(Option.fromNullable(pods.get(podId)), (pod) => runtimeOf(pod, now)))
        ),
      podStatuses: (tenantId) =>
        slow.pipe(
          Effect.zipRight(unreachable("podStatuses")),
          Effect.zipRight(Clock.currentTimeMillis),
          Effect.map((now) => {
            const statuses = new Map<Ids.PodId, Orchestrator.PodRuntime>()
            for (const [id, pod] of pods) if (pod.spec.tenant_id === tenantId) statuses.set(id, runtimeOf(pod, now))
            return statuses
          })
        ),
      applyRegistrySecret: (spec) =>
        change(
          "applyRegistrySecret",
          Effect.sync(() => void registrySecrets.set(`${spec.tenant_id}/${spec.name}`, spec))
        ),
      deleteRegistrySecret: (tenantId, name) =>
        change("deleteRegistrySecret", Effect.sync(() => void registrySecrets.delete(`${tenantId}/${name}`))),
      deleteTenant: (tenantId) =>
        change(
          "deleteTenant",
          Effect.sync(() => {
            for (const [id, pod] of pods) if (pod.spec.tenant_id === tenantId) deletePodNow(id)
            for (const [id, subnet] of subnets) if (subnet.tenant_id === tenantId) subnets.delete(id)
            for (const [id, vpc] of vpcs) {
              if (vpc.tenant_id === tenantId) {
                vpcs.delete(id)
                plans.delete(id)
              }
            }
            for (const [key, secret] of registrySecrets) if (secret.tenant_id === tenantId) registrySecrets.delete(key)
          })
        ),
      changes: Stream.fromPubSub(changes),
      inventory: slow.pipe(
        Effect.zipRight(unreachable("inventory")),
        Effect.map(() => [
          ...[...vpcs.values()].map((v) => ({
            tenant_id: v.tenant_id,
            vpc_id: v.vpc_id,
            subnet_id: null,
            pod_id: null
          })),
          ...[...subnets.values()].map((s) => ({
            tenant_id: s.tenant_id,
            vpc_id: s.vpc_id,
            subnet_id: s.subnet_id,
            pod_id: null
          })),
          ...[...pods.values()].map(({ spec }) => ({
            tenant_id: spec.tenant_id,
            vpc_id: spec.vpc_id,
            subnet_id: spec.subnet_id,
            pod_id: spec.pod_id
          }))
        ])
      )
    })

    const deleted = (
      owner: { tenant_id: Ids.TenantId; vpc_id: Ids.VpcId; subnet_id?: Ids.SubnetId; pod_id?: Ids.PodId },
      object: string
    ): Orchestrator.ClusterChange => ({
      tenant_id: owner.tenant_id,
      vpc_id: owner.vpc_id,
      subnet_id: owner.subnet_id ?? null,
      pod_id: owner.pod_id ?? null,
      object,
      change: "deleted",
      manager: null,
      fields: []
    })

    const switches = ClusterSwitches.of({
      failApplies: (detail) => Effect.sync(() => void (failAll = detail)),
      failAfter: (successes, detail) => Effect.sync(() => void (failAfterCount = { remaining: successes, detail })),
      setReachable: (value) => Effect.sync(() => void (reachable = value)),
      stopPod: (podId) =>
        Effect.sync(() => {
          const pod = pods.get(podId)
          if (pod !== undefined) pods.set(podId, { ...pod, stopped: true })
        }),
      setDeleteDelay: (delay) => Effect.sync(() => void (deleteDelay = Duration.decode(delay))),
      setLatency: (value) => Effect.sync(() => void (latency = Duration.decode(value))),
      deleteBehindTenet: (target, id, options = {}) =>
        Effect.suspend(() => {
          const announce = (change: Orchestrator.ClusterChange) =>
            options.announce === false ? Effect.void : announceChange(change)
          if (target === "pod") {
            const pod = pods.get(id as Ids.PodId)
            if (pod === undefined) return Effect.void
            deletePodNow(pod.spec.pod_id)
            return announce(deleted(pod.spec, `Pod ${id}`))
          }
          if (target === "subnet") {
            const subnet = subnets.get(id as Ids.SubnetId)
            if (subnet === undefined) return Effect.void
            subnets.delete(subnet.subnet_id)
            return announce(deleted(subnet, `Subnet ${id}`))
          }
          const vpc = vpcs.get(id as Ids.VpcId)
          if (vpc === undefined) return Effect.void
          for (const [podId, pod] of pods) if (pod.spec.vpc_id === vpc.vpc_id) deletePodNow(podId)
          for (const [subnetId, subnet] of subnets) if (subnet.vpc_id === vpc.vpc_id) subnets.delete(subnetId)
          plans.delete(vpc.vpc_id)
          vpcs.delete(vpc.vpc_id)
          return announce(deleted(vpc, `Vpc ${id}`))
        }),
      emptyRulesBehindTenet: (vpcId, manager = "kubectl") =>
        Effect.suspend(() => {
          const vpc = vpcs.get(vpcId)
          const plan = plans.get(vpcId)
          if (vpc === undefined || plan === undefined) return Effect.void
          plans.set(vpcId, { ...plan, entries: [] })
          return announceChange({
            ...deleted(vpc, `plan ${vpcId}`),
            change: "changed",
            manager,
            fields: ["entries"]
          })
        }),
      heal: Effect.sync(() => {
        failAll = null
        failAfterCount = null
        reachable = true
        deleteDelay = Duration.zero
        latency = Duration.zero
      }),
      snapshot: Effect.sync(() => ({
        vpcs: [...vpcs.values()],
        subnets: [...subnets.values()],
        plans: [...plans.values()],
        pods: [...pods.values()].map((pod) => ({
          spec: pod.spec,
          ...placementOf(pod),
          restarts: pod.restarts,
          image_pull_secrets: pod.spec.registry_credentials.map((name) => `${pod.spec.tenant_id}/${name}`)
        })),
        registrySecrets: [...registrySecrets.values()].map(({ password: _, ...rest }) => rest)
      }))
    })

    return { orchestrator, switches }
  })

/** The simulated cluster as the Orchestrator, with its switches. */
export const layer = (options?: Options): Layer.Layer<Orchestrator.Orchestrator | ClusterSwitches> =>
  Layer.effectContext(
    Effect.map(
      make(options),
      ({ orchestrator, switches }) =>
        Context.make(Orchestrator.Orchestrator, orchestrator).pipe(Context.add(ClusterSwitches, switches))
    )
  )
