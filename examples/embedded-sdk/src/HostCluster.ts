/**
 * The host control plane's own cluster driver, plugged into Tenet's Orchestrator port. Here it
 * records what Tenet asks for (a real one would drive the host's infrastructure); VIPs come
 * from the host's own range and stay with a pod for its life, as the port requires.
 */
import { Net, Orchestrator } from "@tenet/core"
import type { Ids, Plan } from "@tenet/core"
import { Context, Effect, Layer, Option, Stream } from "effect"

export interface Applied {
  readonly vpcs: Map<string, Orchestrator.VpcSpec>
  readonly subnets: Map<string, Orchestrator.SubnetSpec>
  readonly plans: Map<string, Plan.SecurityPlan>
  readonly pods: Map<string, { spec: Orchestrator.PodSpec; vip: Net.Ipv4Address }>
}

/** What the host cluster was asked to run, for the host (and its tests) to look at. */
export class HostState extends Context.Tag("example/HostState")<HostState, Applied>() {}

export const layer = (vipRange = "172.30.0.0/16") =>
  Layer.effectContext(Effect.sync(() => {
    const state: Applied = { vpcs: new Map(), subnets: new Map(), plans: new Map(), pods: new Map() }
    const range = Net.cidrOf(vipRange)
    let next = Net.networkOf(range) + 1
    const place = (spec: Orchestrator.PodSpec) => {
      const vip = state.pods.get(spec.pod_id)?.vip ?? (Net.formatIpv4(next++) as Net.Ipv4Address)
      state.pods.set(spec.pod_id, { spec, vip })
      return Effect.succeed({ vip, external_ip: null })
    }
    const runtimeOf = (
      { spec, vip }: { spec: Orchestrator.PodSpec; vip: Net.Ipv4Address }
    ): Orchestrator.PodRuntime => ({
      phase: "running",
      ready_replicas: spec.replicas,
      desired_replicas: spec.replicas,
      vip,
      external_ip: null,
      last_error: null,
      stale_since: null
    })
    const forget = <K>(map: Map<K, unknown>, key: K) => Effect.sync(() => void map.delete(key))
    const orchestrator = Orchestrator.Orchestrator.of({
      backend: "host-cluster",
      applyVpc: (spec) => Effect.sync(() => void state.vpcs.set(spec.vpc_id, spec)),
      deleteVpc: (vpcId) => forget(state.vpcs, vpcId),
      applySubnet: (spec) => Effect.sync(() => void state.subnets.set(spec.subnet_id, spec)),
      deleteSubnet: (_vpcId, subnetId) => forget(state.subnets, subnetId),
      applySecurityPlan: (plan) => Effect.sync(() => void state.plans.set(plan.vpc_id, plan)),
      applyPod: place,
      recreatePod: place,
      restartPod: () => Effect.void,
      deletePod: (podId: Ids.PodId) => forget(state.pods, podId),
      podStatus: (podId) => Effect.sync(() => Option.map(Option.fromNullable(state.pods.get(podId)), runtimeOf)),
      podStatuses: (tenantId) =>
        Effect.sync(() =>
          new Map(
            Array.from(state.pods.values())
              .filter(({ spec }) => spec.tenant_id === tenantId)
              .map((pod) => [pod.spec.pod_id, runtimeOf(pod)])
          )
        ),
      applyRegistrySecret: () => Effect.void,
      deleteRegistrySecret: () => Effect.void,
      deleteTenant: (tenantId) =>
        Effect.sync(() => {
          for (const [id, vpc] of state.vpcs) if (vpc.tenant_id === tenantId) state.vpcs.delete(id)
        }),
      // Nothing changes this host's state but Tenet: there is no drift to announce.
      changes: Stream.empty,
      inventory: Effect.sync(() => [
        ...[...state.vpcs.values()].map((v) => ({
          tenant_id: v.tenant_id,
          vpc_id: v.vpc_id,
          subnet_id: null,
          pod_id: null
        })),
        ...[...state.subnets.values()].map((s) => ({
          tenant_id: s.tenant_id,
          vpc_id: s.vpc_id,
          subnet_id: s.subnet_id,
          pod_id: null
        })),
        ...[...state.pods.values()].map(({ spec }) => ({
          tenant_id: spec.tenant_id,
          vpc_id: spec.vpc_id,
          subnet_id: spec.subnet_id,
          pod_id: spec.pod_id
        }))
      ])
    })
    return Context.make(HostState, state).pipe(Context.add(Orchestrator.Orchestrator, orchestrator))
  }))
