/**
 * What each kind of row a tenant owns is, said once (kube-apiserver's generic registry, where a
 * resource contributes its strategy and the store does the rest): its key, what owns it (so a
 * removal takes it along), whether it is a VPC's contents, the read model's indexes on it, its
 * list in a store's snapshot, its name in the change stream and its view as the API shows it.
 *
 * `Change` (cascades, versions), `TenantState` (tables, removals, snapshots), `Events` (kinds,
 * views, cascades) and the stores (keys) iterate `KINDS`: a new kind is an entry here, its
 * storage in each store, its strategy and its contract group (ARCHITECTURE.md lists them).
 */
import { Schema, Struct } from "effect"
import * as AddressSet from "../domain/AddressSet.js"
import type { EventKind } from "../domain/ChangeEvent.js"
import { DomainRecord } from "../domain/Domain.js"
import * as Guardrail from "../domain/Guardrail.js"
import * as Pod from "../domain/Pod.js"
import * as RegistryCredential from "../domain/RegistryCredential.js"
import * as SecurityRule from "../domain/SecurityRule.js"
import * as Subnet from "../domain/Subnet.js"
import * as Tunnel from "../domain/Tunnel.js"
import * as Vpc from "../domain/Vpc.js"
import type { TenantSnapshot } from "../ports/Store.js"
import { vpcContextOf } from "../readmodel/Derived.js"
import type { TenantState } from "../readmodel/TenantState.js"
import * as RuleSet from "../rules/RuleSet.js"

/** A field naming the row that owns another: removing the owner removes what it owns. */
export type OwnerField = "vpc_id" | "pod_id"

/** The read model's index on an owner field (`TenantState`'s tables). */
export const OWNER_INDEX = { vpc_id: "vpc", pod_id: "pod" } as const

/** The lists of a store's snapshot, one per kind. */
export type SnapshotList = Exclude<keyof TenantSnapshot, "revision" | "vpcVersions" | "scopeVersion">

export interface Kind<R, I extends string> {
  /** Its name in the change stream and the audit trail. */
  readonly event: EventKind
  /** The field that keys it within its tenant. */
  readonly keyField: "id" | "name"
  /** What owns it, by the field naming the owner (`vpc_id`: a VPC, `pod_id`: a pod). */
  readonly owners: ReadonlyArray<OwnerField>
  /** Whether it is a VPC's contents: writing it steps its VPC's version (`Change`). */
  readonly contents: boolean
  /** The read model's indexes on it; an owner's index is named by `OWNER_INDEX`. */
  readonly indexes: { readonly [K in I]: (record: R) => string | null }
  /** How a VPC's rows of it are ordered: by creation, or by `seq` (a VPC's rules). */
  readonly order: "created" | "seq"
  /** Its list in a store's snapshot. */
  readonly snapshot: SnapshotList
  /** Its view as JSON, as the API shows it, on the state a change was decided on. */
  readonly view: (record: R, state: TenantState) => unknown
}

const kind = <R>() => <I extends string>(k: Kind<R, I>): Kind<R, I> => k

/** A pod as the API shows it but for its status, which is the cluster's, not the store's. */
const PodFields = Schema.Struct(Struct.omit(Pod.PodRecord.fields, ...Pod.HIDDEN_FIELDS))

const encodeVpc = Schema.encodeSync(Vpc.Vpc)
const encodeSubnet = Schema.encodeSync(Subnet.Subnet)
const encodeRule = Schema.encodeSync(SecurityRule.SecurityRule)
const encodePod = Schema.encodeSync(PodFields)
const encodeTunnel = Schema.encodeSync(Tunnel.Tunnel)
const encodeCredential = Schema.encodeSync(RegistryCredential.RegistryCredential)
const encodeDomain = Schema.encodeSync(DomainRecord)
const encodeGuardrail = Schema.encodeSync(Guardrail.Guardrail)
const encodeAddressSet = Schema.encodeSync(AddressSet.AddressSet)

/** Every kind a tenant owns, by the part of its state it is (an owner before what it owns). */
export const KINDS = {
  vpcs: kind<Vpc.VpcRecord>()({
    event: "vpc",
    keyField: "id",
    owners: [],
    contents: false,
    indexes: {},
    order: "created",
    snapshot: "vpcs",
    view: (record) => encodeVpc(Vpc.toVpc(record))
  }),
  subnets: kind<Subnet.SubnetRecord>()({
    event: "subnet",
    keyField: "id",
    owners: ["vpc_id"],
    contents: true,
    indexes: { vpc: (s) => s.vpc_id },
    order: "created",
    snapshot: "subnets",
    view: (record) => encodeSubnet(Subnet.toSubnet(record))
  }),
  rules: kind<SecurityRule.SecurityRuleRecord>()({
    event: "security_rule",
    keyField: "id",
    owners: ["vpc_id"],
    contents: true,
    // A rule naming its own VPC as the remote is not another VPC's reference to it.
    indexes: {
      vpc: (r) => r.vpc_id,
      remote: (r) => r.remote_vpc_id === r.vpc_id ? null : r.remote_vpc_id,
      addressSet: (r) => r.remote_address_set_id
    },
    order: "seq",
    snapshot: "securityRules",
    // Its status as the deciding state's context has it.
    view: (record, state) =>
      encodeRule(
        SecurityRule.viewOf(
          record,
          RuleSet.statusOf(RuleSet.fromRecord(record), vpcContextOf(state, record.vpc_id, null))
        )
      )
  }),
  pods: kind<Pod.PodRecord>()({
    event: "pod",
    keyField: "id",
    owners: ["vpc_id"],
    contents: true,
    indexes: { vpc: (p) => p.vpc_id },
    order: "created",
    snapshot: "pods",
    view: (record) => encodePod(Struct.omit(record, ...Pod.HIDDEN_FIELDS))
  }),
  tunnels: kind<Tunnel.TunnelRecord>()({
    event: "tunnel",
    keyField: "id",
    // A VPC's removal takes its pods, and each pod its tunnels.
    owners: ["pod_id"],
    contents: true,
    indexes: { vpc: (t) => t.vpc_id, pod: (t) => t.pod_id },
    order: "created",
    snapshot: "tunnels",
    view: (record) => encodeTunnel(Tunnel.toTunnel(record))
  }),
  /** A registry credential is named within its tenant. */
  credentials: kind<RegistryCredential.RegistryCredentialRecord>()({
    event: "registry_credential",
    keyField: "name",
    owners: [],
    contents: false,
    indexes: {},
    order: "created",
    snapshot: "registryCredentials",
    view: (record) => encodeCredential(RegistryCredential.toRegistryCredential(record))
  }),
  domains: kind<DomainRecord>()({
    event: "domain",
    keyField: "id",
    owners: [],
    contents: false,
    indexes: {},
    order: "created",
    snapshot: "domains",
    view: (record) => encodeDomain(record)
  }),
  /** A tenant-wide guardrail (no VPC) is in no VPC's contents and no VPC's index entry. */
  guardrails: kind<Guardrail.GuardrailRecord>()({
    event: "guardrail",
    keyField: "id",
    owners: ["vpc_id"],
    contents: true,
    indexes: { vpc: (g) => g.vpc_id },
    order: "created",
    snapshot: "guardrails",
    view: (record) => encodeGuardrail(Guardrail.viewOf(record))
  }),
  /** A tenant's named list of networks: no VPC's contents, owned by the tenant alone. */
  addressSets: kind<AddressSet.AddressSetRecord>()({
    event: "address_set",
    keyField: "id",
    owners: [],
    contents: false,
    indexes: {},
    order: "created",
    snapshot: "addressSets",
    view: (record) => encodeAddressSet(AddressSet.viewOf(record))
  })
}

export type Kinds = typeof KINDS

/** The kinds of rows a tenant owns, as changes name them. */
export type Part = keyof Kinds

/** Every part, owners before what they own. */
export const PARTS = Object.keys(KINDS) as ReadonlyArray<Part>

/** The record of a part's rows. */
export type RecordOf<P extends Part> = Kinds[P] extends Kind<infer R, infer _I> ? R : never

/** The read model's index names on a part. */
export type IndexOf<P extends Part> = Kinds[P] extends Kind<infer _R, infer I> ? I : never

/** A row a tenant owns, by the part of its state it belongs to. */
export type Row = { readonly [P in Part]: { readonly part: P; readonly record: RecordOf<P> } }[Part]

/** The kind of `part`, its record type erased (the caller knows the row is of that part). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a kind read through a key variable
export const of = (part: Part): Kind<any, string> => KINDS[part]

/** The key of a row within its tenant: a registry credential's name, every other row's id. */
export const keyOf = (row: Row): string => {
  const record: { readonly id?: string; readonly name?: string } = row.record
  return record[KINDS[row.part].keyField]!
}

/** A value for every part. */
export const byPart = <A>(f: (part: Part) => A): { readonly [P in Part]: A } => {
  const values: Partial<Record<Part, A>> = {}
  for (const part of PARTS) values[part] = f(part)
  return values as Record<Part, A>
}

/** Every list of a store's snapshot, empty: a snapshot of a tenant that holds nothing. */
export const emptyLists = (): { readonly [L in SnapshotList]: ReadonlyArray<never> } => {
  const lists: Partial<Record<SnapshotList, ReadonlyArray<never>>> = {}
  for (const part of PARTS) lists[KINDS[part].snapshot] = []
  return lists as Record<SnapshotList, ReadonlyArray<never>>
}

/** The part an owner field names. */
const OWNER_PART: { readonly [F in OwnerField]: Part } = { vpc_id: "vpcs", pod_id: "pods" }

/**
 * For each part, the parts it owns with the field naming it, in `KINDS` order: what removing
 * one of its rows takes along (every store's one definition).
 */
export const CASCADES: { readonly [P in Part]: ReadonlyArray<readonly [Part, OwnerField]> } = byPart((part) =>
  PARTS.flatMap((child) =>
    of(child).owners.flatMap((field) => OWNER_PART[field] === part ? [[child, field] as const] : [])
  )
)
