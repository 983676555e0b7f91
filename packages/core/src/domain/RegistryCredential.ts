/** Container-registry credentials a tenant's pods pull private images with. */
import { Schema, Struct } from "effect"
import { oncePerRecord, Secret, stringBetween, Timestamp, wireExample } from "./Common.js"
import * as Etag from "./Etag.js"
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

/** What the store keeps: the password only as an AES-256-GCM ciphertext. */
export const RegistryCredentialRecord = Schema.Struct({
  tenant_id: TenantId,
  name: DnsLabel,
  server: Schema.String,
  username: Schema.String,
  password_ciphertext: Schema.String,
  created_at: Timestamp
})
export interface RegistryCredentialRecord extends Schema.Schema.Type<typeof RegistryCredentialRecord> {}

/** The record's fields no answer carries. */
export const HIDDEN_FIELDS = ["password_ciphertext"] as const

/** A credential as returned: the password is never shown. */
export class RegistryCredential extends Schema.Class<RegistryCredential>("RegistryCredential")({
  ...Struct.omit(RegistryCredentialRecord.fields, ...HIDDEN_FIELDS),
  etag: Etag.Field
}) {}

export const RegistryCredentialPath = Schema.Struct({ tenant_id: TenantId, name: DnsLabel })

/** The credential's version (its sealed password included), for `If-Match` on its delete. */
export const etagOf = oncePerRecord((record: RegistryCredentialRecord): string => Etag.of(record))

export const toRegistryCredential = (record: RegistryCredentialRecord): RegistryCredential =>
  RegistryCredential.make({ ...Struct.omit(record, ...HIDDEN_FIELDS), etag: etagOf(record) })
