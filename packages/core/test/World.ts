/**
 * A small world for the engine's properties: one VPC with three subnets and some pods, two
 * other VPCs, one deleted VPC, a deleted subnet and a deleted pod, so references can dangle;
 * three address sets (one whose entries together, not singly, hold another VPC; one whose
 * entries overlap; one empty) and one gone; and generators of rules and flows over it.
 */
import type { Ids, Paths } from "@tenet/core"
import { Net, type RuleSet } from "@tenet/core"
import { FastCheck as fc } from "effect"

export const id = <B>(n: number) => `00000000-0000-4000-8000-${n.toString().padStart(12, "0")}` as B
export const vpc = id<Ids.VpcId>(1)
export const otherVpcs = [id<Ids.VpcId>(2), id<Ids.VpcId>(3)]
export const deletedVpc = id<Ids.VpcId>(9)
export const subnets = [id<Ids.SubnetId>(11), id<Ids.SubnetId>(12), id<Ids.SubnetId>(13)]
export const deletedSubnet = id<Ids.SubnetId>(19)
export const pods = [id<Ids.PodId>(21), id<Ids.PodId>(22), id<Ids.PodId>(23), id<Ids.PodId>(24)]
export const deletedPod = id<Ids.PodId>(29)
export const addressSets = [id<Ids.AddressSetId>(31), id<Ids.AddressSetId>(32), id<Ids.AddressSetId>(33)]
export const deletedAddressSet = id<Ids.AddressSetId>(39)

export const context: RuleSet.VpcContext = {
  vpc_id: vpc,
  subnets: new Map(subnets.map((s, i) => [s, Net.cidrOf(`10.0.${i}.0/24`)])),
  pods: new Map(pods.map((p, i) => [p, subnets[i % subnets.length]!])),
  vpcs: new Map([
    [vpc, subnets.map((_, i) => Net.cidrOf(`10.0.${i}.0/24`))],
    [otherVpcs[0]!, [Net.cidrOf("10.1.0.0/16")]],
    [otherVpcs[1]!, [Net.cidrOf("172.16.0.0/24"), Net.cidrOf("172.16.8.0/24")]]
  ]),
  addressSets: new Map([
    [addressSets[0]!, ["10.1.0.0/17", "10.1.128.0/17", "8.8.8.8/32"].map(Net.cidrOf)],
    [addressSets[1]!, ["172.16.0.0/24", "192.168.0.0/16", "192.168.1.0/24", "10.0.1.0/24"].map(Net.cidrOf)],
    [addressSets[2]!, []]
  ]),
  infrastructure: [Net.cidrOf("100.64.0.0/16"), Net.cidrOf("10.0.0.1/32")],
  // Peered with the first other VPC only, so a rule naming the second can never match.
  paths: {
    name: "own",
    internet: null,
    peers: new Set([otherVpcs[0]!]),
    overlaps: new Map(),
    published: new Map(),
    names: new Map([[vpc, "own"], [otherVpcs[0]!, "peer"], [otherVpcs[1]!, "other"]])
  }
}

/**
 * Paths for the VPC and its peer (the first other VPC): each with the internet or not, peered or
 * not, and some pods published on some ports.
 */
export const pathsOf = fc.record({
  ownInternet: fc.boolean(),
  peerInternet: fc.boolean(),
  peered: fc.boolean(),
  published: fc.subarray(pods),
  tcp: fc.tuple(fc.integer({ min: 15, max: 40 }), fc.integer({ min: 0, max: 3 })),
  udp: fc.tuple(fc.integer({ min: 15, max: 40 }), fc.integer({ min: 0, max: 3 }))
}).map((p) => {
  const of = (name: string, internet: boolean, peer: Ids.VpcId, published: Paths.VpcPaths["published"]) => ({
    name,
    internet: internet ? null : "enable_internet is false",
    peers: new Set(p.peered ? [peer] : []),
    overlaps: new Map(),
    published,
    names: context.paths.names
  })
  const open = new Map(p.published.map((pod) => [pod, {
    name: pod,
    tcp: [[p.tcp[0], p.tcp[0] + p.tcp[1]] as const],
    udp: [[p.udp[0], p.udp[0] + p.udp[1]] as const]
  }]))
  return {
    own: of("own", p.ownInternet, otherVpcs[0]!, open),
    peer: of("peer", p.peerInternet, vpc, new Map()),
    /** A port published pods are open on, for each protocol. */
    ports: { tcp: p.tcp[0], udp: p.udp[0] + p.udp[1] }
  }
})

export const addresses = [
  "10.0.0.5",
  "10.0.1.9",
  "10.0.2.200",
  "10.1.3.4",
  "172.16.0.9",
  "172.16.8.1",
  "8.8.8.8",
  "100.64.1.1",
  "10.0.0.1",
  "192.168.1.1"
]
  .map(Net.ipv4Of)
export const blocks = [
  "0.0.0.0/0",
  "10.0.0.0/8",
  "10.0.0.0/16",
  "10.0.1.0/24",
  "10.1.0.0/16",
  "172.16.0.0/20",
  "8.8.8.8/32",
  "192.168.0.0/16",
  "100.64.0.0/10"
]
  .map(Net.cidrOf)

export const ports = fc.option(
  fc.array(fc.tuple(fc.integer({ min: 18, max: 32 }), fc.integer({ min: 0, max: 4 })), { minLength: 1, maxLength: 3 })
    .map((rs) => rs.map(([from, width]) => ({ from, to: from + width }))),
  { nil: null }
)

export const remote: fc.Arbitrary<RuleSet.RuleRemote> = fc.oneof(
  fc.constantFrom(...blocks).map((cidr) => ({ kind: "cidr" as const, cidr })),
  fc.constantFrom(vpc, ...otherVpcs, deletedVpc).map((vpc_id) => ({ kind: "vpc" as const, vpc_id })),
  fc.constantFrom(...addressSets, deletedAddressSet).map((address_set_id) => ({
    kind: "address_set" as const,
    address_set_id
  }))
)

export const target: fc.Arbitrary<RuleSet.RuleTarget> = fc.oneof(
  fc.constant({ kind: "vpc" as const }),
  fc.constantFrom(...subnets, deletedSubnet).map((subnet_id) => ({ kind: "subnet" as const, subnet_id })),
  fc.subarray([...pods, deletedPod], { minLength: 1 }).map((pod_ids) => ({ kind: "pods" as const, pod_ids }))
)

export const rule = (seq: number): fc.Arbitrary<RuleSet.Rule> =>
  fc.record({
    priority: fc.integer({ min: 1, max: 12 }),
    direction: fc.constantFrom("ingress" as const, "egress" as const),
    action: fc.constantFrom("allow" as const, "deny" as const),
    protocol: fc.constantFrom("tcp" as const, "udp" as const, "icmp" as const, "all" as const),
    ports,
    remote,
    target,
    enabled: fc.integer({ min: 0, max: 4 }).map((n) => n > 0)
  }).map((r) => ({
    ...r,
    ports: r.protocol === "tcp" || r.protocol === "udp" ? r.ports : null,
    id: id<Ids.SecurityRuleId>(1000 + seq),
    seq
  }))

export const rules = fc.integer({ min: 0, max: 25 }).chain((n) =>
  fc.tuple(...Array.from({ length: n }, (_, i) => rule(i))).map((rs) => rs as Array<RuleSet.Rule>)
)

export const local = fc.oneof(
  fc.constantFrom(...pods).map((pod_id) => ({ pod_id })),
  fc.constantFrom(...subnets).map((subnet_id) => ({ subnet_id })),
  fc.constant({})
)

export const ipFlow = fc.record({
  direction: fc.constantFrom("ingress" as const, "egress" as const),
  protocol: fc.constantFrom("tcp" as const, "udp" as const, "icmp" as const),
  port: fc.integer({ min: 15, max: 40 }),
  remote: fc.constantFrom(...addresses).map((ip) => ({ kind: "ip" as const, ip })),
  local
}).map((f) => ({ ...f, port: f.protocol === "icmp" ? null : f.port }))

export const flow: fc.Arbitrary<RuleSet.Flow> = fc.oneof(
  ipFlow,
  ipFlow.chain((f) =>
    fc.constantFrom(vpc, ...otherVpcs).map((vpc_id) => ({ ...f, remote: { kind: "vpc" as const, vpc_id } }))
  )
)
