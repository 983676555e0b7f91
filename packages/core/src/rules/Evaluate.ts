/**
 * `evaluate`: would this flow be allowed, and what decided it? The first enforced rule (in
 * evaluation order) that matches decides; beneath the rules, core network traffic is always
 * allowed, other ingress denied and all egress allowed.
 */
import type { SecurityRuleId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { ImpliedRuleKey, RuleAction } from "../domain/SecurityRule.js"
import type { Flow, Rule, VpcContext } from "./RuleSet.js"
import * as RuleSet from "./RuleSet.js"
import { enforced } from "./RuleSet.js"

export type DecidedBy =
  | { readonly kind: "rule"; readonly rule_id: SecurityRuleId }
  | { readonly kind: "implied"; readonly key: ImpliedRuleKey }

export interface Verdict {
  readonly action: RuleAction
  readonly decided_by: DecidedBy
}

const implied = (key: ImpliedRuleKey, action: RuleAction): Verdict => ({ action, decided_by: { kind: "implied", key } })

/** Traffic to or from the core network, which no rule can block. */
export const isInfrastructure = (flow: Flow, context: VpcContext): boolean =>
  flow.remote.kind === "ip" && context.infrastructure.some((c) => Net.contains(c, (flow.remote as { ip: number }).ip))

/** Core network traffic's verdict, whatever the rules say. */
export const INFRASTRUCTURE: Verdict = implied("implied-allow-infrastructure", "allow")
const IMPLIED_EGRESS = implied("implied-allow-egress", "allow")
const IMPLIED_INGRESS = implied("implied-deny-ingress", "deny")

/** Beneath every rule. */
export const fallback = (flow: Flow): Verdict => flow.direction === "egress" ? IMPLIED_EGRESS : IMPLIED_INGRESS

/** A VPC's rules compiled for deciding many flows: build once per change, then `decide`. */
export interface Matcher {
  readonly decide: (flow: Flow) => Verdict
}

/** A rule reduced to integer and set tests, with its verdict built once. */
interface CompiledRule {
  readonly verdict: Verdict
  /** Port ranges as [from, to, from, to, ...]; null for every port. */
  readonly ports: ReadonlyArray<number> | null
  /** For a remote address: the rule's blocks (`RuleSet.remoteBlocks`), as networks and masks. */
  readonly networks: ReadonlyArray<number>
  readonly masks: ReadonlyArray<number>
  /** For a remote VPC (a flow naming a VPC): the VPCs this rule's remote covers. */
  readonly vpcs: ReadonlySet<string>
  /** The local subnet the rule targets, the pods it targets, or neither (the whole VPC). */
  readonly subnet: string | undefined
  readonly pods: ReadonlySet<string> | undefined
}

/** Whether every address of `block` is in one of `ranges` (disjoint, as `RuleSet.remoteRanges` gives them). */
const within = (block: Net.Cidr, ranges: ReadonlyArray<readonly [number, number]>) => {
  const first = Net.networkOf(block)
  const last = Net.broadcastOf(block)
  return ranges.some(([from, to]) => from <= first && last <= to)
}

const compileRule = (rule: Rule, context: VpcContext): CompiledRule => {
  const blocks = RuleSet.remoteBlocks(rule.remote, context)
  // A flow naming a VPC matches a remote VPC by name, and an address remote whose addresses hold all its blocks.
  const ranges = rule.remote.kind === "vpc" ? [] : RuleSet.remoteRanges(rule.remote, context)
  const vpcs = rule.remote.kind === "vpc"
    ? new Set<string>([rule.remote.vpc_id])
    : new Set<string>(
      [...context.vpcs].filter(([, bs]) => bs.length > 0 && bs.every((b) => within(b, ranges))).map(([id]) => id)
    )
  return {
    verdict: { action: rule.action, decided_by: { kind: "rule", rule_id: rule.id } },
    ports: rule.ports === null ? null : rule.ports.flatMap((r) => [r.from, r.to]),
    networks: blocks.map(Net.networkOf),
    masks: blocks.map((b) => Net.maskOf(b.prefix)),
    vpcs,
    subnet: rule.target.kind === "subnet" ? rule.target.subnet_id : undefined,
    pods: rule.target.kind === "pods" ? new Set(rule.target.pod_ids) : undefined
  }
}

const PROTOCOLS = ["tcp", "udp", "icmp"] as const

/**
 * One direction and protocol's rules, in evaluation order, indexed by port: the ports 0-65535
 * cut at every rule's range ends into intervals over which every rule either covers all ports
 * or none, and for each interval the rules that can match a port in it. A flow without a port
 * can only match the rules that name no ports.
 */
interface PortIndex {
  /** Interval k is [starts[k], starts[k + 1]). */
  readonly starts: Int32Array
  readonly candidates: ReadonlyArray<ReadonlyArray<CompiledRule>>
  readonly portless: ReadonlyArray<CompiledRule>
}

const covers = (rule: CompiledRule, port: number) => {
  const ports = rule.ports
  if (ports === null) return true
  for (let k = 0; k < ports.length; k += 2) {
    if (port >= ports[k]! && port <= ports[k + 1]!) return true
  }
  return false
}

const indexByPort = (rules: ReadonlyArray<CompiledRule>): PortIndex => {
  const cuts = new Set<number>([0])
  for (const rule of rules) {
    for (let k = 0; rule.ports !== null && k < rule.ports.length; k += 2) {
      cuts.add(rule.ports[k]!)
      cuts.add(rule.ports[k + 1]! + 1)
    }
  }
  const starts = Int32Array.from([...cuts].sort((a, b) => a - b))
  return {
    starts,
    candidates: Array.from(starts, (start) => rules.filter((rule) => covers(rule, start))),
    portless: rules.filter((rule) => rule.ports === null)
  }
}

/** The rules that can match `port`: the candidates of the interval holding it. */
const candidatesFor = (index: PortIndex, port: number | null): ReadonlyArray<CompiledRule> => {
  if (port === null) return index.portless
  const starts = index.starts
  let low = 0
  let high = starts.length - 1
  while (low < high) {
    const middle = (low + high + 1) >> 1
    if (starts[middle]! <= port) low = middle
    else high = middle - 1
  }
  return index.candidates[low]!
}

/**
 * The matcher of the enforced rules: in evaluation order, one port index per direction and
 * protocol, each rule reduced to masks, flat port ranges and sets; deciding a flow is then a
 * binary search and a scan of the rules its port can match, with integer comparisons and no
 * allocation.
 */
export const matcher = (rules: ReadonlyArray<Rule>, context: VpcContext): Matcher => {
  const ordered = enforced(rules, context)
  const lists = new Map<string, PortIndex>()
  for (const direction of ["ingress", "egress"] as const) {
    for (const protocol of PROTOCOLS) {
      lists.set(
        direction + protocol,
        indexByPort(
          ordered.filter((r) => r.direction === direction && (r.protocol === "all" || r.protocol === protocol))
            .map((r) => compileRule(r, context))
        )
      )
    }
  }
  const infraNetworks = context.infrastructure.map(Net.networkOf)
  const infraMasks = context.infrastructure.map((c) => Net.maskOf(c.prefix))

  const decide = (flow: Flow): Verdict => {
    const remote = flow.remote
    const ip = remote.kind === "ip" ? remote.ip : -1
    if (ip >= 0) {
      for (let i = 0; i < infraNetworks.length; i++) {
        if (((ip & infraMasks[i]!) >>> 0) === infraNetworks[i]) return INFRASTRUCTURE
      }
    }
    const podId = flow.local.pod_id
    const subnet = podId !== undefined ? context.pods.get(podId) : flow.local.subnet_id
    const list = candidatesFor(lists.get(flow.direction + flow.protocol)!, flow.port)
    for (let i = 0; i < list.length; i++) {
      const rule = list[i]!
      if (ip >= 0) {
        let hit = false
        for (let k = 0; k < rule.networks.length; k++) {
          if (((ip & rule.masks[k]!) >>> 0) === rule.networks[k]) {
            hit = true
            break
          }
        }
        if (!hit) continue
      } else if (!rule.vpcs.has((remote as { readonly vpc_id: string }).vpc_id)) {
        continue
      }
      if (rule.subnet !== undefined && subnet !== rule.subnet) continue
      if (rule.pods !== undefined && (podId === undefined || !rule.pods.has(podId))) continue
      return rule.verdict
    }
    return fallback(flow)
  }
  return { decide }
}

/** One flow's verdict; for many flows over the same rules, build the `matcher` once and `decide`. */
export const evaluate = (rules: ReadonlyArray<Rule>, context: VpcContext, flow: Flow): Verdict =>
  matcher(rules, context).decide(flow)
