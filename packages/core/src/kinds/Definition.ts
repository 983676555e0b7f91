/**
 * What a kind of row a tenant owns is, as one record (kube-apiserver's `strategy.go`: the generic
 * code calls it, it never calls the generic code). Each kind's entry is a module of this folder,
 * registered once in `Kind.KINDS`; the read model, the write path, the change stream and both
 * stores iterate the registry, so nothing else restates what a kind is.
 */
import type { Schema } from "effect"
import type { EventKind } from "../domain/ChangeEvent.js"
import type { VpcId } from "../domain/Ids.js"
import type { VpcContext } from "../rules/RuleSet.js"

/** A field naming the row that owns another: removing the owner removes what it owns. */
export type OwnerField = "vpc_id" | "pod_id"

/** The read model's index on an owner field (`TenantState`'s tables). */
export const OWNER_INDEX = { vpc_id: "vpc", pod_id: "pod" } as const

/** A write of one of a kind's rows, as the kind judges it (`Change.Write` without the part). */
export type KindWrite<R> =
  | { readonly _tag: "Insert" | "Update"; readonly record: R }
  | { readonly _tag: "Remove"; readonly key: string; readonly vpc_id?: VpcId }

/** What a kind's view may read of the state its change was decided on. */
export interface ViewContext {
  /** A VPC's context: its blocks, its peers' and the tenant's address sets (`RuleSet.VpcContext`). */
  readonly vpcContext: (vpc: VpcId) => VpcContext
}

/** How a store keeps a kind's rows: a SQL store's table, and the rules every store keeps. */
export interface Storage<R> {
  readonly table: string
  /** Columns an update never changes (besides the key). */
  readonly fixed: ReadonlyArray<keyof R & string>
  /** Columns of structured values kept as JSON text (the others are `jsonb` or scalars). */
  readonly jsonText: ReadonlyArray<keyof R & string>
  /**
   * Uniqueness rules: the constraint's name (`Constraints`) and the value two of the kind's rows
   * may not share (null: the row is bound by no such rule).
   */
  readonly unique: ReadonlyArray<{ readonly constraint: string; readonly key: (record: R) => string | null }>
}

/** A field of any type whose schema needs no context (as `Schema.Schema.AnyNoContext` is for schemas). */
/* eslint-disable @typescript-eslint/no-explicit-any -- of any type, as `Schema.Schema.AnyNoContext` */
type AnyProperty = Schema.PropertySignature<
  Schema.PropertySignature.Token,
  any,
  PropertyKey,
  Schema.PropertySignature.Token,
  any,
  boolean,
  never
>
/* eslint-enable @typescript-eslint/no-explicit-any */

/** A record's fields, each decoded and encoded with no context: what any store can run. */
export type Fields = { readonly [name: string]: Schema.Schema.AnyNoContext | AnyProperty }

export interface Kind<R, I extends string, E extends string = EventKind> {
  /** The fields of the record's schema: what a store reads and writes (its table's columns). */
  readonly fields: Fields
  /** What an answer calls the row keyed `key` ("address set …", as in a 404's "… not found"). */
  readonly noun: (key: string) => string
  /** Its name in the change stream and the audit trail (`EventKind`: the API's names). */
  readonly event: E
  /** The field that keys it within its tenant. */
  readonly keyField: "id" | "name"
  /** What owns it, by the field naming the owner (`vpc_id`: a VPC, `pod_id`: a pod). */
  readonly owners: ReadonlyArray<OwnerField>
  /** Whether it is a VPC's contents: writing it steps its VPC's version (`Change`). */
  readonly contents: boolean
  /** Whether its rows carry a version (a VPC's: the commits that changed its contents). */
  readonly versioned: boolean
  /** Whether a tenant's quotas count its rows: inserting one is decided on the tenant's scope. */
  readonly counted: boolean
  /** Whether a write of it moves the tenant's scope (`Change.movesScope`) beyond a counted insert. */
  readonly movesScope: (write: KindWrite<R>) => boolean
  /** The read model's indexes on it; an owner's index is named by `OWNER_INDEX`. */
  readonly indexes: { readonly [K in I]: (record: R) => string | null }
  /** How a VPC's rows of it are ordered: by creation, or by `seq` (a VPC's rules). */
  readonly order: "created" | "seq"
  readonly storage: Storage<R>
  /** Its view as JSON, as the API shows it, on the state a change was decided on. */
  readonly view: (record: R, context: ViewContext) => unknown
}

/** A kind of rows of `schema`'s records. */
export const define =
  <F extends Fields>(schema: { readonly fields: F }) =>
  <I extends string, E extends string = EventKind>(
    kind: Omit<Kind<Schema.Struct.Type<F>, I, E>, "fields">
  ): Kind<Schema.Struct.Type<F>, I, E> => ({
    fields: schema.fields,
    ...kind
  })

/** A kind whose writes never move the tenant's scope. */
export const movesNoScope = (): boolean => false
