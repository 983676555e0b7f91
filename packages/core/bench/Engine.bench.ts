/**
 * The rule engine on a 200-rule VPC with 8 subnets and 50 pods: decisions with the compiled
 * matcher and with the naive reference interpreter the engine's properties are checked against,
 * matcher and plan compilation, exact analysis, a rule change's impact (and a topology post's),
 * and the reachability matrix (every pair of the subnets, the pods and the internet: 3,400 pairs).
 */
import type { Ids, RuleSet } from "@tenet/core"
import { Analysis, Evaluate, Impact, Net, Plan, Reachability } from "@tenet/core"
import { Reference } from "@tenet/core/testing"
import { bench, describe } from "vitest"

const id = <B>(n: number) => `00000000-0000-4000-8000-${n.toString().padStart(12, "0")}` as B
const vpc = id<Ids.VpcId>(1)
const subnets = Array.from({ length: 8 }, (_, i) => id<Ids.SubnetId>(100 + i))
const pods = Array.from({ length: 50 }, (_, i) => id<Ids.PodId>(200 + i))
const context: RuleSet.VpcContext = {
  vpc_id: vpc,
  subnets: new Map(subnets.map((s, i) => [s, Net.cidrOf(`10.0.${i}.0/24`)])),
  pods: new Map(pods.map((p, i) => [p, subnets[i % subnets.length]!])),
  vpcs: new Map([[vpc, subnets.map((_, i) => Net.cidrOf(`10.0.${i}.0/24`))]]),
  addressSets: new Map(),
  infrastructure: [Net.cidrOf("100.64.0.0/16")],
  paths: {
    name: "bench",
    internet: null,
    peers: new Set(),
    overlaps: new Map(),
    published: new Map(),
    names: new Map()
  }
}

// A deterministic pseudo-random 200-rule VPC, so runs compare.
let seed = 42
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
const pick = <A>(xs: ReadonlyArray<A>) => xs[Math.floor(random() * xs.length)]!
const rules: Array<RuleSet.Rule> = Array.from({ length: 200 }, (_, i) => {
  const protocol = pick(["tcp", "udp", "icmp", "all"] as const)
  const port = 1 + Math.floor(random() * 60000)
  return {
    id: id<Ids.SecurityRuleId>(1000 + i),
    seq: i,
    priority: 1 + Math.floor(random() * 2000),
    direction: pick(["ingress", "egress"] as const),
    action: pick(["allow", "deny"] as const),
    protocol,
    ports: protocol === "tcp" || protocol === "udp"
      ? [{ from: port, to: port + Math.floor(random() * 100) }]
      : null,
    remote: random() < 0.8
      ? {
        kind: "cidr",
        cidr: Net.cidrOf(
          `${Math.floor(random() * 224)}.${Math.floor(random() * 256)}.0.0/${8 + Math.floor(random() * 17)}`
        )
      }
      : { kind: "vpc", vpc_id: vpc },
    target: random() < 0.6
      ? { kind: "vpc" }
      : random() < 0.5
      ? { kind: "subnet", subnet_id: pick(subnets) }
      : { kind: "pods", pod_ids: [pick(pods), pick(pods)] },
    enabled: random() < 0.95
  }
})
const flows: Array<RuleSet.Flow> = Array.from({ length: 1000 }, () => ({
  direction: pick(["ingress", "egress"] as const),
  protocol: pick(["tcp", "udp", "icmp"] as const),
  port: 1 + Math.floor(random() * 65535),
  remote: { kind: "ip", ip: Math.floor(random() * 2 ** 32) },
  local: { pod_id: pick(pods) }
}))
const matcher = Evaluate.matcher(rules, context)

/** The VPC before a topology post added its last subnet and that subnet's pods. */
const added = subnets[subnets.length - 1]!
const before: RuleSet.VpcContext = {
  ...context,
  subnets: new Map([...context.subnets].filter(([s]) => s !== added)),
  pods: new Map([...context.pods].filter(([, s]) => s !== added)),
  vpcs: new Map([[vpc, subnets.slice(0, -1).map((_, i) => Net.cidrOf(`10.0.${i}.0/24`))]])
}

const naive = (flow: RuleSet.Flow) => Reference.verdict(rules, context, flow)

describe("rule engine, 200-rule VPC", () => {
  // 1,000 flows per iteration: decisions per second are ops/s x 1,000.
  bench("decide 1000 flows, compiled matcher", () => {
    for (let i = 0; i < flows.length; i++) matcher.decide(flows[i]!)
  })
  bench("decide 1000 flows, reference interpreter", () => {
    for (let i = 0; i < flows.length; i++) naive(flows[i]!)
  }, { iterations: 20 })
  bench("compile the matcher", () => {
    Evaluate.matcher(rules, context)
  })
  bench("compile the plan", () => {
    Plan.compile(rules, context)
  })
  bench("analyze", () => {
    Analysis.analyze(rules, context)
  }, { iterations: 10 })
  bench("impact of moving one rule to the front (dry run)", () => {
    Impact.diff(rules, rules.map((r, i) => (i === 100 ? { ...r, priority: 0 } : r)), context)
  }, { iterations: 10 })
  bench("impact of a topology post adding a subnet with 6 pods (dry run)", () => {
    Impact.diff(rules, rules, before, context)
  })
  bench("reachability matrix", () => {
    Reachability.matrix({ rules, context }, new Map())
  }, { iterations: 10 })
})
