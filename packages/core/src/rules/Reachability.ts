/**
 * Reachability: for pairs of a VPC's endpoints (its subnets, its pods, the internet, the
 * tenant's other VPCs), what gets from one to the other end to end, on every port of every
 * protocol (`Reach.ports`): the ports every flow gets through on, those some do, and none on
 * the rest. A subnet is every endpoint in it (its pods included), another VPC every endpoint
 * of its subnets, the internet every address outside the tenant's VPCs.
 *
 * The pairs grow with the square of the endpoints (a VPC of 2,000 pods has four million), so
 * they are answered a page at a time, in one order (`pairs`): by their `from` end, then their
 * `to` end, each end by kind (subnets, pods, the internet, other VPCs) and then id. A `VpcMap` holds
 * what every page of one state shares (each VPC's judge, the ends), and each `pair` is computed
 * on its own. `detail: "subnets"` leaves the pods out, a summary of the VPC that stays small
 * however many pods it runs; one endpoint (`around`) narrows the pairs to those it is an end of.
 * Pure.
 */
import type { PodId, SubnetId, VpcId } from "../domain/Ids.js"
import type { ReachabilityDetail } from "../domain/ReachabilityMatrix.js"
import type { FlowProtocol } from "../domain/SecurityRule.js"
import * as Reach from "./Reach.js"
import type { Rule, VpcContext } from "./RuleSet.js"

export type Endpoint =
  | { readonly kind: "subnet"; readonly subnet_id: SubnetId }
  | { readonly kind: "pod"; readonly pod_id: PodId }
  | { readonly kind: "internet" }
  | { readonly kind: "vpc"; readonly vpc_id: VpcId }

/** Which endpoints the pairs are of: the VPC's subnets (and the ends outside it), or its pods too. */
export type Detail = ReachabilityDetail

export interface Pair {
  readonly from: Endpoint
  readonly to: Endpoint
  readonly reach: Readonly<Record<FlowProtocol, Reach.Ports>>
}

/** A VPC's rules with the context they resolve in. */
export interface RuleSetOf {
  readonly rules: ReadonlyArray<Rule>
  readonly context: VpcContext
}

/** An endpoint's place in the order: its kind's rank, then its id (the internet has none). */
export type Key = readonly [number, string]

/** A pair's place in the order: its `from` end's key, then its `to` end's. */
export type PairKey = readonly [number, string, number, string]

/** An endpoint with its place, the flows' end it stands for, and whether it is in the VPC. */
export interface Located {
  readonly endpoint: Endpoint
  readonly key: Key
  readonly end: Reach.End
  readonly inside: boolean
}

const RANK: Record<Endpoint["kind"], number> = { subnet: 0, pod: 1, internet: 2, vpc: 3 }

/** An endpoint's id; the internet's is empty. */
export const idOf = (e: Endpoint): string =>
  e.kind === "subnet" ? e.subnet_id : e.kind === "pod" ? e.pod_id : e.kind === "vpc" ? e.vpc_id : ""

const keyOf = (e: Endpoint): Key => [RANK[e.kind], idOf(e)]

const compareKeys = (a: Key, b: Key) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)

/** What every page of one VPC's pairs shares: each VPC's judge, every end in order, what pairs ask alike. */
export interface VpcMap {
  readonly vpc_id: VpcId
  readonly judges: ReadonlyMap<VpcId, Reach.Judge>
  /** Every endpoint, pods included, in key order. */
  readonly endpoints: ReadonlyArray<Located>
  readonly kept: Reach.Memo
}

const PROTOCOLS: ReadonlyArray<FlowProtocol> = ["tcp", "udp", "icmp"]

/**
 * The VPC's endpoints and judges. `others` are the tenant's other VPCs with their rules (their
 * egress decides what leaves them, their ingress what arrives).
 */
export const map = (own: RuleSetOf, others: ReadonlyMap<VpcId, RuleSetOf>): VpcMap => {
  const context = own.context
  const located = (endpoint: Endpoint, end: Reach.End, inside: boolean): Located => ({
    endpoint,
    key: keyOf(endpoint),
    end,
    inside
  })
  const endpoints: Array<Located> = [
    ...[...context.subnets.keys()].map((subnet_id) =>
      located({ kind: "subnet", subnet_id }, Reach.ends.subnet(context, subnet_id), true)
    ),
    ...[...context.pods.keys()].map((pod_id) =>
      located({ kind: "pod", pod_id }, Reach.ends.pod(context, pod_id), true)
    ),
    located({ kind: "internet" }, Reach.ends.internet(context), false),
    ...[...context.vpcs.keys()].filter((id) => id !== context.vpc_id && others.has(id)).map((vpc_id) =>
      located({ kind: "vpc", vpc_id }, Reach.ends.vpc(others.get(vpc_id)!.context), false)
    )
  ]
  endpoints.sort((a, b) => compareKeys(a.key, b.key))
  return {
    vpc_id: context.vpc_id,
    judges: new Map<VpcId, Reach.Judge>([
      [context.vpc_id, Reach.judge(own.rules, context)],
      ...[...others].map(([id, set]) => [id, Reach.judge(set.rules, set.context)] as const)
    ]),
    endpoints,
    kept: Reach.memo()
  }
}

/** The endpoint of the map that `id` names (a subnet, pod or other VPC by id; `internet`), if any. */
export const find = (m: VpcMap, id: string): Located | undefined =>
  m.endpoints.find((l) => (id === "internet" ? l.endpoint.kind === "internet" : idOf(l.endpoint) === id))

export interface Selection {
  readonly detail: Detail
  /** Only the pairs this endpoint is an end of (with itself too, for a subnet). */
  readonly around?: Located | undefined
  /** Only the pairs after this one. */
  readonly after?: PairKey | undefined
}

/** A pair's place in the order. */
export const pairKey = (from: Located, to: Located): PairKey => [from.key[0], from.key[1], to.key[0], to.key[1]]

/**
 * The ordered pairs of the selection, lazily, in key order: every pair with at least one end in
 * the VPC, a pod never with itself (a subnet with itself is its endpoints with each other).
 */
export function* pairs(m: VpcMap, selection: Selection): Generator<readonly [Located, Located]> {
  const { after, around, detail } = selection
  const shown = m.endpoints.filter((l) => detail === "pods" || l.endpoint.kind !== "pod" || l === around)
  const afterFrom: Key | undefined = after === undefined ? undefined : [after[0], after[1]]
  const afterTo: Key | undefined = after === undefined ? undefined : [after[2], after[3]]
  for (const from of shown) {
    const placed = afterFrom === undefined ? 1 : compareKeys(from.key, afterFrom)
    if (placed < 0) continue
    // Around one endpoint, a pair from any other end has it as its `to`.
    const tos = around === undefined || from === around ? shown : [around]
    for (const to of tos) {
      if (placed === 0 && compareKeys(to.key, afterTo!) <= 0) continue
      if (!from.inside && !to.inside) continue
      if (from === to && from.endpoint.kind === "pod") continue
      yield [from, to]
    }
  }
}

/** What gets from one end to the other, on each protocol. */
export const pair = (m: VpcMap, from: Located, to: Located): Pair => ({
  from: from.endpoint,
  to: to.endpoint,
  reach: Object.fromEntries(
    PROTOCOLS.map((protocol) => [protocol, Reach.ports(m.judges, from.end, to.end, protocol, m.kept)])
  ) as Record<FlowProtocol, Reach.Ports>
})

/** Every pair of the selection (the whole matrix at `detail: "pods"`), computed at once: for tests and small VPCs. */
export const matrix = (own: RuleSetOf, others: ReadonlyMap<VpcId, RuleSetOf>, detail: Detail = "pods"): Array<Pair> => {
  const m = map(own, others)
  return [...pairs(m, { detail })].map(([from, to]) => pair(m, from, to))
}
