/**
 * Exact rule analysis, computed over the sets rules match rather than from traffic:
 *
 * - shadowed: earlier rules (or the always-allowed core network) cover all of a rule's
 *   traffic, so it never decides anything;
 * - redundant: removing the rule changes no verdict, because later rules (or the implied
 *   default) decide its traffic the same way;
 * - conflict: an earlier rule with the opposite action takes part of its traffic.
 *
 * A rule's traffic is a union of boxes: one protocol x a port interval x a remote address
 * interval x a set of local endpoints. Endpoints are atoms: each known pod, "any other
 * endpoint of subnet S", and "an endpoint in no known subnet". Box difference is exact, so
 * the verdicts are too. Pure.
 */
import { oncePerRecord } from "../domain/Common.js"
import type { PodId, SecurityRuleId, SubnetId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { Direction, RuleAction } from "../domain/SecurityRule.js"
import { FlowProtocol } from "../domain/SecurityRule.js"
import type { Flow, Rule, VpcContext } from "./RuleSet.js"
import * as RuleSet from "./RuleSet.js"
import { enforced } from "./RuleSet.js"

type Protocol = FlowProtocol
export const PROTOCOLS: ReadonlyArray<Protocol> = FlowProtocol.literals
export const ALL_PORTS = [1, 65535] as const
/** icmp has no ports: its single "port" value. */
export const NO_PORT = [0, 0] as const

export interface Box {
  readonly protocol: Protocol
  readonly ports: readonly [number, number]
  readonly remote: readonly [number, number]
  readonly locals: ReadonlySet<string>
}

/** The local atom of an endpoint in none of the VPC's known subnets. */
export const ELSEWHERE = "elsewhere"
const podAtom = (id: PodId) => `pod:${id}`
const otherAtom = (id: SubnetId) => `subnet:${id}`

/** Every local endpoint of the VPC, as atoms; one set per context, shared by the rules aimed at the whole VPC. */
export const universe = oncePerRecord((context: VpcContext): ReadonlySet<string> =>
  new Set([
    ELSEWHERE,
    ...[...context.subnets.keys()].map(otherAtom),
    ...[...context.pods.keys()].map(podAtom)
  ])
)

/**
 * Where each endpoint of `to` was in `from`, a context it grew from by subnets and pods (a
 * topology post): a new pod's address was in its subnet's, or elsewhere when the subnet is new
 * too; a new subnet's was elsewhere.
 */
export const formerAtom = (from: VpcContext, to: VpcContext) => (atom: string): string => {
  if (atom.startsWith("pod:")) {
    const pod = atom.slice(4) as PodId
    if (from.pods.has(pod)) return atom
    const subnet = to.pods.get(pod)
    return subnet !== undefined && from.subnets.has(subnet) ? otherAtom(subnet) : ELSEWHERE
  }
  return atom.startsWith("subnet:") && !from.subnets.has(atom.slice(7) as SubnetId) ? ELSEWHERE : atom
}

const localsOf = (rule: Rule, context: VpcContext): ReadonlySet<string> => {
  switch (rule.target.kind) {
    case "vpc":
      return universe(context)
    case "subnet": {
      const subnet = rule.target.subnet_id
      return new Set([
        otherAtom(subnet),
        ...[...context.pods].filter(([, s]) => s === subnet).map(([pod]) => podAtom(pod))
      ])
    }
    case "pods":
      return new Set(rule.target.pod_ids.map(podAtom))
  }
}

const interval = (cidr: Net.Cidr) => [Net.networkOf(cidr), Net.broadcastOf(cidr)] as const

/** The boxes a rule matches. */
export const boxesOf = (rule: Rule, context: VpcContext): Array<Box> => {
  const protocols = rule.protocol === "all" ? PROTOCOLS : [rule.protocol]
  const remotes = RuleSet.remoteRanges(rule.remote, context)
  const locals = localsOf(rule, context)
  return protocols.flatMap((protocol) => {
    const ports: ReadonlyArray<readonly [number, number]> = protocol === "icmp"
      ? [NO_PORT]
      : rule.ports === null
      ? [ALL_PORTS]
      : rule.ports.map((r) => [r.from, r.to] as const)
    return ports.flatMap((p) => remotes.map((remote) => ({ protocol, ports: p, remote, locals })))
  })
}

const overlap = (a: readonly [number, number], b: readonly [number, number]) =>
  Math.max(a[0], b[0]) <= Math.min(a[1], b[1])

/** The parts of `a` outside `b`, as disjoint intervals. */
const minus = (a: readonly [number, number], b: readonly [number, number]): Array<readonly [number, number]> => {
  if (!overlap(a, b)) return [a]
  const out: Array<readonly [number, number]> = []
  if (a[0] < b[0]) out.push([a[0], b[0] - 1])
  if (a[1] > b[1]) out.push([b[1] + 1, a[1]])
  return out
}

/** Whether two sets of endpoints share one; called for every pair of boxes, so it allocates nothing. */
const meet = (a: ReadonlySet<string>, b: ReadonlySet<string>) => {
  if (a === b) return a.size > 0
  if (a.size > b.size) return meet(b, a)
  for (const local of a) {
    if (b.has(local)) return true
  }
  return false
}

export const intersects = (a: Box, b: Box) =>
  a.protocol === b.protocol && overlap(a.ports, b.ports) && overlap(a.remote, b.remote) && meet(a.locals, b.locals)

/** `a` minus `b`, as disjoint boxes. */
export const subtract = (a: Box, b: Box): Array<Box> => {
  if (!intersects(a, b)) return [a]
  const out: Array<Box> = minus(a.ports, b.ports).map((ports) => ({ ...a, ports }))
  const ports = [Math.max(a.ports[0], b.ports[0]), Math.min(a.ports[1], b.ports[1])] as const
  out.push(...minus(a.remote, b.remote).map((remote) => ({ ...a, ports, remote })))
  const remote = [Math.max(a.remote[0], b.remote[0]), Math.min(a.remote[1], b.remote[1])] as const
  const locals = new Set([...a.locals].filter((l) => !b.locals.has(l)))
  if (locals.size > 0) out.push({ ...a, ports, remote, locals })
  return out
}

export const subtractAll = (boxes: ReadonlyArray<Box>, cover: ReadonlyArray<Box>): Array<Box> =>
  cover.reduce<Array<Box>>((remaining, c) => remaining.flatMap((b) => subtract(b, c)), [...boxes])

/** A concrete flow inside the box: the evidence behind a verdict. */
export const witness = (box: Box, direction: Direction): Flow => {
  const local = [...box.locals][0]!
  return {
    direction,
    protocol: box.protocol,
    port: box.protocol === "icmp" ? null : box.ports[0],
    remote: { kind: "ip", ip: box.remote[0] },
    local: local.startsWith("pod:")
      ? { pod_id: local.slice(4) as PodId }
      : local.startsWith("subnet:")
      ? { subnet_id: local.slice(7) as SubnetId }
      : {}
  }
}

export type FindingKind = "shadowed" | "redundant" | "conflict"

export interface Finding {
  readonly kind: FindingKind
  readonly rule_id: SecurityRuleId
  readonly related_rule_ids: ReadonlyArray<SecurityRuleId>
  /** Traffic the rule still decides (absent when shadowed). */
  readonly witness: Flow | null
}

export const infrastructureBoxes = (context: VpcContext): Array<Box> =>
  context.infrastructure.flatMap((cidr) =>
    PROTOCOLS.map((protocol) => ({
      protocol,
      ports: protocol === "icmp" ? NO_PORT : ALL_PORTS,
      remote: interval(cidr),
      locals: universe(context)
    }))
  )

export const fallbackAction = (direction: Direction): RuleAction => direction === "egress" ? "allow" : "deny"

/**
 * For each enforced rule, the traffic it decides: what it matches minus the core network and
 * minus everything earlier rules of its direction match. Empty means shadowed.
 */
export const decided = (rules: ReadonlyArray<Rule>, context: VpcContext): Map<SecurityRuleId, Array<Box>> => {
  const ordered = enforced(rules, context)
  const infra = infrastructureBoxes(context)
  const out = new Map<SecurityRuleId, Array<Box>>()
  const covered: Record<Direction, Array<Box>> = { ingress: [...infra], egress: [...infra] }
  for (const rule of ordered) {
    const own = boxesOf(rule, context)
    out.set(rule.id, subtractAll(own, covered[rule.direction]))
    covered[rule.direction].push(...own)
  }
  return out
}

/** Findings for every enforced rule of the VPC, in evaluation order. */
export const analyze = (rules: ReadonlyArray<Rule>, context: VpcContext): Array<Finding> => {
  const ordered = enforced(rules, context)
  const boxes = new Map(ordered.map((r) => [r.id, boxesOf(r, context)]))
  const decisions = decided(ordered, context)
  const findings: Array<Finding> = []
  ordered.forEach((rule, index) => {
    const own = boxes.get(rule.id)!
    const earlier = ordered.slice(0, index).filter((e) => e.direction === rule.direction)
    const touching = (others: ReadonlyArray<Rule>) =>
      others.filter((o) => boxes.get(o.id)!.some((b) => own.some((a) => intersects(a, b)))).map((o) => o.id)
    const mine = decisions.get(rule.id)!
    if (mine.length === 0) {
      findings.push({ kind: "shadowed", rule_id: rule.id, related_rule_ids: touching(earlier), witness: null })
      return
    }
    const conflicting = touching(earlier.filter((e) => e.action !== rule.action))
    if (conflicting.length > 0) {
      findings.push({
        kind: "conflict",
        rule_id: rule.id,
        related_rule_ids: conflicting,
        witness: witness(mine[0]!, rule.direction)
      })
    }
    // Without this rule, its traffic falls to the later rules, then to the default.
    let remaining = mine
    const sameWay: Array<SecurityRuleId> = []
    for (const later of ordered.slice(index + 1).filter((l) => l.direction === rule.direction)) {
      const laterBoxes = boxes.get(later.id)!
      if (!remaining.some((r) => laterBoxes.some((l) => intersects(r, l)))) continue
      if (later.action !== rule.action) return
      sameWay.push(later.id)
      remaining = subtractAll(remaining, laterBoxes)
      if (remaining.length === 0) break
    }
    if (remaining.length > 0 && fallbackAction(rule.direction) !== rule.action) return
    findings.push({
      kind: "redundant",
      rule_id: rule.id,
      related_rule_ids: sameWay,
      witness: witness(mine[0]!, rule.direction)
    })
  })
  return findings
}
