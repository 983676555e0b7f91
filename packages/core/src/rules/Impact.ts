/**
 * Change impact: exactly which traffic a change to a VPC's rules moves from allowed to denied
 * and from denied to allowed, before it is made. Each direction's flow space is split by what
 * decides each part (a rule, the always-allowed core network, or the implied default), for the
 * rules now and after; the parts whose action differs are the impact, each with what decides it
 * before and after. Over boxes (`Analysis`): exact, not sampled. Pure.
 */
import type { Direction } from "../domain/SecurityRule.js"
import type { Box } from "./Analysis.js"
import * as Analysis from "./Analysis.js"
import type { Verdict } from "./Evaluate.js"
import { INFRASTRUCTURE } from "./Evaluate.js"
import type { Rule, VpcContext } from "./RuleSet.js"
import { enforced } from "./RuleSet.js"

/** A part of the flow space with what decides it. */
export interface Decided {
  readonly box: Box
  readonly verdict: Verdict
}

/** Traffic whose verdict the change flips. */
export interface Change {
  readonly direction: Direction
  readonly box: Box
  readonly before: Verdict
  readonly after: Verdict
}

const FULL_REMOTE = [0, 0xffffffff] as const

const implied = (direction: Direction): Verdict =>
  direction === "egress"
    ? { action: "allow", decided_by: { kind: "implied", key: "implied-allow-egress" } }
    : { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } }

/** Every flow of a direction: each protocol, every port, every address, every local endpoint. */
const everything = (context: VpcContext): Array<Box> =>
  Analysis.PROTOCOLS.map((protocol) => ({
    protocol,
    ports: protocol === "icmp" ? Analysis.NO_PORT : Analysis.ALL_PORTS,
    remote: FULL_REMOTE,
    locals: Analysis.universe(context)
  }))

/** The direction's flow space, split into disjoint parts by what decides each. */
export const partition = (rules: ReadonlyArray<Rule>, context: VpcContext, direction: Direction): Array<Decided> => {
  const infra = Analysis.infrastructureBoxes(context)
  const parts: Array<Decided> = infra.map((box) => ({ box, verdict: INFRASTRUCTURE }))
  const covered: Array<Box> = [...infra]
  for (const rule of enforced(rules, context).filter((r) => r.direction === direction)) {
    const verdict: Verdict = { action: rule.action, decided_by: { kind: "rule", rule_id: rule.id } }
    // A rule's own boxes may overlap (ports 80-90,85): each piece is decided once.
    for (const box of Analysis.boxesOf(rule, context)) {
      for (const piece of Analysis.subtractAll([box], covered)) parts.push({ box: piece, verdict })
      covered.push(box)
    }
  }
  const fallback = implied(direction)
  for (const box of Analysis.subtractAll(everything(context), covered)) parts.push({ box, verdict: fallback })
  return parts
}

/** The flows two boxes share, or null. */
export const intersection = (a: Box, b: Box): Box | null => {
  if (!Analysis.intersects(a, b)) return null
  const locals = a.locals === b.locals ? a.locals : new Set([...a.locals].filter((l) => b.locals.has(l)))
  return {
    protocol: a.protocol,
    ports: [Math.max(a.ports[0], b.ports[0]), Math.min(a.ports[1], b.ports[1])],
    remote: [Math.max(a.remote[0], b.remote[0]), Math.min(a.remote[1], b.remote[1])],
    locals
  }
}

const sameVerdict = (a: Verdict, b: Verdict) =>
  a.action === b.action &&
  (a.decided_by.kind === "rule"
    ? b.decided_by.kind === "rule" && a.decided_by.rule_id === b.decided_by.rule_id
    : b.decided_by.kind === "implied" && a.decided_by.key === b.decided_by.key)

const sameLocals = (a: ReadonlySet<string>, b: ReadonlySet<string>) =>
  a === b || (a.size === b.size && [...a].every((l) => b.has(l)))

const adjacent = (a: readonly [number, number], b: readonly [number, number]) => a[1] + 1 === b[0] || b[1] + 1 === a[0]

const span = (a: readonly [number, number], b: readonly [number, number]) =>
  [Math.min(a[0], b[0]), Math.max(a[1], b[1])] as const

/** `a` and `b` as one box, when they differ in one dimension only and touch there. */
const merged = (a: Change, b: Change): Change | null => {
  if (a.direction !== b.direction || a.box.protocol !== b.box.protocol) return null
  if (!sameVerdict(a.before, b.before) || !sameVerdict(a.after, b.after)) return null
  const ports = a.box.ports[0] === b.box.ports[0] && a.box.ports[1] === b.box.ports[1]
  const remote = a.box.remote[0] === b.box.remote[0] && a.box.remote[1] === b.box.remote[1]
  const locals = sameLocals(a.box.locals, b.box.locals)
  if (ports && remote) return { ...a, box: { ...a.box, locals: new Set([...a.box.locals, ...b.box.locals]) } }
  if (ports && locals && adjacent(a.box.remote, b.box.remote)) {
    return { ...a, box: { ...a.box, remote: span(a.box.remote, b.box.remote) } }
  }
  if (remote && locals && adjacent(a.box.ports, b.box.ports)) {
    return { ...a, box: { ...a.box, ports: span(a.box.ports, b.box.ports) } }
  }
  return null
}

/** Joins boxes that form one, until none do: fewer, larger boxes covering the same flows. */
const coalesce = (changes: ReadonlyArray<Change>): Array<Change> => {
  const out = [...changes]
  let joined = true
  while (joined) {
    joined = false
    for (let i = 0; i < out.length && !joined; i++) {
      for (let j = i + 1; j < out.length; j++) {
        const m = merged(out[i]!, out[j]!)
        if (m !== null) {
          out[i] = m
          out.splice(j, 1)
          joined = true
          break
        }
      }
    }
  }
  return out
}

/**
 * Each set of `from`'s endpoints as the endpoints of `to` it became: a subnet with the pods
 * added to it, "elsewhere" with the subnets added and their pods.
 */
const grown = (from: VpcContext, to: VpcContext) => {
  const former = Analysis.formerAtom(from, to)
  const successors = new Map<string, Array<string>>()
  for (const atom of Analysis.universe(to)) {
    const was = former(atom)
    successors.set(was, [...(successors.get(was) ?? []), atom])
  }
  return (locals: ReadonlySet<string>): ReadonlySet<string> =>
    new Set([...locals].flatMap((atom) => successors.get(atom) ?? []))
}

/**
 * The traffic whose action differs between `before` and `after` (the VPC's rules now and as
 * the change leaves them), as disjoint boxes, each with what decides it before and after.
 * `grownTo` is the VPC's context after the change when the change also adds subnets or pods
 * (or blocks to the tenant's VPCs); boxes then name the endpoints as they will be.
 */
export const diff = (
  before: ReadonlyArray<Rule>,
  after: ReadonlyArray<Rule>,
  context: VpcContext,
  grownTo: VpcContext = context
): Array<Change> => {
  const changes: Array<Change> = []
  const lift = grownTo === context ? null : grown(context, grownTo)
  for (const direction of ["ingress", "egress"] as const) {
    const parts = partition(before, context, direction)
    const then = lift === null ? parts : parts.map((p) => ({ ...p, box: { ...p.box, locals: lift(p.box.locals) } }))
    const byProtocol = new Map(Analysis.PROTOCOLS.map((p) => [p, then.filter((t) => t.box.protocol === p)]))
    for (const n of partition(after, grownTo, direction)) {
      for (const t of byProtocol.get(n.box.protocol)!) {
        if (n.verdict.action === t.verdict.action) continue
        const box = intersection(n.box, t.box)
        if (box !== null) changes.push({ direction, box, before: t.verdict, after: n.verdict })
      }
    }
  }
  return coalesce(changes)
}
