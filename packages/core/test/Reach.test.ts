/**
 * One question, one answer: the reachability matrix, explain and a half's question (evaluate)
 * are checked against the reference interpreter over every flow of random worlds. An end is a
 * set of local endpoints, each with addresses; the reference walks every flow between two ends
 * on a port (a source endpoint and address, a destination endpoint and address) and asks each
 * half separately. Verdicts change only at the edges of the blocks rules, subnets and the core
 * network name, and only at the ends of the rules' port ranges, so checking the addresses at and
 * beside every edge, and the ports at every range's ends, checks every flow.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Ids } from "@tenet/core"
import { Net, Reach, Reachability, type RuleSet } from "@tenet/core"
import { Reference } from "@tenet/core/testing"
import { Effect, FastCheck as fc } from "effect"
import * as World from "./World.js"

const peerVpc = World.otherVpcs[0]!
const peerSubnet = World.id<Ids.SubnetId>(31)
const peerPod = World.id<Ids.PodId>(41)
/** The peer VPC as it sees itself: one subnet with one pod, its own gateway. */
const peerContext: RuleSet.VpcContext = {
  ...World.context,
  vpc_id: peerVpc,
  subnets: new Map([[peerSubnet, Net.cidrOf("10.1.0.0/16")]]),
  pods: new Map([[peerPod, peerSubnet]]),
  infrastructure: [Net.cidrOf("100.64.0.0/16"), Net.cidrOf("10.1.0.1/32")],
  paths: { ...World.context.paths, name: "peer", peers: new Set([World.vpc]) }
}
/** An empty VPC: the second other VPC, seen without subnets, peered with nothing. */
const emptyContext: RuleSet.VpcContext = {
  ...World.context,
  vpc_id: World.otherVpcs[1]!,
  subnets: new Map(),
  pods: new Map(),
  paths: { ...World.context.paths, name: "empty", peers: new Set() }
}

type Contexts = ReadonlyMap<string, RuleSet.VpcContext>

const fixed: Contexts = new Map<string, RuleSet.VpcContext>([
  [World.vpc, World.context],
  [peerVpc, peerContext],
  [World.otherVpcs[1]!, emptyContext]
])

/** The VPC and its peer with `paths` (`World.pathsOf`): the internet, the peering, what is published. */
const withPaths = (paths: typeof World.pathsOf extends fc.Arbitrary<infer P> ? P : never): Contexts =>
  new Map<string, RuleSet.VpcContext>([
    [World.vpc, { ...World.context, paths: paths.own }],
    [peerVpc, { ...peerContext, paths: paths.peer }],
    [World.otherVpcs[1]!, emptyContext]
  ])

const worldOf = (
  own: ReadonlyArray<RuleSet.Rule>,
  peer: ReadonlyArray<RuleSet.Rule>,
  contexts: Contexts = fixed
): Reference.World => ({
  rules: (vpc) => (vpc === World.vpc ? own : vpc === peerVpc ? peer : []),
  context: (vpc) => contexts.get(vpc)!
})

type Part = "both" | "egress" | "ingress" | "route"

/**
 * A witness, checked flow by flow: what it says each half and its path decide is what the
 * reference says, and it gets through (`half` alone, the path alone, or end to end) exactly when
 * it should.
 */
const expectWitness = (
  world: Reference.World,
  path: Reach.Path | null,
  passes: boolean,
  half: Part = "both"
) => {
  if (path === null) return
  const routed = Reference.carries(
    world,
    path.source.vpc,
    path.destination.vpc,
    Reach.localOf(path.destination.atom),
    path.protocol,
    path.port
  )
  expect(path.route === null).toBe(routed)
  const egress = Reference.halfAction(
    world,
    path.source.vpc,
    "egress",
    path.protocol,
    path.port,
    Reach.localOf(path.source.atom),
    path.destination.ip
  )
  const ingress = Reference.halfAction(
    world,
    path.destination.vpc,
    "ingress",
    path.protocol,
    path.port,
    Reach.localOf(path.destination.atom),
    path.source.ip
  )
  expect(path.egress?.action ?? "allow").toBe(egress)
  expect(path.ingress?.action ?? "allow").toBe(ingress)
  const through = half === "egress"
    ? egress === "allow"
    : half === "ingress"
    ? ingress === "allow"
    : half === "route"
    ? routed
    : routed && egress === "allow" && ingress === "allow"
  expect(through).toBe(passes)
}

/** The answer is the reference's, with a witness of each side it has (none of a side without flows). */
const expectAnswer = (
  answer: Reach.Answer,
  reference: { readonly reach: Reach.Reach; readonly flows: number },
  world: Reference.World,
  label: string,
  half: Part = "both"
) => {
  expect(answer.reach, label).toBe(reference.reach)
  expect(answer.allowed === null, label).toBe(reference.reach === "denied")
  expect(answer.denied === null, label).toBe(reference.reach === "allowed" || reference.flows === 0)
  expectWitness(world, answer.allowed, true, half)
  expectWitness(world, answer.denied, false, half)
}

/** The matrix's ends and the reference's, by the matrix's endpoint. */
const endsOf = (
  contexts: Contexts,
  endpoint: Reachability.Endpoint
): { end: Reach.End; ref: Reference.End } => {
  const own = contexts.get(World.vpc)!
  switch (endpoint.kind) {
    case "subnet":
      return {
        end: Reach.ends.subnet(own, endpoint.subnet_id),
        ref: Reference.ends.subnet(own, endpoint.subnet_id)
      }
    case "pod":
      return {
        end: Reach.ends.pod(own, endpoint.pod_id),
        ref: Reference.ends.pod(own, endpoint.pod_id)
      }
    case "internet":
      return { end: Reach.ends.internet(own), ref: Reference.ends.internet(own) }
    case "vpc": {
      const context = contexts.get(endpoint.vpc_id)!
      return { end: Reach.ends.vpc(context), ref: Reference.ends.vpc(context) }
    }
  }
}

const PROTOCOLS = ["tcp", "udp", "icmp"] as const

/**
 * A turn of the event loop. A property run as one synchronous loop holds its worker for its
 * whole time (this one, tens of seconds on a busy machine), past the 60 s vitest gives a
 * worker's report to its runner; between runs, the worker answers.
 */
const turn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

describe("one question, one answer", () => {
  it.effect.prop(
    "every pair on every port: the matrix cell, explain and the reference interpreter agree, witnesses included",
    [World.rules, World.rules, World.pathsOf, fc.nat()],
    ([own, peerRules, paths, pick]) =>
      Effect.andThen(turn, () => {
        const contexts = withPaths(paths)
        const world = worldOf(own, peerRules, contexts)
        const ownContext = contexts.get(World.vpc)!
        const peered = contexts.get(peerVpc)!
        const others = new Map([
          [peerVpc, { rules: peerRules, context: peered }],
          [World.otherVpcs[1]!, { rules: [], context: emptyContext }]
        ])
        const pairs = Reachability.matrix({ rules: own, context: ownContext }, others)
        const judges = new Map<Ids.VpcId, Reach.Judge>([
          [World.vpc, Reach.judge(own, ownContext)],
          [peerVpc, Reach.judge(peerRules, peered)],
          [World.otherVpcs[1]!, Reach.judge([], emptyContext)]
        ])
        const cuts = Reference.edges(world, [...contexts.keys()])
        const ports = Reference.portCuts([...own, ...peerRules])
        // Every pair is checked on a sample of its ports; one pair, chosen by the run, on all of them.
        pairs.forEach((pair, index) => {
          const { end: from, ref: refFrom } = endsOf(contexts, pair.from)
          const { end: to, ref: refTo } = endsOf(contexts, pair.to)
          for (const protocol of PROTOCOLS) {
            const tried = protocol === "icmp"
              ? [null]
              : index === pick % pairs.length
              ? ports
              : [...ports.filter((_, i) => (i + index) % 12 === 0), paths.ports.tcp, paths.ports.udp]
            const cell = pair.reach[protocol]
            for (const port of tried) {
              const reference = Reference.reach(world, cuts, refFrom, refTo, protocol, port)
              const label = `${JSON.stringify(pair.from)} -> ${JSON.stringify(pair.to)} ${protocol}/${port}`
              expect(Reach.reachAt(cell, port ?? 0), label).toBe(reference.reach)
              const explained = Reach.explain(judges, from, to, protocol, port)
              expectAnswer(explained, reference, world, label)
              for (const half of ["egress", "ingress", "route"] as const) {
                expectAnswer(
                  explained[half],
                  Reference.reach(world, cuts, refFrom, refTo, protocol, port, half),
                  world,
                  `${label} ${half}`,
                  half
                )
              }
            }
            if (cell.witness !== null) {
              expect(cell.witness.reach).toBe("partial")
              expectWitness(world, cell.witness.allowed, true)
              expectWitness(world, cell.witness.denied, false)
            }
          }
        })
      }),
    { timeout: 180_000, fastCheck: { numRuns: 40 } }
  )

  it.prop(
    "a half's question (evaluate): the local end's every endpoint against every remote address, on the paths that carry them, as the reference says",
    [
      World.rules,
      World.ipFlow,
      fc.subarray(World.addresses, { minLength: 1 }),
      fc.subarray(
        [...World.pods.map((p) => `pod:${p}`), ...World.subnets.map((s) => `subnet:${s}`), "elsewhere"],
        { minLength: 1 }
      ),
      World.pathsOf,
      fc.constantFrom("internet" as const, "core" as const)
    ],
    ([rules, flow, ips, atoms, paths, where]) => {
      const contexts = withPaths(paths)
      const context = contexts.get(World.vpc)!
      const world = worldOf(rules, [], contexts)
      const port = flow.protocol === "icmp"
        ? null
        : flow.direction === "ingress"
        ? paths.ports[flow.protocol]
        : flow.port
      const answer = Reach.half(
        Reach.judge(rules, context),
        flow.direction,
        atoms,
        { network: { kind: where }, addresses: ips.map((ip) => [ip, ip] as const) },
        flow.protocol,
        port
      )
      // The core network carries everything; the internet what the reference's paths say.
      const carried = (atom: string) =>
        where === "core" ||
        (flow.direction === "egress"
          ? Reference.carries(world, World.vpc, null, {}, flow.protocol, port)
          : Reference.carries(world, null, World.vpc, Reach.localOf(atom), flow.protocol, port))
      const verdicts = ips.flatMap((ip) =>
        atoms.map((atom) =>
          carried(atom) &&
          Reference.verdict(rules, context, {
              ...flow,
              port,
              remote: { kind: "ip", ip },
              local: Reach.localOf(atom)
            }).action === "allow"
        )
      )
      const allowed = verdicts.filter((v) => v).length
      expect(answer.reach).toBe(allowed === 0 ? "denied" : allowed < verdicts.length ? "partial" : "allowed")
      for (const [path, action] of [[answer.allowed, "allow"], [answer.denied, "deny"]] as const) {
        if (path === null) continue
        const [local, remote] = flow.direction === "egress"
          ? [path.source.atom, path.destination.ip]
          : [path.destination.atom, path.source.ip]
        const verdict = Reference.verdict(rules, context, {
          ...flow,
          port,
          remote: { kind: "ip", ip: remote },
          local: Reach.localOf(local)
        })
        expect(path.route === null).toBe(carried(local))
        expect(path.route === null && verdict.action === "allow").toBe(action === "allow")
        expect(flow.direction === "egress" ? path.egress : path.ingress).toEqual(verdict)
      }
    }
  )

  it("an end without addresses has no flow: denied, with no witness, however open the rules", () => {
    const judges = new Map<Ids.VpcId, Reach.Judge>([
      [World.vpc, Reach.judge([], World.context)],
      [World.otherVpcs[1]!, Reach.judge([], emptyContext)]
    ])
    const answer = Reach.explain(
      judges,
      Reach.ends.vpc(emptyContext),
      Reach.ends.subnet(World.context, World.subnets[1]!),
      "tcp",
      22
    )
    expect(answer).toMatchObject({ reach: "denied", allowed: null, denied: null })
  })
})
