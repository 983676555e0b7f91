/**
 * The reference interpreter: the spec's evaluation rules written the plainest way (intervals
 * instead of masks, a scan for the earliest matching rule instead of a sort), for the engine's
 * properties to agree with and for the benchmark's naive baseline.
 */
import type { Evaluate, Net, RuleSet } from "@tenet/core"

const range = (c: Net.Cidr) => {
  const size = 2 ** (32 - c.prefix)
  const start = Math.floor(c.address / size) * size
  return [start, start + size - 1] as const
}
const inBlock = (c: Net.Cidr, ip: number) => range(c)[0] <= ip && ip <= range(c)[1]

export const verdict = (
  all: ReadonlyArray<RuleSet.Rule>,
  context: RuleSet.VpcContext,
  f: RuleSet.Flow
): Evaluate.Verdict => {
  if (f.remote.kind === "ip" && context.infrastructure.some((c) => inBlock(c, (f.remote as { ip: number }).ip))) {
    return { action: "allow", decided_by: { kind: "implied", key: "implied-allow-infrastructure" } }
  }
  const resolvable = (r: RuleSet.Rule) =>
    (r.remote.kind !== "vpc" || context.vpcs.has(r.remote.vpc_id)) &&
    (r.target.kind !== "subnet" || context.subnets.has(r.target.subnet_id)) &&
    (r.target.kind !== "pods" || r.target.pod_ids.every((p) => context.pods.has(p)))
  const localSubnet = f.local.pod_id !== undefined ? context.pods.get(f.local.pod_id) : f.local.subnet_id
  const hit = (r: RuleSet.Rule) => {
    if (r.direction !== f.direction) return false
    if (r.protocol !== "all" && r.protocol !== f.protocol) return false
    if (r.ports !== null && !(f.port !== null && r.ports.some((p) => p.from <= f.port! && f.port! <= p.to))) {
      return false
    }
    if (r.target.kind === "subnet" && localSubnet !== r.target.subnet_id) return false
    if (r.target.kind === "pods" && !(f.local.pod_id !== undefined && r.target.pod_ids.includes(f.local.pod_id))) {
      return false
    }
    if (r.remote.kind === "cidr") {
      if (f.remote.kind === "ip") return inBlock(r.remote.cidr, f.remote.ip)
      const [s, e] = range(r.remote.cidr)
      const own = context.vpcs.get(f.remote.vpc_id) ?? []
      return own.length > 0 && own.every((b) => s <= range(b)[0] && range(b)[1] <= e)
    }
    if (f.remote.kind === "vpc") return f.remote.vpc_id === r.remote.vpc_id
    const ip = f.remote.ip
    return (context.vpcs.get(r.remote.vpc_id) ?? []).some((b) => inBlock(b, ip))
  }
  const earlier = (a: RuleSet.Rule, b: RuleSet.Rule) =>
    a.priority !== b.priority ? a.priority < b.priority : a.action !== b.action ? a.action === "deny" : a.seq < b.seq
  let best: RuleSet.Rule | undefined
  for (const r of all) {
    if (r.enabled && resolvable(r) && hit(r) && (best === undefined || earlier(r, best))) best = r
  }
  if (best !== undefined) return { action: best.action, decided_by: { kind: "rule", rule_id: best.id } }
  return f.direction === "egress"
    ? { action: "allow", decided_by: { kind: "implied", key: "implied-allow-egress" } }
    : { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } }
}
