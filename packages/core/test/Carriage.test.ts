/**
 * What a path carries of a VPC's boxes of flows (impact regions, guardrail witnesses): a box's
 * parts cover it exactly once, and each flow of a part is carried exactly when the reference's
 * paths say so, with the core network carrying everything.
 */
import { describe, expect, it } from "@effect/vitest"
import { Analysis, Carriage, Net, Reach, type RuleSet } from "@tenet/core"
import { Reference } from "@tenet/core/testing"
import { FastCheck as fc } from "effect"
import * as World from "./World.js"

const peerVpc = World.otherVpcs[0]!

const interval = (lowIndex: number, highIndex: number, points: ReadonlyArray<number>) =>
  [Math.min(points[lowIndex]!, points[highIndex]!), Math.max(points[lowIndex]!, points[highIndex]!)] as const

/** Addresses at and beside every block's edges, where a part can begin or end. */
const points = [
  ...new Set(
    [...World.blocks, Net.cidrOf("100.64.0.0/16"), Net.cidrOf("10.0.0.1/32"), Net.cidrOf("172.16.8.0/24")].flatMap((
      c
    ) => [Net.networkOf(c) - 1, Net.networkOf(c), Net.broadcastOf(c), Net.broadcastOf(c) + 1])
  )
].filter((n) => n >= 0 && n <= 0xffffffff).sort((a, b) => a - b)

const box = fc.record({
  protocol: fc.constantFrom("tcp" as const, "udp" as const, "icmp" as const),
  ports: fc.tuple(fc.integer({ min: 10, max: 45 }), fc.integer({ min: 0, max: 10 })),
  remote: fc.tuple(fc.nat(points.length - 1), fc.nat(points.length - 1)),
  locals: fc.subarray([...Analysis.universe(World.context)], { minLength: 1 })
}).map((b): Analysis.Box => ({
  protocol: b.protocol,
  ports: b.protocol === "icmp" ? Analysis.NO_PORT : [b.ports[0], b.ports[0] + b.ports[1]],
  remote: interval(b.remote[0], b.remote[1], points),
  locals: new Set(b.locals)
}))

/** The VPC of the tenant's whose block holds `ip` (the VPC's own first, then the peer), or null. */
const vpcHolding = (context: RuleSet.VpcContext, ip: number) => {
  const order = [...context.vpcs.keys()].sort((a, b) =>
    (a === context.vpc_id ? 0 : a === peerVpc ? 1 : 2) - (b === context.vpc_id ? 0 : b === peerVpc ? 1 : 2)
  )
  return order.find((vpc) => context.vpcs.get(vpc)!.some((c) => Net.contains(c, ip))) ?? null
}

describe("carriage", () => {
  it.prop(
    "a box's parts cover it once, and each flow of a part is carried as the reference's paths say",
    [
      World.pathsOf,
      box,
      fc.constantFrom("ingress" as const, "egress" as const),
      fc.array(fc.nat(), { minLength: 8, maxLength: 8 })
    ],
    ([paths, b, direction, picks]) => {
      const context: RuleSet.VpcContext = { ...World.context, paths: paths.own }
      const peerContext: RuleSet.VpcContext = { ...World.context, vpc_id: peerVpc, paths: paths.peer }
      const otherContext: RuleSet.VpcContext = {
        ...World.context,
        vpc_id: World.otherVpcs[1]!,
        paths: { ...paths.own, peers: new Set() }
      }
      const world: Reference.World = {
        rules: () => [],
        context: (vpc) => (vpc === peerVpc ? peerContext : vpc === context.vpc_id ? context : otherContext)
      }
      const parts = Carriage.split(context, direction, b)
      const atoms = [...b.locals]
      // Flows at the box's corners and at picked points inside it.
      const remotes = [b.remote[0], b.remote[1], ...points.filter((p) => p >= b.remote[0] && p <= b.remote[1])]
      const ports = [b.ports[0], b.ports[1], ...picks.map((n) => b.ports[0] + (n % (b.ports[1] - b.ports[0] + 1)))]
      for (const [i, ip] of remotes.entries()) {
        const port = ports[i % ports.length]!
        const atom = atoms[(picks[i % picks.length] ?? 0) % atoms.length]!
        const holding = parts.filter((p) =>
          p.box.remote[0] <= ip && ip <= p.box.remote[1] && p.box.ports[0] <= port && port <= p.box.ports[1] &&
          p.box.locals.has(atom)
        )
        expect(holding).toHaveLength(1)
        const local = Reach.localOf(atom)
        const core = context.infrastructure.some((c) => Net.contains(c, ip))
        const remoteVpc = vpcHolding(context, ip)
        const flowPort = b.protocol === "icmp" ? null : port
        const carried = core ||
          (direction === "egress"
            ? Reference.carries(world, context.vpc_id, remoteVpc, {}, b.protocol, flowPort)
            : Reference.carries(world, remoteVpc, context.vpc_id, local, b.protocol, flowPort))
        expect(holding[0]!.blocked === null).toBe(carried)
        const flow = { direction, protocol: b.protocol, port: flowPort, remote: { kind: "ip" as const, ip }, local }
        expect(Carriage.ofFlow(context, flow)).toEqual(holding[0]!.blocked)
      }
    }
  )
})
