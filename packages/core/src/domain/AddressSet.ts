/**
 * Address sets: a tenant's named lists of networks ("our offices", "the payment processor"),
 * kept once and meant to be referenced by many rules in many VPCs (AWS managed prefix lists,
 * GCP address groups, OpenStack Neutron address groups). Entries are IPv4 networks with host
 * bits cleared as rules clear them; an edit replaces the whole list, as `env_vars` are replaced.
 */
import { Schema } from "effect"
import { nullable, oncePerRecord, stringBetween, Timestamp, TRUSTED, wireExample } from "./Common.js"
import * as Etag from "./Etag.js"
import { AddressSetId, SecurityRuleId, TenantId, VpcId } from "./Ids.js"
import { DnsLabel, Ipv4NetworkNormalized } from "./Net.js"
import { InForce, RuleImpact } from "./SecurityRule.js"

/** The most entries one set may hold. */
export const MAX_ENTRIES = 256

export const AddressSetDescription = stringBetween(0, 1024)

/** An entry's note, as short as AWS keeps a prefix list entry's: a set's view stays small. */
export const EntryDescription = stringBetween(0, 255)

export const AddressSetEntry = Schema.Struct({
  cidr: Ipv4NetworkNormalized,
  description: nullable(EntryDescription)
}).annotations({ identifier: "AddressSetEntry" })
export type AddressSetEntry = typeof AddressSetEntry.Type

/** The entries of a set: at most `MAX_ENTRIES`, each network once (after host bits are cleared). */
export const AddressSetEntries = Schema.Array(AddressSetEntry).pipe(
  // One filter with words of its own: an entry's own problems are reported where they are.
  Schema.filter((entries) => {
    if (entries.length > MAX_ENTRIES) return `at most ${MAX_ENTRIES} entries; got ${entries.length}`
    const seen = new Set<string>()
    for (const entry of entries) {
      if (seen.has(entry.cidr)) return `${entry.cidr} is listed twice (host bits are cleared before comparing)`
      seen.add(entry.cidr)
    }
    return true
  }, { jsonSchema: { maxItems: MAX_ENTRIES } })
).annotations({ identifier: "AddressSetEntries", description: `IPv4 networks, at most ${MAX_ENTRIES}, each once` })

export const AddressSetCreate = Schema.Struct({
  name: DnsLabel.annotations({ description: "Names the set within its tenant (rules files refer to it by name)" }),
  description: nullable(AddressSetDescription),
  entries: AddressSetEntries
}).annotations({
  identifier: "AddressSetCreate",
  examples: wireExample({
    name: "offices",
    description: "Our office networks",
    entries: [{ cidr: "198.51.100.0/24", description: "Berlin" }, { cidr: "203.0.113.0/25", description: null }]
  })
})
export type AddressSetCreate = typeof AddressSetCreate.Type

/** A change to a set: its description and/or its entries (the whole list, replaced). */
export const AddressSetPatch = Schema.Struct({
  description: Schema.optional(Schema.NullOr(AddressSetDescription)),
  entries: Schema.optional(AddressSetEntries)
}).annotations({
  identifier: "AddressSetPatch",
  examples: wireExample({ entries: [{ cidr: "198.51.100.0/24", description: "Berlin" }] })
})
export type AddressSetPatch = typeof AddressSetPatch.Type

/** What the store keeps. */
export const AddressSetRecord = Schema.Struct({
  id: AddressSetId,
  tenant_id: TenantId,
  name: DnsLabel,
  description: Schema.NullOr(AddressSetDescription),
  entries: Schema.Array(
    Schema.Struct({ cidr: Ipv4NetworkNormalized, description: Schema.NullOr(EntryDescription) })
  ),
  created_at: Timestamp,
  updated_at: Timestamp
})
export interface AddressSetRecord extends Schema.Schema.Type<typeof AddressSetRecord> {}

export class AddressSet extends Schema.Class<AddressSet>("AddressSet")({
  ...AddressSetRecord.fields,
  etag: Etag.Field
}) {}

/**
 * A set's edit made: the set as it now stands, and whether every VPC whose rules name it is in
 * force with it (`apply_error` names each that is not yet, and why), as a rule's change answers.
 */
export class AddressSetChanged extends AddressSet.extend<AddressSetChanged>("AddressSetChanged")(InForce) {}

/** The set's version, for `If-Match` on its changes and its delete. */
export const etagOf = oncePerRecord((record: AddressSetRecord): string => Etag.of(record))

export const viewOf = oncePerRecord((record: AddressSetRecord): AddressSet =>
  AddressSet.make({ ...record, etag: etagOf(record) }, TRUSTED)
)

/**
 * `?dry_run=true` on a set's edit: the set as the edit would leave it, and the edit's impact in
 * each VPC with a rule naming the set: the flows it opens and closes there, the findings it
 * brings and the guardrails it would break (the real edit is refused with those, 409).
 */
export class AddressSetPlan extends Schema.Class<AddressSetPlan>("AddressSetPlan")({
  dry_run: Schema.Literal(true),
  address_set: AddressSet,
  /** One per VPC that uses the set, in the VPCs' creation order. */
  vpcs: Schema.Array(RuleImpact)
}) {}

/** A rule that names a set as its remote. */
export const AddressSetUser = Schema.Struct({
  rule_id: SecurityRuleId,
  name: Schema.String,
  vpc_id: VpcId
}).annotations({ identifier: "AddressSetUser" })

/** Where a set is used: every rule naming it, by VPC then evaluation order. */
export class AddressSetUsage extends Schema.Class<AddressSetUsage>("AddressSetUsage")({
  address_set_id: AddressSetId,
  rules: Schema.Array(AddressSetUser)
}) {}
