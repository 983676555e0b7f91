/**
 * Topology (tenant): VPCs, subnets and pods referenced by name, deployed in one request.
 * Everything is validated first and every problem is named by its field (`subnets[2].vpc_name`),
 * with any the body's schema found (`Topology.Decoded`); then all new records are written in
 * one transaction (nothing is written while there is any problem), and only then is the cluster
 * asked to converge, a failure there being recorded and retried like any apply. Items that
 * already exist as asked are left alone, so posting the same topology again is a no-op.
 */
import { Context, DateTime, Effect, Either, Layer, Option } from "effect"
import { countsOf, violationsOf } from "../changes/Invariants.js"
import { Pipeline } from "../changes/Pipeline.js"
import { TRUSTED } from "../domain/Common.js"
import type { TenantId } from "../domain/Ids.js"
import { randomUuid, SubnetId, VpcId } from "../domain/Ids.js"
import type { Problem } from "../domain/InputProblems.js"
import type { Pod, PodRecord } from "../domain/Pod.js"
import type { TenantPrincipal } from "../domain/Principal.js"
import * as Quota from "../domain/Quota.js"
import type { SubnetRecord } from "../domain/Subnet.js"
import { checkBlock, toSubnet } from "../domain/Subnet.js"
import type { Decoded, TopologyRequest } from "../domain/Topology.js"
import {
  decodedOf,
  SECTIONS,
  TopologyImpact,
  TopologyPod,
  TopologySubnet,
  TopologyView,
  TopologyVpc
} from "../domain/Topology.js"
import type { Tunnel } from "../domain/Tunnel.js"
import { toTunnel } from "../domain/Tunnel.js"
import type { VpcRecord } from "../domain/Vpc.js"
import { toVpc } from "../domain/Vpc.js"
import { Conflict, InvalidInput } from "../Errors.js"
import type {
  Forbidden,
  GuardrailViolated,
  InternalError,
  NotFound,
  ServiceUnavailable,
  TooManyRequests,
  Unauthorized
} from "../Errors.js"
import * as Change from "../kinds/Change.js"
import { storeUnavailable } from "../ports/Failures.js"
import { connectionsOf } from "../readmodel/Derived.js"
import { ownTenant } from "../readmodel/Ownership.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import type { TenantState } from "../readmodel/TenantState.js"
import { Pods } from "../resources/pods/Pods.js"
import { impactOf } from "../resources/securityRules/RulePresentation.js"
import { seededRule } from "../resources/vpcs/Vpcs.js"
import * as Paths from "../rules/Paths.js"
import * as RuleSet from "../rules/RuleSet.js"
import * as BodyCredentials from "./BodyCredentials.js"
import * as Cooperative from "./Cooperative.js"
import { Fairness } from "./Fairness.js"
import { Identity } from "./Identity.js"
import { NetworkApplier } from "./NetworkApplier.js"
import { ProviderConfigs } from "./ProviderConfigs.js"
import { Quotas } from "./Quotas.js"

type Failure = NotFound | InvalidInput | ServiceUnavailable | InternalError | TooManyRequests

/** Where a problem's field is in the body: its list's place, then the item's index (the token first). */
const placeOf = (field: string): readonly [number, number] => {
  const match = /^(\w+)\[(\d+)\]/.exec(field)
  const section = SECTIONS.indexOf((match?.[1] ?? "") as typeof SECTIONS[number])
  return match === null || section < 0 ? [-1, 0] : [section, Number(match[2])]
}

/** Problems in the order of the body they are in, so one item's schema and semantic problems stand together. */
const inBodyOrder = (problems: ReadonlyArray<Problem>): ReadonlyArray<Problem> =>
  problems.map((p, i) => ({ p, i, place: placeOf(p.field) })).sort((a, b) =>
    a.place[0] - b.place[0] || a.place[1] - b.place[1] || a.i - b.i
  ).map(({ p }) => p)

/** `items` by `keyOf`, each group in the items' order. */
const groupBy = <A>(items: ReadonlyArray<A>, keyOf: (item: A) => string): ReadonlyMap<string, ReadonlyArray<A>> => {
  const groups = new Map<string, Array<A>>()
  for (const item of items) {
    const group = groups.get(keyOf(item))
    if (group === undefined) groups.set(keyOf(item), [item])
    else group.push(item)
  }
  return groups
}

/**
 * A pod with its tunnels as the topology shows it: the same object while the pod's view and its
 * tunnels' are, so its JSON is written once (the server keeps each view's) however often the
 * topology is read.
 */
const topologyPods = new WeakMap<Pod, { readonly tunnels: ReadonlyArray<Tunnel>; readonly made: TopologyPod }>()

const topologyPodOf = (pod: Pod, tunnels: ReadonlyArray<Tunnel>): TopologyPod => {
  const last = topologyPods.get(pod)
  if (last !== undefined && last.tunnels.length === tunnels.length && last.tunnels.every((t, i) => t === tunnels[i])) {
    return last.made
  }
  const made = TopologyPod.make({ ...pod, tunnels }, TRUSTED)
  topologyPods.set(pod, { tunnels, made })
  return made
}

export interface TopologiesShape {
  /**
   * With `dryRun`, validates exactly as the real post, creates nothing, and answers what it
   * would create and the flows it would open and close in each VPC.
   */
  readonly deploy: (
    caller: TenantPrincipal,
    tenantId: TenantId,
    input: TopologyRequest | Decoded,
    dryRun?: boolean
  ) => Effect.Effect<TopologyView | TopologyImpact, Failure | Unauthorized | Forbidden | Conflict | GuardrailViolated>
  readonly get: (caller: TenantPrincipal, tenantId: TenantId) => Effect.Effect<TopologyView, Failure>
}

export class Topologies extends Context.Tag("@tenet/core/Topologies")<Topologies, TopologiesShape>() {
  static readonly layer = Layer.effect(
    Topologies,
    Effect.gen(function*() {
      const readModel = yield* ReadModel
      const pipeline = yield* Pipeline
      const fairness = yield* Fairness
      const identity = yield* Identity
      const applier = yield* NetworkApplier
      const pods = yield* Pods
      const configs = yield* ProviderConfigs
      const quotas = yield* Quotas

      /**
       * The tenant's topology: its VPCs, their subnets, their pods with their tunnels. It grows
       * with the pods (thousands), so it is built a slice at a time (`Cooperative`), each pod's
       * tunnels found by its id rather than by scanning them all.
       */
      const view = (tenantId: TenantId) =>
        Effect.gen(function*() {
          const { pods: podRecords, subnets, tunnels, vpcs } = yield* readModel.stateOf(tenantId).pipe(storeUnavailable)
          const podViews = yield* pods.views(tenantId, podRecords)
          const tunnelsOf = groupBy(tunnels.map(toTunnel), (t) => t.pod_id)
          const podsOf = new Map<string, Array<TopologyPod>>()
          yield* Cooperative.forEach(podViews, (pod) => {
            const made = topologyPodOf(pod, tunnelsOf.get(pod.id) ?? [])
            const of = podsOf.get(pod.subnet_id)
            if (of === undefined) podsOf.set(pod.subnet_id, [made])
            else of.push(made)
            return true
          })
          return TopologyView.make({
            tenant_id: tenantId,
            vpcs: vpcs.map((vpc) =>
              TopologyVpc.make({
                ...toVpc(vpc),
                subnets: subnets.filter((s) => s.vpc_id === vpc.id).map((subnet) =>
                  TopologySubnet.make({ ...toSubnet(subnet), pods: podsOf.get(subnet.id) ?? [] }, TRUSTED)
                )
              }, TRUSTED)
            )
          }, TRUSTED)
        })

      const deploy = (caller: TenantPrincipal, tenantId: TenantId, given: TopologyRequest | Decoded, dryRun = false) =>
        fairness.expensive(caller.tenant_id, deployed(caller, tenantId, given, dryRun))

      const deployed = Effect.fn("Topologies.deploy")(
        function*(caller: TenantPrincipal, tenantId: TenantId, given: TopologyRequest | Decoded, dryRun = false) {
          const input = "problems" in given ? given : decodedOf(given)
          yield* ownTenant(caller, tenantId)
          // A token the body's schema refused is among the problems already.
          if (input.token !== undefined) yield* BodyCredentials.check(identity, caller, { token: input.token })
          const now = yield* DateTime.now
          const peering = Option.match(yield* configs.current, {
            onNone: () => null,
            onSome: (c) => c.peering_subnet_cidr
          })
          const state = yield* readModel.stateOf(tenantId).pipe(storeUnavailable)
          const existingVpcs = state.vpcs
          const existingSubnets = state.subnets
          const existingPods = state.pods
          const problems: Array<Problem> = [...input.problems]
          const problem = (field: string, message: string) => void problems.push({ field, message })

          // VPCs: new ones by name; existing ones must match what is asked.
          const vpcByName = new Map(existingVpcs.map((v) => [v.name as string, v]))
          const newVpcs: Array<VpcRecord> = []
          const seen = new Set<string>()
          for (const [i, item] of input.vpcs) {
            if (seen.has(item.name)) {
              problem(`vpcs[${i}].name`, `'${item.name}' is named twice`)
              continue
            }
            seen.add(item.name)
            const existing = vpcByName.get(item.name)
            if (existing !== undefined) {
              if (existing.enable_internet !== item.enable_internet) {
                problem(
                  `vpcs[${i}].enable_internet`,
                  `'${item.name}' exists with enable_internet ${existing.enable_internet}`
                )
              }
              continue
            }
            const record: VpcRecord = {
              id: VpcId.make(randomUuid()),
              tenant_id: tenantId,
              name: item.name,
              enable_internet: item.enable_internet,
              applied: false,
              apply_error: "not yet applied",
              lifecycle: "active",
              deleting_since: null,
              deleting_by: null,
              created_at: now
            }
            newVpcs.push(record)
            vpcByName.set(item.name, record)
          }

          // Subnets: the VPC must be named here or exist; blocks of one VPC must not overlap.
          const subnetsOf = new Map<string, Array<SubnetRecord>>()
          for (const s of existingSubnets) subnetsOf.set(s.vpc_id, [...(subnetsOf.get(s.vpc_id) ?? []), s])
          const newSubnets: Array<SubnetRecord> = []
          for (const [i, item] of input.subnets) {
            const at = `subnets[${i}]`
            const vpc = vpcByName.get(item.vpc_name)
            if (vpc === undefined) {
              problem(`${at}.vpc_name`, `no VPC named '${item.vpc_name}'`)
              continue
            }
            const siblings = subnetsOf.get(vpc.id) ?? []
            const same = siblings.find((s) => s.name === item.name)
            if (same !== undefined) {
              if (newSubnets.includes(same)) {
                problem(`${at}.name`, `'${item.name}' is named twice in VPC '${item.vpc_name}'`)
              } else if (same.cidr !== item.cidr || same.gateway_ip !== item.gateway_ip) {
                problem(`${at}.cidr`, `'${item.name}' exists with cidr ${same.cidr} and gateway ${same.gateway_ip}`)
              }
              continue
            }
            const block = checkBlock(item.cidr, item.gateway_ip, siblings, peering)
            if (Either.isLeft(block)) {
              problem(`${at}.${block.left.field}`, block.left.message)
              continue
            }
            const record: SubnetRecord = {
              id: SubnetId.make(randomUuid()),
              tenant_id: tenantId,
              vpc_id: vpc.id,
              name: item.name,
              cidr: item.cidr,
              gateway_ip: item.gateway_ip,
              created_at: now
            }
            newSubnets.push(record)
            subnetsOf.set(vpc.id, [...siblings, record])
          }

          // Pods: by VPC and subnet name; an existing pod of that name must run the same image.
          const newPods: Array<PodRecord> = []
          for (const [i, item] of input.pods) {
            const at = `pods[${i}]`
            const vpc = vpcByName.get(item.vpc_name)
            if (vpc === undefined) {
              problem(`${at}.vpc_name`, `no VPC named '${item.vpc_name}'`)
              continue
            }
            const subnet = (subnetsOf.get(vpc.id) ?? []).find((s) => s.name === item.subnet_name)
            if (subnet === undefined) {
              problem(`${at}.subnet_name`, `no subnet named '${item.subnet_name}' in VPC '${item.vpc_name}'`)
              continue
            }
            if (newPods.some((p) => p.vpc_id === vpc.id && p.name === item.name)) {
              problem(`${at}.name`, `'${item.name}' is named twice in VPC '${item.vpc_name}'`)
              continue
            }
            const existing = existingPods.find((p) => p.vpc_id === vpc.id && p.name === item.name)
            if (existing !== undefined) {
              if (existing.container_image !== item.container_image) {
                problem(`${at}.container_image`, `'${item.name}' exists with image ${existing.container_image}`)
              }
              continue
            }
            const prepared = yield* pods.prepare(caller, {
              ...item,
              vpc_id: vpc.id,
              subnet_id: subnet.id,
              use_registry_credentials: true,
              external_access: false,
              external_inbound: false,
              auto_healing: false,
              gpu_count: 0
            }).pipe(Effect.either)
            if (Either.isLeft(prepared)) prepared.left.errors.forEach((e) => problem(`${at}.${e.field}`, e.message))
            else newPods.push(prepared.right)
          }

          if (problems.length > 0) return yield* InvalidInput.of(inBodyOrder(problems))

          const addressSets = state.addressSets
          const tunnels = state.tunnels
          const before = {
            vpcs: existingVpcs,
            subnets: existingSubnets,
            pods: existingPods,
            tunnels,
            addressSets,
            connections: connectionsOf(state),
            peeringCidr: peering
          }
          // New VPCs come with their seeded rule only, which names themselves: they peer nothing.
          const after = {
            vpcs: [...existingVpcs, ...newVpcs],
            subnets: [...existingSubnets, ...newSubnets],
            pods: [...existingPods, ...newPods],
            tunnels,
            addressSets,
            connections: Paths.connections({
              vpcs: [...existingVpcs, ...newVpcs],
              subnets: [...existingSubnets, ...newSubnets],
              rules: state.list("rules")
            }),
            peeringCidr: peering
          }
          // Each VPC's rules after the post (a new VPC's: its seeded rule), in its grown context.
          const grown = [
            ...existingVpcs.map((vpc) => ({ vpc, rules: state.rulesOf(vpc.id), created: false })),
            ...newVpcs.map((vpc) => ({ vpc, rules: [seededRule(vpc)], created: true }))
          ].map((v) => {
            const context = RuleSet.contextOf(v.vpc.id, after)
            return { ...v, context, violations: violationsOf(state, v.vpc.id, v.rules, context) }
          })
          if (dryRun) {
            // The quotas the real post would be held to (it is, again, inside its decision).
            const limits = yield* quotas.limitsOf(tenantId)
            const passed = Option.flatMapNullable(limits, (l) =>
              Quota.passed(l, countsOf(state), {
                vpcs: after.vpcs.length,
                subnets: after.subnets.length,
                pods: after.pods.length
              }))
            if (Option.isSome(passed)) return yield* new Conflict({ detail: passed.value })
            const impacts = grown.map((v) =>
              impactOf(
                v.vpc.id,
                RuleSet.contextOf(v.vpc.id, before),
                v.created ? [] : v.rules,
                v.rules,
                v.violations,
                v.context
              )
            )
            const existing = impacts.slice(0, existingVpcs.length)
            const created = impacts.slice(existingVpcs.length)
            return TopologyImpact.make({
              dry_run: true,
              tenant_id: tenantId,
              created: {
                vpcs: newVpcs.map(({ id, name }) => ({ id, name })),
                subnets: newSubnets.map(({ cidr, id, name, vpc_id }) => ({ id, name, vpc_id, cidr })),
                pods: newPods.map(({ id, name, subnet_id, vpc_id }) => ({ id, name, vpc_id, subnet_id }))
              },
              vpcs: [
                ...existing.filter((i) =>
                  i.opened.length + i.closed.length + i.new_findings.length + i.violations.length > 0
                ),
                ...created
              ]
            })
          }

          // Decided on the store's state: the VPCs and subnets it builds on must still be there (the
          // pipeline checks overlaps and guardrails on the state it leaves, decided on every VPC
          // it reaches and on the tenant's scope).
          const made = new Set<string>([...newVpcs.map((v) => v.id), ...newSubnets.map((s) => s.id)])
          const decide = (current: TenantState) => {
            const gone = [
              ...[...newSubnets, ...newPods].map((r) => r.vpc_id).filter((id) =>
                !made.has(id) && current.vpc(id)?.lifecycle !== "active"
              ),
              ...newPods.map((p) => p.subnet_id).filter((id) => !made.has(id) && current.subnet(id) === undefined)
            ]
            if (gone.length > 0) {
              return Effect.fail(
                InvalidInput.field("body", `${gone[0]} was deleted meanwhile; nothing was created`)
              )
            }
            return Effect.succeed({
              writes: [
                ...newVpcs.flatMap((vpc) => [
                  Change.insert({ part: "vpcs", record: vpc }),
                  Change.insert({ part: "rules", record: seededRule(vpc) })
                ]),
                ...newSubnets.map((record) => Change.insert({ part: "subnets", record })),
                ...newPods.map((record) => Change.insert({ part: "pods", record }))
              ],
              decidedOn: [],
              subject: tenantId,
              result: undefined
            })
          }
          yield* pipeline.commit(tenantId, decide, ["Conflict", "GuardrailViolated", "UniqueViolation"]).pipe(
            // A concurrent request took a name between validation and the write: nothing was written.
            Effect.catchTag(
              "UniqueViolation",
              (e) => InvalidInput.field("body", `a name was taken meanwhile (${e.constraint}); nothing was created`)
            )
          )

          // The VPCs made or grown, and those whose rules name or whose routes reach the ones grown.
          const grownVpcs = new Set(newSubnets.map((s) => s.vpc_id))
          const committed = yield* readModel.stateOf(tenantId).pipe(storeUnavailable)
          const touched = new Set([
            ...newVpcs.map((v) => v.id),
            ...grownVpcs,
            ...[...grownVpcs].flatMap((vpc) => [
              ...committed.rulesNaming(vpc).map((r) => r.vpc_id),
              ...(connectionsOf(committed).peers.get(vpc) ?? [])
            ])
          ])
          yield* Effect.forEach(touched, (vpcId) => applier.apply(tenantId, vpcId), {
            concurrency: "unbounded",
            discard: true
          })
          yield* Effect.forEach(newPods, (pod) => pods.apply(tenantId, pod.id), { concurrency: 8, discard: true })
          return yield* view(tenantId)
        }
      )

      return Topologies.of({
        deploy,
        get: (caller, tenantId) =>
          Effect.zipRight(ownTenant(caller, tenantId), fairness.expensive(caller.tenant_id, view(tenantId)))
      })
    })
  )
}
