/** Container-registry credentials a tenant's pods pull private images with. */
import type { DateTime } from "effect"
import { Schema } from "effect"
import { Secret, stringBetween, Timestamp, wireExample } from "./Common.js"
import { TenantId } from "./Ids.js"
import { DnsLabel } from "./Net.js"

export const RegistryCredentialCreate = Schema.Struct({
  name: DnsLabel.annotations({ description: "Identifies the credential (and its delete path); unique per tenant" }),
  server: stringBetween(1, 512).annotations({ description: "Registry server, e.g. registry.example.com" }),
  username: stringBetween(1, 256),
  password: Secret(4096)
}).annotations({
  identifier: "RegistryCredentialCreate",
  examples: wireExample({
    name: "ghcr",
    server: "ghcr.io",
    username: "{registry username}",
    password: "{registry password}"
  })
})
export type RegistryCredentialCreate = typeof RegistryCredentialCreate.Type

/** A credential as returned: the password is never shown. */
export class RegistryCredential extends Schema.Class<RegistryCredential>("RegistryCredential")({
  tenant_id: TenantId,
  name: DnsLabel,
  server: Schema.String,
  username: Schema.String,
  created_at: Timestamp
}) {}

export const RegistryCredentialPath = Schema.Struct({ tenant_id: TenantId, name: DnsLabel })

/** What the store keeps: the password only as an AES-256-GCM ciphertext. */
export interface RegistryCredentialRecord {
  readonly tenant_id: TenantId
  readonly name: DnsLabel
  readonly server: string
  readonly username: string
  readonly password_ciphertext: string
  readonly created_at: DateTime.Utc
}

export const toRegistryCredential = (record: RegistryCredentialRecord): RegistryCredential => {
  const { password_ciphertext: _, ...fields } = record
  return RegistryCredential.make(fields)
}
