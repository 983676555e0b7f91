/** Subnets: IPv4 blocks inside a VPC. */
import { Either, Schema } from "effect"
import { BodyTenantId, BodyToken, oncePerRecord, Timestamp, TRUSTED, wireExample } from "./Common.js"
import * as Etag from "./Etag.js"
import { SubnetId, TenantId, VpcId } from "./Ids.js"
import * as Net from "./Net.js"
import { DnsLabel, Ipv4Address, Ipv4Network } from "./Net.js"

export const SubnetCreate = Schema.Struct({
  tenant_id: BodyTenantId,
  token: BodyToken,
  vpc_id: VpcId,
  name: DnsLabel,
  cidr: Ipv4Network,
  gateway_ip: Ipv4Address.annotations({
    description: "A host address inside `cidr`: not its network or broadcast address"
  })
}).annotations({
  identifier: "SubnetCreate",
  examples: wireExample({
    tenant_id: "2f9c6a1e-4b7d-4c3a-9e8f-1a2b3c4d5e6f",
    token: "{token}",
    vpc_id: "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a",
    name: "web",
    cidr: "10.0.1.0/24",
    gateway_ip: "10.0.1.1"
  })
})
export type SubnetCreate = typeof SubnetCreate.Type

/** What the store keeps of a subnet, which is also what a user sees. */
export const SubnetRecord = Schema.Struct({
  id: SubnetId,
  tenant_id: TenantId,
  vpc_id: VpcId,
  name: DnsLabel,
  cidr: Ipv4Network,
  gateway_ip: Ipv4Address,
  created_at: Timestamp
})
export interface SubnetRecord extends Schema.Schema.Type<typeof SubnetRecord> {}

export class Subnet extends Schema.Class<Subnet>("Subnet")({ ...SubnetRecord.fields, etag: Etag.Field }) {}

export const toSubnet = oncePerRecord((record: SubnetRecord): Subnet =>
  Subnet.make({ ...record, etag: Etag.of(record) }, TRUSTED)
)

export const MIN_PREFIX = 8
export const MAX_PREFIX = 30

/**
 * Why a block cannot be placed in a VPC: `invalid` (400) for a bad prefix or gateway,
 * `conflict` (409) when it overlaps a sibling subnet or the platform's peering subnet.
 */
export interface BlockProblem {
  readonly kind: "invalid" | "conflict"
  readonly field: "cidr" | "gateway_ip"
  /** What is wrong with the field, after its name (`10.0.1.0/24 overlaps subnet 'web' (10.0.0.0/16)`). */
  readonly message: string
}

/**
 * The rules a subnet's block keeps, in one place for every way subnets are made: a /8-/30
 * network, a usable gateway inside it, no overlap with the VPC's other subnets or with the
 * platform's peering subnet.
 */
export const checkBlock = (
  cidr: string,
  gateway: string,
  siblings: ReadonlyArray<{ readonly name: string; readonly cidr: string }>,
  peering: string | null
): Either.Either<void, BlockProblem> => {
  const block = Net.cidrOf(cidr)
  if (block.prefix < MIN_PREFIX || block.prefix > MAX_PREFIX) {
    return Either.left({
      kind: "invalid",
      field: "cidr",
      message: `the prefix must be /${MIN_PREFIX} to /${MAX_PREFIX}`
    })
  }
  const usable = Net.checkGateway(cidr, gateway)
  if (Either.isLeft(usable)) return Either.left({ kind: "invalid", field: "gateway_ip", message: usable.left })
  if (peering !== null && Net.overlaps(block, Net.cidrOf(peering))) {
    return Either.left({
      kind: "conflict",
      field: "cidr",
      message: `${cidr} overlaps the platform's peering subnet ${peering}`
    })
  }
  const clash = siblings.find((s) => Net.overlaps(block, Net.cidrOf(s.cidr)))
  if (clash !== undefined) {
    return Either.left({
      kind: "conflict",
      field: "cidr",
      message: `${cidr} overlaps subnet '${clash.name}' (${clash.cidr})`
    })
  }
  return Either.void
}
