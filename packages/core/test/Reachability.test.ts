/**
 * Reachability is exact: a port is in a pair's reach exactly when every flow from the source
 * to the destination on it is allowed by the reference interpreter, both where it leaves (the
 * source's egress) and where it arrives (the destination's ingress). Verdicts change only at
 * the edges of the blocks rules, subnets and the core network name, so checking the addresses
 * at and beside every edge inside the endpoints' blocks checks every address.
 */
import { describe, expect, it } from "@effect/vitest"
import { Net, Reachability, type RuleSet } from "@tenet/core"
import * as Reference from "./Reference.js"
import { context, otherVpcs, rules } from "./World.js"

type Interval = readonly [number, number]
const range = (c: Net.Cidr): Interval => [Net.networkOf(c), Net.broadcastOf(c)]

/** Every block anything is decided by. */
const edges = (all: ReadonlyArray<RuleSet.Rule>, ctx: RuleSet.VpcContext): Array<number> => {
  const blocks = [
    ...ctx.infrastructure,
    ...[...ctx.vpcs.values()].flat(),
    ...all.flatMap((r) => (r.remote.kind === "cidr" ? [r.remote.cidr] : []))
  ].map(range)
  return [...new Set(blocks.flatMap(([a, b]) => [a - 1, a, b, b + 1]).filter((n) => n >= 0 && n <= 0xffffffff))]
}

/** The addresses to try inside an endpoint's ranges: their ends, and every edge inside. */
const samples = (ranges: ReadonlyArray<Interval>, cuts: ReadonlyArray<number>) =>
  ranges.flatMap(([a, b]) => [a, b, ...cuts.filter((n) => a <= n && n <= b)])

const localOf = (endpoint: Reachability.Endpoint): RuleSet.Flow["local"] =>
  endpoint.kind === "pod"
    ? { pod_id: endpoint.pod_id }
    : endpoint.kind === "subnet"
    ? { subnet_id: endpoint.subnet_id }
    : {}

const rangesOf = (endpoint: Reachability.Endpoint, internet: ReadonlyArray<Interval>): ReadonlyArray<Interval> => {
  switch (endpoint.kind) {
    case "subnet":
      return [range(context.subnets.get(endpoint.subnet_id)!)]
    case "pod":
      return [range(context.subnets.get(context.pods.get(endpoint.pod_id)!)!)]
    case "internet":
      return internet
    case "vpc":
      return context.vpcs.get(endpoint.vpc_id)!.map(range)
  }
}

/** What the reference says of every flow on `protocol`/`port` between the two ends. */
const allAllowed = (
  own: ReadonlyArray<RuleSet.Rule>,
  peer: ReadonlyArray<RuleSet.Rule>,
  pair: Reachability.Pair,
  protocol: "tcp" | "udp" | "icmp",
  port: number | null,
  internet: ReadonlyArray<Interval>
) => {
  const cuts = edges([...own, ...peer], context)
  const froms = samples(rangesOf(pair.from, internet), cuts)
  const tos = samples(rangesOf(pair.to, internet), cuts)
  const inside = (e: Reachability.Endpoint) => e.kind === "subnet" || e.kind === "pod"
  const peerContext = { ...context, vpc_id: otherVpcs[0]! }
  return froms.every((from) =>
    tos.every((to) => {
      const flow = (direction: "ingress" | "egress", remote: number, local: RuleSet.Flow["local"]) => ({
        direction,
        protocol,
        port,
        remote: { kind: "ip" as const, ip: remote },
        local
      })
      const leaves = inside(pair.from)
        ? Reference.verdict(own, context, flow("egress", to, localOf(pair.from))).action === "allow"
        : pair.from.kind === "vpc"
        ? Reference.verdict(peer, peerContext, flow("egress", to, {})).action === "allow"
        : true
      const arrives = inside(pair.to)
        ? Reference.verdict(own, context, flow("ingress", from, localOf(pair.to))).action === "allow"
        : pair.to.kind === "vpc"
        ? Reference.verdict(peer, peerContext, flow("ingress", from, {})).action === "allow"
        : true
      return leaves && arrives
    })
  )
}

const PORTS = [1, 15, 18, 20, 22, 25, 30, 33, 36, 40, 65535]

describe("reachability", () => {
  it.prop("a port is reachable exactly when every flow on it is allowed where it leaves and where it arrives", [
    rules,
    rules
  ], ([own, peerRules]) => {
    // The peer VPC is seen with its rules in a world where its own blocks are the first other VPC's.
    const peer = {
      rules: peerRules,
      context: { ...context, vpc_id: otherVpcs[0]!, subnets: new Map(), pods: new Map() }
    }
    const pairs = Reachability.matrix({ rules: own, context }, new Map([[otherVpcs[0]!, peer]]))
    const tenantBlocks = [...context.vpcs.values()].flat().map(range)
    const internet = Reachability.internetOf(context)
    expect(internet.every((r) => !tenantBlocks.some((b) => b[0] <= r[1] && r[0] <= b[1]))).toBe(true)
    for (const pair of pairs.filter((_, i) => i % 7 === 0)) {
      for (const protocol of ["tcp", "udp", "icmp"] as const) {
        for (const port of protocol === "icmp" ? [null] : PORTS) {
          expect(
            Reachability.reaches(pair.reach, protocol, port),
            `${JSON.stringify(pair.from)} -> ${JSON.stringify(pair.to)} ${protocol}/${port}`
          ).toBe(allAllowed(own, peerRules, pair, protocol, port, internet))
        }
      }
    }
  }, { fastCheck: { numRuns: 60 } })
})
