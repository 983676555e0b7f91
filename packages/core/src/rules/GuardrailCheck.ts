/**
 * Guardrail checks, exact: a guardrail's region of flows (`domain/Guardrail.ts`) walked
 * through the VPC's rules in evaluation order, over the same boxes as the analysis and the
 * impact. The first rule (or implied default) that decides a part of the region with the
 * verdict the guardrail forbids is the violation, with a concrete flow of that part as its
 * witness. Core-network traffic is outside every region: no rule can change its verdict. Paths
 * do not decide a violation (a guardrail holds whatever is routed today); each says whether one
 * carries its witness (`Carriage`). Pure.
 */
import { Either } from "effect"
import type { GuardrailRecord } from "../domain/Guardrail.js"
import type { PodId, SubnetId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import * as PortRanges from "../domain/PortRanges.js"
import type { Box } from "./Analysis.js"
import * as Analysis from "./Analysis.js"
import * as Carriage from "./Carriage.js"
import type { Verdict } from "./Evaluate.js"
import { intersection } from "./Impact.js"
import type * as Paths from "./Paths.js"
import type { Flow, Rule, VpcContext } from "./RuleSet.js"
import { enforced } from "./RuleSet.js"

/**
 * A guardrail broken: a flow of its region, the verdict the rules give it instead, and what stops
 * it on its path (null: a path carries it today). A guardrail holds in depth, whatever is routed
 * or published now, so the rules alone choose the witness: a peering made or a pod published
 * elsewhere never makes an old violation look new.
 */
export interface Violation {
  readonly guardrail: GuardrailRecord
  readonly flow: Flow
  readonly verdict: Verdict
  readonly route: Paths.Blocked | null
}

/** The local atoms a guardrail covers in `context`: a subnet covers its other endpoints and its pods. */
const localsOf = (g: GuardrailRecord, context: VpcContext): ReadonlySet<string> => {
  if (g.local === null) return Analysis.universe(context)
  const subnets = new Set<SubnetId>(g.local.subnet_ids.filter((id) => context.subnets.has(id)))
  const pods = new Set<PodId>(g.local.pod_ids.filter((id) => context.pods.has(id)))
  for (const [pod, subnet] of context.pods) if (subnets.has(subnet)) pods.add(pod)
  return new Set([...[...subnets].map((id) => `subnet:${id}`), ...[...pods].map((id) => `pod:${id}`)])
}

/**
 * `f` of a record in a context, kept while both are the same objects: records and contexts are
 * immutable and handed out again while unchanged, so a create checked against 10 guardrails
 * does not redo their regions, nor the boxes of the VPC's rules, every time.
 */
const perContext = <K extends object, A>(f: (key: K, context: VpcContext) => A) => {
  const kept = new WeakMap<K, { readonly context: VpcContext; readonly value: A }>()
  return (key: K, context: VpcContext): A => {
    const found = kept.get(key)
    if (found !== undefined && found.context === context) return found.value
    const value = f(key, context)
    kept.set(key, { context, value })
    return value
  }
}

/** The flows a guardrail holds, as boxes, core network excluded. */
export const regionOf = perContext((g: GuardrailRecord, context: VpcContext): Array<Box> => {
  const locals = localsOf(g, context)
  if (locals.size === 0) return []
  const cidr = Net.cidrOf(g.remote_cidr)
  const remote = [Net.networkOf(cidr), Net.broadcastOf(cidr)] as const
  const protocols = g.protocol === "all" ? Analysis.PROTOCOLS : [g.protocol]
  const ports = g.ports === null ? [Analysis.ALL_PORTS] : Either.getOrThrow(PortRanges.parse(g.ports)).map(
    (r) => [r.from, r.to] as const
  )
  const boxes = protocols.flatMap((protocol) =>
    (protocol === "icmp" ? [Analysis.NO_PORT] : ports).map((p) => ({ protocol, ports: p, remote, locals }))
  )
  return Analysis.subtractAll(boxes, Analysis.infrastructureBoxes(context))
})

const boxesOf = perContext(Analysis.boxesOf)

const implied = (direction: GuardrailRecord["direction"]): Verdict =>
  direction === "egress"
    ? { action: "allow", decided_by: { kind: "implied", key: "implied-allow-egress" } }
    : { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } }

/** The enforced rules in evaluation order, each with its boxes: computed once for every guardrail checked. */
const decidersOf = (rules: ReadonlyArray<Rule>, context: VpcContext) =>
  enforced(rules, context).map((rule) => ({
    rule,
    boxes: boxesOf(rule, context),
    verdict: { action: rule.action, decided_by: { kind: "rule", rule_id: rule.id } } satisfies Verdict
  }))

const firstViolation = (
  g: GuardrailRecord,
  deciders: ReturnType<typeof decidersOf>,
  context: VpcContext
): Violation | null => {
  let remaining = regionOf(g, context)
  const broken = (box: Box, verdict: Verdict): Violation => {
    const flow = Analysis.witness(box, g.direction)
    return { guardrail: g, flow, verdict, route: Carriage.ofFlow(context, flow) }
  }
  for (const { boxes, rule, verdict } of deciders) {
    if (remaining.length === 0) return null
    if (rule.direction !== g.direction) continue
    for (const box of boxes) {
      if (rule.action !== g.require) {
        for (const part of remaining) {
          const hit = intersection(part, box)
          if (hit !== null) return broken(hit, verdict)
        }
      } else {
        remaining = Analysis.subtractAll(remaining, [box])
      }
    }
  }
  const fallback = implied(g.direction)
  return remaining.length > 0 && fallback.action !== g.require ? broken(remaining[0]!, fallback) : null
}

/** Whether `rules` break `g` in `context`: the first part of its region decided the other way. */
export const check = (g: GuardrailRecord, rules: ReadonlyArray<Rule>, context: VpcContext): Violation | null =>
  firstViolation(g, decidersOf(rules, context), context)

/** Every guardrail of `guardrails` that `rules` break in `context`, each with its first violation. */
export const violations = (
  guardrails: ReadonlyArray<GuardrailRecord>,
  rules: ReadonlyArray<Rule>,
  context: VpcContext
): Array<Violation> => {
  if (guardrails.length === 0) return []
  const deciders = decidersOf(rules, context)
  return guardrails.flatMap((g) => firstViolation(g, deciders, context) ?? [])
}
