/**
 * What gets where (tenant; own VPCs only), one answer per question: `evaluate` (one VPC's
 * rules, one direction), `explain` (the flows from one endpoint to another on a port, end to
 * end) and `reachability` (every pair of a VPC's endpoints on every port) all ask the same
 * engine (`rules/Reach.ts`) about the same ends, so the three can never disagree: each says
 * `allowed` (every flow), `partial` (some) or `denied` (none), with a concrete flow of each
 * side, and names the VPC whose rules judge each half.
 */
import { Context, Effect, Either, Layer, Option } from "effect"
import { TRUSTED } from "../domain/Common.js"
import type { ExplainEndpoint, ExplainQuery } from "../domain/FlowExplanation.js"
import { ExplainedHalf, ExplainedRoute, FlowExplanation } from "../domain/FlowExplanation.js"
import type { DecidedFlow, PathFlow } from "../domain/FlowReach.js"
import { FlowVerdict } from "../domain/FlowReach.js"
import type { SubnetId, VpcId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import * as PortRanges from "../domain/PortRanges.js"
import type { TenantPrincipal } from "../domain/Principal.js"
import type { ReachabilityDetail, ReachabilityEndpoint } from "../domain/ReachabilityMatrix.js"
import { ReachabilityMatrix, ReachabilityPair } from "../domain/ReachabilityMatrix.js"
import type { FlowQuery } from "../domain/SecurityRule.js"
import type { VpcRecord } from "../domain/Vpc.js"
import { InvalidInput, RuleValidation } from "../Errors.js"
import type { NotFound, ServiceUnavailable, TooManyRequests } from "../Errors.js"
import { storeUnavailable } from "../ports/Failures.js"
import { connectionsOf, judgeOf, vpcContextOf } from "../readmodel/Derived.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import type { Derivation, TenantState } from "../readmodel/TenantState.js"
import { Vpcs } from "../resources/vpcs/Vpcs.js"
import * as Analysis from "../rules/Analysis.js"
import type * as Evaluate from "../rules/Evaluate.js"
import type * as Paths from "../rules/Paths.js"
import * as Reach from "../rules/Reach.js"
import * as Reachability from "../rules/Reachability.js"
import * as RuleSet from "../rules/RuleSet.js"
import * as Cooperative from "./Cooperative.js"
import { Fairness } from "./Fairness.js"
import { NetworkApplier } from "./NetworkApplier.js"

type Failure = NotFound | RuleValidation | ServiceUnavailable

export interface TrafficShape {
  /** One VPC's rules, one direction: the flows between a local end and a remote one. */
  readonly evaluate: (caller: TenantPrincipal, query: typeof FlowQuery.Type) => Effect.Effect<FlowVerdict, Failure>
  /**
   * The flows from one endpoint to another on a port, end to end and each half alone. A question
   * it cannot answer is `InvalidInput` naming the parameter: a query's problem, 400 as every one is.
   */
  readonly explain: (
    caller: TenantPrincipal,
    vpcId: VpcId,
    query: ExplainQuery
  ) => Effect.Effect<FlowExplanation, NotFound | InvalidInput | ServiceUnavailable | TooManyRequests>
  /**
   * A page of the pairs of the VPC's endpoints: what gets through end to end on every port, and
   * where the next page starts (none on the last). Computed a slice at a time (`Cooperative`).
   */
  readonly reachability: (
    caller: TenantPrincipal,
    vpcId: VpcId,
    page: ReachabilityPage
  ) => Effect.Effect<
    { readonly matrix: ReachabilityMatrix; readonly next: Reachability.PairKey | undefined },
    NotFound | InvalidInput | ServiceUnavailable | TooManyRequests
  >
}

/** A flow of `evaluate`'s body it cannot judge: the security-rule endpoints' 422. */
const invalid = (field: string, message: string) => RuleValidation.field(field, message)

/** A question of `explain`'s query it cannot answer: invalid parameters, 400. */
const unanswerable = (field: string, message: string) => InvalidInput.field(field, message)

/** Port intervals as the API writes them (`80,8000-8080`). */
const formatPorts = (intervals: ReadonlyArray<Reach.Interval>) =>
  PortRanges.format(intervals.map(([from, to]) => ({ from, to })))

/** What decides, as the API names it: a rule by id and name, or an implied rule by key. */
const decisionIn = (state: TenantState) => (verdict: Evaluate.Verdict) => ({
  action: verdict.action,
  decided_by: verdict.decided_by.kind === "rule"
    ? {
      kind: "rule" as const,
      rule_id: verdict.decided_by.rule_id,
      name: state.rule(verdict.decided_by.rule_id)?.name ?? ""
    }
    : verdict.decided_by
})

/** Where a local endpoint is, as the API names it: a pod (with its subnet), a subnet, or neither. */
const placeOf = (state: TenantState, atom: string) => {
  const local = Reach.localOf(atom)
  if (local.pod_id !== undefined) {
    return { pod_id: local.pod_id, subnet_id: state.pod(local.pod_id)?.subnet_id ?? null }
  }
  return { pod_id: null, subnet_id: local.subnet_id ?? null }
}

const pathFlowOf = (state: TenantState, path: Reach.Path): PathFlow => {
  const decision = decisionIn(state)
  return {
    protocol: path.protocol,
    port: path.port,
    source: { ip: Net.formatIpv4(path.source.ip), vpc_id: path.source.vpc, ...placeOf(state, path.source.atom) },
    destination: {
      ip: Net.formatIpv4(path.destination.ip),
      vpc_id: path.destination.vpc,
      ...placeOf(state, path.destination.atom)
    },
    egress: path.egress === null ? null : decision(path.egress),
    ingress: path.ingress === null ? null : decision(path.ingress),
    route: path.route
  }
}

/**
 * The subnet of the tenant's that holds `ip`: one of `vpc`'s, else of a VPC peered with it, else
 * any. VPCs that are not peered may use the same block; from inside one, its own is meant, and
 * then the one a route leads to.
 */
const subnetHolding = (state: TenantState, vpc: VpcId, ip: number) => {
  const holds = (s: { readonly cidr: string }) => Net.contains(Net.cidrOf(s.cidr), ip)
  const peers = connectionsOf(state).peers.get(vpc) ?? []
  return state.subnetsOf(vpc).find(holds) ??
    [...peers].flatMap((peer) => state.subnetsOf(peer)).find(holds) ??
    state.subnets.find(holds)
}

/** What stops a flow on its path, as a half's verdict names it. */
const pathDecision = (blocked: Paths.Blocked) => ({
  action: "deny" as const,
  decided_by: { kind: "path" as const, reason: blocked.reason, detail: blocked.detail }
})

const pathOrNull = (state: TenantState, path: Reach.Path | null) => path === null ? null : pathFlowOf(state, path)

/**
 * What every page of a VPC's reachability shares: each VPC's rules as they judge flows, and the
 * VPC's endpoints (`Reachability.map`). It reads every VPC's rules and contexts, so it is kept
 * while the tenant's rules, VPCs, subnets, pods and address sets are unchanged.
 */
const ReachMap: Derivation<{ readonly vpc: VpcRecord; readonly peeringCidr: string | null }, Reachability.VpcMap> = {
  key: ({ vpc }) => vpc.id,
  inputs: (state, { peeringCidr }) => [
    state.entryOf("rules"),
    state.entryOf("vpcs"),
    state.entryOf("subnets"),
    state.entryOf("pods"),
    state.entryOf("addressSets"),
    peeringCidr
  ],
  compute: (state, { peeringCidr, vpc }) => {
    const ruleSet = (of: VpcId) => ({
      rules: state.rulesOf(of).map(RuleSet.fromRecord),
      context: vpcContextOf(state, of, peeringCidr)
    })
    const others = new Map(state.vpcs.filter((v) => v.id !== vpc.id).map((v) => [v.id, ruleSet(v.id)] as const))
    return Reachability.map(ruleSet(vpc.id), others)
  }
}

/** A pair of ends as the API answers it: each end named, each protocol's ports with a flow of each side. */
const pairView = (state: TenantState, pair: Reachability.Pair): ReachabilityPair => {
  const nameOf = (id: string) => (state.vpc(id) ?? state.subnet(id) ?? state.pod(id))?.name ?? ""
  const endpoint = (e: Reachability.Endpoint): ReachabilityEndpoint => {
    switch (e.kind) {
      case "subnet":
        return { kind: "subnet", subnet_id: e.subnet_id, name: nameOf(e.subnet_id) }
      case "pod":
        return { kind: "pod", pod_id: e.pod_id, name: nameOf(e.pod_id) }
      case "internet":
        return { kind: "internet" }
      case "vpc":
        return { kind: "vpc", vpc_id: e.vpc_id, name: nameOf(e.vpc_id) }
    }
  }
  const witnesses = (ports: Reach.Ports) => ({
    allowed_flow: pathOrNull(state, ports.witness?.allowed ?? null),
    denied_flow: pathOrNull(state, ports.witness?.denied ?? null)
  })
  const portsReach = (ports: Reach.Ports) => ({
    allowed: formatPorts(ports.allowed),
    partial: formatPorts(ports.partial),
    ...witnesses(ports)
  })
  return ReachabilityPair.make({
    from: endpoint(pair.from),
    to: endpoint(pair.to),
    tcp: portsReach(pair.reach.tcp),
    udp: portsReach(pair.reach.udp),
    icmp: { reach: Reach.reachAt(pair.reach.icmp, Analysis.NO_PORT[0]), ...witnesses(pair.reach.icmp) }
  }, TRUSTED)
}

/** Which pairs of a VPC's reachability a request asks for: `Reachability.Selection` as the API words it. */
export interface ReachabilityPage {
  readonly detail: ReachabilityDetail
  /** A subnet, pod or VPC id of the tenant's, or `internet`. */
  readonly endpoint?: string | undefined
  readonly after?: Reachability.PairKey | undefined
  readonly limit: number
}

/** A port as a question takes it: none for icmp, required for tcp and udp; else refused as `refuse` words it. */
const portFor = <E>(refuse: (field: string, message: string) => E, protocol: string, port: number | undefined) =>
  protocol === "icmp"
    ? (port === undefined ? Either.right(null) : Either.left(refuse("port", "icmp has no ports")))
    : (port === undefined ? Either.left(refuse("port", `required for ${protocol}`)) : Either.right(port))

export class Traffic extends Context.Tag("@tenet/core/Traffic")<Traffic, TrafficShape>() {
  static readonly layer = Layer.effect(
    Traffic,
    Effect.gen(function*() {
      const vpcs = yield* Vpcs
      const applier = yield* NetworkApplier
      const readModel = yield* ReadModel
      const fairness = yield* Fairness

      const stateOf = (caller: TenantPrincipal) => readModel.stateOf(caller.tenant_id).pipe(storeUnavailable)

      const evaluate = Effect.fn("Traffic.evaluate")(function*(caller: TenantPrincipal, query: typeof FlowQuery.Type) {
        const vpc = yield* vpcs.owned(caller, query.vpc_id)
        const context = yield* applier.context(vpc)
        if ((query.remote_ip === undefined) === (query.remote_vpc_id === undefined)) {
          return yield* invalid("remote_ip", "give exactly one of remote_ip and remote_vpc_id")
        }
        const port = yield* portFor(invalid, query.protocol, query.port)
        if (query.remote_vpc_id !== undefined && !context.vpcs.has(query.remote_vpc_id)) {
          return yield* invalid("remote_vpc_id", `${query.remote_vpc_id} is not one of your VPCs`)
        }
        if (query.target_subnet_id !== undefined && !context.subnets.has(query.target_subnet_id)) {
          return yield* invalid("target_subnet_id", `${query.target_subnet_id} is not a subnet of this VPC`)
        }
        if (query.target_pod_id !== undefined && !context.pods.has(query.target_pod_id)) {
          return yield* invalid("target_pod_id", `${query.target_pod_id} is not a pod of this VPC`)
        }
        const state = yield* stateOf(caller)
        const peering = yield* applier.peeringCidr
        // The local end: a pod, a subnet (its pods and its other endpoints), or the whole VPC.
        const local = query.target_pod_id !== undefined
          ? [`pod:${query.target_pod_id}`]
          : query.target_subnet_id !== undefined
          ? Reach.ends.subnet(context, query.target_subnet_id).locals.map((l) => l.atom)
          : [...Analysis.universe(context)]
        // The remote end, where it is: a VPC of the tenant's (every address of its subnets), or an address.
        const remoteEnd = (): Reach.End => {
          if (query.remote_vpc_id !== undefined) {
            return Reach.ends.vpc(vpcContextOf(state, query.remote_vpc_id, peering))
          }
          const ip = Net.ipv4Of(query.remote_ip!)
          const subnet = subnetHolding(state, vpc.id, ip)
          return subnet === undefined
            ? Reach.ends.outside(context, ip)
            : Reach.ends.address(vpcContextOf(state, subnet.vpc_id, peering), subnet.id as SubnetId, ip)
        }
        const end = remoteEnd()
        const remote = { network: end.network, addresses: end.locals.flatMap((l) => l.addresses) }
        const answer = Reach.half(judgeOf(state, vpc.id, context), query.direction, local, remote, query.protocol, port)
        const decided = (path: Reach.Path | null): DecidedFlow | null => {
          if (path === null) return null
          const judged = query.direction === "egress" ? path.egress! : path.ingress!
          const [here, there] = query.direction === "egress"
            ? [path.source, path.destination]
            : [path.destination, path.source]
          return {
            flow: {
              direction: query.direction,
              protocol: path.protocol,
              port: path.port,
              remote_ip: Net.formatIpv4(there.ip),
              local: placeOf(state, here.atom)
            },
            ...(path.route === null ? decisionIn(state)(judged) : pathDecision(path.route))
          }
        }
        return FlowVerdict.make({
          reach: answer.reach,
          allowed: answer.reach === "allowed",
          allowed_flow: decided(answer.allowed),
          denied_flow: decided(answer.denied)
        }, TRUSTED)
      })

      const explain = (caller: TenantPrincipal, vpcId: VpcId, query: ExplainQuery) =>
        fairness.expensive(caller.tenant_id, explained(caller, vpcId, query))

      const explained = Effect.fn("Traffic.explain")(
        function*(caller: TenantPrincipal, vpcId: VpcId, query: ExplainQuery) {
          const vpc = yield* vpcs.owned(caller, vpcId)
          const state = yield* stateOf(caller)
          const peering = yield* applier.peeringCidr
          const port = yield* portFor(unanswerable, query.protocol, query.port)
          const contextOf = (id: VpcId) => vpcContextOf(state, id, peering)
          /** An end as given: what it is, and the flows' end it stands for (with its VPC's context). */
          const resolve = (field: "from" | "to", text: string) => {
            if (text === "internet") {
              return Either.right({
                endpoint: { kind: "internet" } as ExplainEndpoint,
                end: Reach.ends.internet(contextOf(vpc.id))
              })
            }
            const ip = Net.parseIpv4(text)
            if (Option.isSome(ip)) {
              const subnet = subnetHolding(state, vpc.id, ip.value)
              return Either.right({
                endpoint: {
                  kind: "address",
                  ip: text,
                  subnet_id: subnet?.id ?? null,
                  vpc_id: subnet?.vpc_id ?? null
                } as ExplainEndpoint,
                end: subnet === undefined
                  ? Reach.ends.outside(contextOf(vpc.id), ip.value)
                  : Reach.ends.address(contextOf(subnet.vpc_id), subnet.id, ip.value)
              })
            }
            const pod = state.pod(text)
            if (pod !== undefined) {
              return Either.right({
                endpoint: { kind: "pod", pod_id: pod.id, vpc_id: pod.vpc_id, name: pod.name } as ExplainEndpoint,
                end: Reach.ends.pod(contextOf(pod.vpc_id), pod.id)
              })
            }
            const subnet = state.subnet(text)
            if (subnet !== undefined) {
              return Either.right({
                endpoint: {
                  kind: "subnet",
                  subnet_id: subnet.id,
                  vpc_id: subnet.vpc_id,
                  name: subnet.name
                } as ExplainEndpoint,
                end: Reach.ends.subnet(contextOf(subnet.vpc_id), subnet.id)
              })
            }
            const other = state.vpc(text)
            if (other !== undefined) {
              return Either.right({
                endpoint: { kind: "vpc", vpc_id: other.id, name: other.name } as ExplainEndpoint,
                end: Reach.ends.vpc(contextOf(other.id))
              })
            }
            return Either.left(
              unanswerable(
                field,
                `${JSON.stringify(text)} is not a pod, subnet or VPC of yours, "internet" or an IPv4 address`
              )
            )
          }
          const from = yield* resolve("from", query.from)
          const to = yield* resolve("to", query.to)
          if (from.end.vpc !== vpc.id && to.end.vpc !== vpc.id) {
            return yield* unanswerable("from", `neither end is in VPC ${vpc.id}`)
          }
          const judges = new Map(
            [from.end.vpc, to.end.vpc].flatMap((id) =>
              id === null ? [] : [[id, judgeOf(state, id, contextOf(id))] as const]
            )
          )
          const answer = Reach.explain(judges, from.end, to.end, query.protocol, port)
          const half = (vpcOf: VpcId | null, part: Reach.Answer) =>
            ExplainedHalf.make({
              vpc_id: vpcOf,
              reach: part.reach,
              allowed_flow: pathOrNull(state, part.allowed),
              denied_flow: pathOrNull(state, part.denied)
            }, TRUSTED)
          const empty = (end: Reach.End) => end.locals.every((l) => l.addresses.length === 0)
          const note = empty(from.end)
            ? `no flow: ${query.from} has no address to send from (a VPC without subnets has none)`
            : empty(to.end)
            ? `no flow: ${query.to} has no address to send to (a VPC without subnets has none)`
            : null
          return FlowExplanation.make({
            vpc_id: vpc.id,
            from: from.endpoint,
            to: to.endpoint,
            protocol: query.protocol,
            port,
            reach: answer.reach,
            allowed_flow: pathOrNull(state, answer.allowed),
            denied_flow: pathOrNull(state, answer.denied),
            egress: half(from.end.vpc, answer.egress),
            ingress: half(to.end.vpc, answer.ingress),
            route: ExplainedRoute.make(
              { reach: answer.route.reach, blocked_by: answer.route.denied?.route ?? null },
              TRUSTED
            ),
            note
          }, TRUSTED)
        }
      )

      const reachability = (caller: TenantPrincipal, vpcId: VpcId, page: ReachabilityPage) =>
        fairness.expensive(caller.tenant_id, reachable(caller, vpcId, page))

      const reachable = Effect.fn("Traffic.reachability")(
        function*(caller: TenantPrincipal, vpcId: VpcId, page: ReachabilityPage) {
          const vpc = yield* vpcs.owned(caller, vpcId)
          const state = yield* stateOf(caller)
          const map = state.memo(ReachMap, { vpc, peeringCidr: yield* applier.peeringCidr })
          const around = page.endpoint === undefined ? undefined : Reachability.find(map, page.endpoint)
          if (page.endpoint !== undefined && around === undefined) {
            return yield* InvalidInput.field(
              "endpoint",
              `${JSON.stringify(page.endpoint)} is not a subnet or pod of VPC ${vpc.id}, another VPC of yours, ` +
                "or \"internet\""
            )
          }
          const pairs: Array<ReachabilityPair> = []
          let last: Reachability.PairKey | undefined
          let next: Reachability.PairKey | undefined
          yield* Cooperative.forEach(
            Reachability.pairs(map, { detail: page.detail, around, after: page.after }),
            ([from, to]) => {
              if (pairs.length === page.limit) {
                next = last
                return false
              }
              pairs.push(pairView(state, Reachability.pair(map, from, to)))
              last = Reachability.pairKey(from, to)
              return true
            }
          )
          return {
            matrix: ReachabilityMatrix.make({ vpc_id: vpc.id, detail: page.detail, pairs }, TRUSTED),
            next
          }
        }
      )

      return Traffic.of({ evaluate, explain, reachability })
    })
  )
}
