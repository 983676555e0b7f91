/**
 * The registry of what a tenant owns: every kind, by the part of the tenant's state it is, each
 * entry a module of this folder (`Definition.Kind`: its key, owners, scope, indexes, order,
 * storage, event name and view). `Change` (cascades, versions, scope), `TenantState` (tables,
 * removals, snapshots), `Events` (kinds, views, cascades), `Invariants` (reach) and both stores
 * (tables, keys, cascades, revisions, snapshots, uniqueness) iterate it through mapped types, so a
 * kind without an entry in any of them is a type error. A store can be made over a registry of more
 * kinds (`Registry`): the generic parts below take one.
 */
import * as AddressSets from "./AddressSets.js"
import * as Credentials from "./Credentials.js"
import type { Kind } from "./Definition.js"
import * as Domains from "./Domains.js"
import * as Guardrails from "./Guardrails.js"
import * as Pods from "./Pods.js"
import * as Rules from "./Rules.js"
import * as Subnets from "./Subnets.js"
import * as Tunnels from "./Tunnels.js"
import * as Vpcs from "./Vpcs.js"

export type { Fields, Kind, KindWrite, OwnerField, Storage, ViewContext } from "./Definition.js"
export { define, OWNER_INDEX } from "./Definition.js"

/** Every kind a tenant owns, by the part of its state it is (an owner before what it owns). */
export const KINDS = {
  vpcs: Vpcs.kind,
  subnets: Subnets.kind,
  rules: Rules.kind,
  pods: Pods.kind,
  tunnels: Tunnels.kind,
  credentials: Credentials.kind,
  domains: Domains.kind,
  guardrails: Guardrails.kind,
  addressSets: AddressSets.kind
}

export type Kinds = typeof KINDS

/** Kinds by part, owners before what they own: `KINDS`, or a store's registry of more (a test's). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- kinds of every record type
export type Registry = { readonly [part: string]: Kind<any, string, string> }

/** A row of any kind, by its fields: what code generic over the registry (a store) holds. */
export type AnyRecord = { readonly [field: string]: unknown }

/** A kind of any record: an entry read from a `Registry`. */
export type Any = Registry[string]

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

/** Each part's rows: a store's snapshot of a tenant holds one list per kind. */
export type Rows = { readonly [P in Part]: ReadonlyArray<RecordOf<P>> }

/** The kind of `part`, its record type erased (the caller knows the row is of that part). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a kind read through a key variable
export const of = (part: Part): Kind<any, string> => KINDS[part]

/** The key of a record of `kind` within its tenant: a registry credential's name, every other row's id. */
export const keyIn = (kind: Pick<Kind<unknown, string>, "keyField">, record: unknown): string =>
  (record as { readonly id?: string; readonly name?: string })[kind.keyField]!

/** The key of a row within its tenant. */
export const keyOf = (row: Row): string => keyIn(KINDS[row.part], row.record)

/** A value for every part. */
export const byPart = <A>(f: (part: Part) => A): { readonly [P in Part]: A } => {
  const values: Partial<Record<Part, A>> = {}
  for (const part of PARTS) values[part] = f(part)
  return values as Record<Part, A>
}

/** Each part of `registry`'s rows, from `f`: a snapshot's rows (a store's registry holds `KINDS`' parts, and perhaps more). */
export const rowsIn = (registry: Registry, f: (part: string) => ReadonlyArray<AnyRecord>): Rows => {
  const rows = Object.fromEntries(Object.keys(registry).map((part) => [part, f(part)]))
  return { ...rows, ...(byPart((part) => rows[part] ?? []) as Rows) }
}

/** Every part's rows, none: the rows of a tenant that holds nothing. */
export const emptyRows = (): Rows => byPart(() => [])

/** The part an owner field names. */
const OWNER_PART = { vpc_id: "vpcs", pod_id: "pods" } as const

/**
 * For each part of `registry`, the parts it owns with the field naming it, in the registry's
 * order: what removing one of its rows takes along (every store's one definition).
 */
export const cascadesIn = (registry: Registry): Readonly<Record<string, ReadonlyArray<readonly [string, string]>>> =>
  Object.fromEntries(
    Object.keys(registry).map((part) => [
      part,
      Object.entries(registry).flatMap(([child, kind]) =>
        kind.owners.flatMap((field) => OWNER_PART[field] === part ? [[child, field] as const] : [])
      )
    ])
  )

/** `cascadesIn(KINDS)`, typed by part. */
export const CASCADES = cascadesIn(KINDS) as {
  readonly [P in Part]: ReadonlyArray<readonly [Part, keyof typeof OWNER_PART]>
}
