/**
 * Branded identifiers. Every resource id is a UUID; the brand keeps a `VpcId` from being
 * passed where a `PodId` is expected.
 */
import { Schema } from "effect"

const uuid = <const B extends string>(brand: B, description: string) =>
  Schema.UUID.pipe(
    Schema.brand(brand),
    Schema.annotations({ identifier: brand, description, examples: ["9b2f4c1e-8a6d-4d3b-9f0e-2c7a5b1d3e4f" as never] })
  )

export const TenantId = uuid("TenantId", "Tenant id (UUID)")
export type TenantId = typeof TenantId.Type

export const VpcId = uuid("VpcId", "VPC id (UUID)")
export type VpcId = typeof VpcId.Type

export const SubnetId = uuid("SubnetId", "Subnet id (UUID)")
export type SubnetId = typeof SubnetId.Type

export const PodId = uuid("PodId", "Pod id (UUID)")
export type PodId = typeof PodId.Type

export const TunnelId = uuid("TunnelId", "Tunnel id (UUID)")
export type TunnelId = typeof TunnelId.Type

export const SecurityRuleId = uuid("SecurityRuleId", "Security rule id (UUID)")
export type SecurityRuleId = typeof SecurityRuleId.Type

export const GuardrailId = uuid("GuardrailId", "Guardrail id (UUID)")
export type GuardrailId = typeof GuardrailId.Type

export const AddressSetId = uuid("AddressSetId", "Address set id (UUID)")
export type AddressSetId = typeof AddressSetId.Type

export const DomainId = uuid("DomainId", "Domain record id (UUID)")
export type DomainId = typeof DomainId.Type

export const ServiceTunnelId = uuid("ServiceTunnelId", "Platform service tunnel id (UUID)")
export type ServiceTunnelId = typeof ServiceTunnelId.Type

/** A fresh random (v4) UUID. Uses the Web Crypto global, present in Node 20+ and browsers. */
export const randomUuid = (): string => globalThis.crypto.randomUUID()
