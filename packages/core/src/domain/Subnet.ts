/** Subnets: IPv4 blocks inside a VPC. */
import type { DateTime } from "effect"
import { Schema } from "effect"
import { Timestamp } from "./Common.js"
import { SubnetId, TenantId, VpcId } from "./Ids.js"
import { DnsLabel, Ipv4Address, Ipv4Network } from "./Net.js"

export const SubnetCreate = Schema.Struct({
  tenant_id: TenantId,
  token: Schema.String.annotations({
    description: "The tenant's API token; must name the same tenant as X-Auth-Token"
  }),
  vpc_id: VpcId,
  name: DnsLabel,
  cidr: Ipv4Network,
  gateway_ip: Ipv4Address.annotations({
    description: "A host address inside `cidr`: not its network or broadcast address"
  })
}).annotations({ identifier: "SubnetCreate" })
export type SubnetCreate = typeof SubnetCreate.Type

export class Subnet extends Schema.Class<Subnet>("Subnet")({
  id: SubnetId,
  tenant_id: TenantId,
  vpc_id: VpcId,
  name: DnsLabel,
  cidr: Ipv4Network,
  gateway_ip: Ipv4Address,
  created_at: Timestamp
}) {}

export interface SubnetRecord {
  readonly id: SubnetId
  readonly tenant_id: TenantId
  readonly vpc_id: VpcId
  readonly name: DnsLabel
  readonly cidr: Ipv4Network
  readonly gateway_ip: Ipv4Address
  readonly created_at: DateTime.Utc
}

export const toSubnet = (record: SubnetRecord): Subnet => Subnet.make(record)
