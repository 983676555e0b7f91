/**
 * Everything one tenant owns, at one revision, as the read model holds it: persistent tables
 * (`Table`), so a committed change makes the next state in time that depends on what it
 * changes, never on how much else the tenant owns. A rule's insert touches its VPC's index
 * entry and a few hash-trie nodes; the tenant's other VPCs, rules and pods are shared with
 * the state before.
 *
 * Lists are answered in the store's order (oldest first; a VPC's rules by `seq`), sorted once
 * per version of what they list. Values derived from a state (`memo`) are kept while what they
 * were derived from is unchanged, so a VPC's context and compiled matcher are built once per
 * change to their inputs, not once per request or per revision of the whole tenant.
 */
import { HashMap, Option } from "effect"
import type { AddressSetRecord } from "../domain/AddressSet.js"
import type { DomainRecord } from "../domain/Domain.js"
import type { GuardrailRecord } from "../domain/Guardrail.js"
import type { TenantId, VpcId } from "../domain/Ids.js"
import type { PodRecord } from "../domain/Pod.js"
import type { RegistryCredentialRecord } from "../domain/RegistryCredential.js"
import type { SecurityRuleRecord } from "../domain/SecurityRule.js"
import type { SubnetRecord } from "../domain/Subnet.js"
import type { TunnelRecord } from "../domain/Tunnel.js"
import type { VpcRecord } from "../domain/Vpc.js"
import * as Change from "../kinds/Change.js"
import * as Kind from "../kinds/Kind.js"
import type { Revision, TenantSnapshot } from "../ports/Store.js"
import * as Table from "./Table.js"

/** The kinds of rows a tenant owns, as changes name them. */
export type Part = Kind.Part

type Tables = { readonly [P in Part]: Table.Table<Kind.RecordOf<P>, Kind.IndexOf<P>> }

/** Each part's table, keyed and indexed as its kind says. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- one definition per table, rows of any kind
const DEFINITIONS: { readonly [P in Part]: Table.Definition<any, any> } = Kind.byPart((part) =>
  Table.define({ key: (record) => Kind.keyOf({ part, record } as Change.Row), indexes: Kind.of(part).indexes })
)

/**
 * A value derived from a state: `compute` is run again only when one of `inputs` (compared by
 * identity: tables' index entries, records, other derived values) is not what it was.
 */
export interface Derivation<I, A> {
  readonly key: (input: I) => string
  readonly inputs: (state: TenantState, input: I) => ReadonlyArray<unknown>
  readonly compute: (state: TenantState, input: I) => A
}

interface Kept {
  readonly inputs: ReadonlyArray<unknown>
  readonly value: unknown
}

/**
 * Each derivation's values by key, the latest read first. Two are kept, not one: a write reads the
 * state it decides on and the state it makes in turn, and with one slot each read derived again
 * what the other had replaced (a VPC's connections eleven times per rule create, not once).
 */
type Memos = Map<Derivation<never, unknown>, Map<string, Array<Kept>>>

/** How many values of one derivation and key are kept (`Memos`). */
const KEPT = 2

type Created = { readonly created_at: { readonly epochMillis: number } }

/** Sorted lists, by the persistent entry they list (which any change to its rows replaces). */
const sortedLists = new WeakMap<object, ReadonlyArray<unknown>>()

/** What orders a part's lists (`Kind`): a VPC's rules by `seq`, every other list by creation time. */
const RANKS: { readonly [P in Part]: (row: never) => number } = Kind.byPart((part) =>
  Kind.KINDS[part].order === "seq"
    ? (row: { readonly seq: number }) => row.seq
    : (row: Created) => row.created_at.epochMillis
)

/** A write of one row: `before` and `after` are the row as it was and is (undefined: absent). */
interface RowWrite {
  readonly part: Part
  readonly key: string
  readonly before: object | undefined
  readonly after: object | undefined
}

/**
 * The sorted list of an entry a write replaced, carried over to the entry that replaces it:
 * the row placed, kept or dropped in the list rather than the entry sorted again (a create
 * in a VPC of 200 rules sorted them all). Where the row would move within the list, or between
 * entries, nothing is carried: that list is sorted when first read.
 */
const carryOver = (write: RowWrite, was: object | undefined, is: object | undefined) => {
  if (was === undefined || is === undefined || was === is) return
  const list = sortedLists.get(was)
  if (list === undefined) return
  const { after, before, key, part } = write
  const keyOf = DEFINITIONS[part].key as (row: unknown) => string
  const rank = RANKS[part] as (row: unknown) => number
  let next: ReadonlyArray<unknown> | undefined
  if (after === undefined) next = list.filter((row) => keyOf(row) !== key)
  else if (before === undefined) {
    // A new row is the last inserted: it goes last unless it ranks before the last row.
    const last = list[list.length - 1]
    if (last === undefined || rank(after) >= rank(last)) next = [...list, after]
  } else if (rank(after) === rank(before)) {
    const at = list.findIndex((row) => keyOf(row) === key)
    if (at >= 0) {
      const replaced = list.slice()
      replaced[at] = after
      next = replaced
    }
  }
  if (next !== undefined) sortedLists.set(is, next)
}

/** Carries over the sorted lists of every entry the write changed: its table's, and its indexes' that kept the row. */
const carryLists = (write: RowWrite, from: Table.Table<object, string>, to: Table.Table<object, string>) => {
  carryOver(write, from.rows, to.rows)
  const indexes = DEFINITIONS[write.part].indexes as Record<string, (row: object) => string | null>
  for (const [name, valueOf] of Object.entries(indexes)) {
    const was = write.before === undefined ? null : valueOf(write.before)
    const is = write.after === undefined ? null : valueOf(write.after)
    const value = write.before === undefined ? is : write.after === undefined ? was : was === is ? is : null
    if (value !== null) carryOver(write, Table.entry(from, name, value), Table.entry(to, name, value))
  }
}

const sameInputs = (a: ReadonlyArray<unknown>, b: ReadonlyArray<unknown>) =>
  a.length === b.length && a.every((x, i) => x === b[i])

export class TenantState {
  private constructor(
    readonly tenantId: TenantId,
    readonly revision: Revision,
    private readonly tables: Tables,
    /** Insertion order of every row, breaking ties between equal creation times. */
    private readonly order: HashMap.HashMap<string, number>,
    private readonly nextOrder: number,
    /** Each VPC's version: how many commits changed its contents (`Change`). */
    private readonly versions: HashMap.HashMap<string, number>,
    /** Shared by the states of one tenant that follow from each other; entries check their inputs. */
    private readonly memos: Memos,
    /** The version of the tenant's scope (`TenantSnapshot.scopeVersion`). */
    readonly scopeVersion: number
  ) {}

  /** The state a store's snapshot describes. */
  static fromSnapshot(tenantId: TenantId, snapshot: TenantSnapshot): TenantState {
    let order = HashMap.empty<string, number>().pipe(HashMap.beginMutation)
    let next = 0
    const tables = Kind.byPart((part) => {
      let table = Table.empty(DEFINITIONS[part])
      for (const row of snapshot.rows[part]) {
        table = Table.put(DEFINITIONS[part], table, row)
        order = HashMap.set(order, DEFINITIONS[part].key(row), next++)
      }
      return table
    }) as Tables
    return new TenantState(
      tenantId,
      snapshot.revision,
      tables,
      HashMap.endMutation(order),
      next,
      HashMap.fromIterable(Object.entries(snapshot.vpcVersions)),
      new Map(),
      snapshot.scopeVersion
    )
  }

  /** This state with `writes` made, in order, at `revision`: what the store holds after them. */
  apply(writes: ReadonlyArray<Change.Write>, revision: Revision): TenantState {
    const tables = { ...this.tables } as Record<Part, Table.Table<object, string>>
    let order = this.order
    let next = this.nextOrder
    let versions = this.versions
    const remove = (part: Part, key: string, cascaded: boolean) => {
      const row = Option.getOrUndefined(Table.get(tables[part], key))
      if (row === undefined) return
      for (const [child, by] of Kind.CASCADES[part]) {
        for (const dependent of Table.lookup(tables[child], Kind.OWNER_INDEX[by], key)) {
          remove(child, DEFINITIONS[child].key(dependent), true)
        }
      }
      const from = tables[part]
      tables[part] = Table.remove(DEFINITIONS[part], from, key)
      // What a removal takes along goes with its owner's lists: nothing to carry row by row.
      if (!cascaded) carryLists({ part, key, before: row, after: undefined }, from, tables[part])
      order = HashMap.remove(order, key)
      if (Kind.KINDS[part].versioned) versions = HashMap.remove(versions, key)
    }
    const put = (part: Part, record: object) => {
      const key = DEFINITIONS[part].key(record)
      const from = tables[part]
      const before = Option.getOrUndefined(Table.get(from, key))
      if (before === undefined) {
        order = HashMap.set(order, key, next++)
        if (Kind.KINDS[part].versioned) versions = HashMap.set(versions, key, 0)
      }
      tables[part] = Table.put(DEFINITIONS[part], from, record)
      carryLists({ part, key, before, after: record }, from, tables[part])
    }
    for (const write of writes) {
      if (write._tag === "Remove") remove(write.part, write.key, false)
      else if (write._tag !== "Touch") put(write.part, write.record)
    }
    for (const vpc of Change.touchedVpcs(writes)) {
      const version = HashMap.get(versions, vpc)
      if (Option.isSome(version)) versions = HashMap.set(versions, vpc, version.value + 1)
    }
    // Each part's table was changed with that part's own definition; TypeScript cannot relate a
    // part to its row type through a key variable, so the record is typed back by hand.
    return new TenantState(
      this.tenantId,
      revision,
      // eslint-disable-next-line no-restricted-syntax -- see above
      tables as unknown as Tables,
      order,
      next,
      versions,
      this.memos,
      Change.movesScope(writes) ? this.scopeVersion + 1 : this.scopeVersion
    )
  }

  /** This state as committed at `revision`: the same rows, versions and derived values. */
  at(revision: Revision): TenantState {
    return new TenantState(
      this.tenantId,
      revision,
      this.tables,
      this.order,
      this.nextOrder,
      this.versions,
      this.memos,
      this.scopeVersion
    )
  }

  /** The VPC's version (`Change`), or undefined when the state has no such VPC. */
  vpcVersion(id: string): number | undefined {
    return Option.getOrUndefined(HashMap.get(this.versions, id))
  }

  /**
   * The rows of an entry of `part` in its order (`RANKS`; ties in insertion order), sorted once
   * per version of it, or carried over from the version before (`carryLists`).
   */
  private sorted<R>(part: Part, entry: HashMap.HashMap<string, R> | undefined): ReadonlyArray<R> {
    if (entry === undefined) return []
    let rows = sortedLists.get(entry) as ReadonlyArray<R> | undefined
    if (rows === undefined) {
      const rank = RANKS[part] as (row: R) => number
      rows = Array.from(HashMap.entries(entry))
        .map(([key, row]) => ({ row, rank: rank(row), order: Option.getOrElse(HashMap.get(this.order, key), () => 0) }))
        .sort((a, b) => a.rank - b.rank || a.order - b.order)
        .map(({ row }) => row)
      sortedLists.set(entry, rows)
    }
    return rows
  }

  private grouped<R>(table: Table.Table<R, string>, index: string, value: string) {
    return Table.entry(table, index, value) as HashMap.HashMap<string, R> | undefined
  }

  /** Whether the state holds the row of `part` keyed `key`. */
  has(part: Part, key: string): boolean {
    return Table.has(this.tables[part] as Table.Table<unknown, string>, key)
  }

  /** The row of `part` keyed `key`. */
  row<P extends Part>(part: P, key: string): Kind.RecordOf<P> | undefined {
    return Option.getOrUndefined(Table.get(this.tables[part] as Table.Table<Kind.RecordOf<P>, string>, key))
  }

  vpc(id: string): VpcRecord | undefined {
    return Option.getOrUndefined(Table.get(this.tables.vpcs, id))
  }
  /** Oldest first. */
  get vpcs(): ReadonlyArray<VpcRecord> {
    return this.sorted("vpcs", this.tables.vpcs.rows)
  }
  subnet(id: string): SubnetRecord | undefined {
    return Option.getOrUndefined(Table.get(this.tables.subnets, id))
  }
  get subnets(): ReadonlyArray<SubnetRecord> {
    return this.sorted("subnets", this.tables.subnets.rows)
  }
  subnetsOf(vpcId: string): ReadonlyArray<SubnetRecord> {
    return this.sorted("subnets", this.grouped(this.tables.subnets, "vpc", vpcId))
  }
  rule(id: string): SecurityRuleRecord | undefined {
    return Option.getOrUndefined(Table.get(this.tables.rules, id))
  }
  /** The VPC's rules in creation order (`seq`). */
  rulesOf(vpcId: string): ReadonlyArray<SecurityRuleRecord> {
    return this.sorted("rules", this.grouped(this.tables.rules, "vpc", vpcId))
  }
  /** Rules of the tenant's other VPCs whose remote is this VPC, in creation order. */
  rulesNaming(vpcId: string): ReadonlyArray<SecurityRuleRecord> {
    return this.sorted("rules", this.grouped(this.tables.rules, "remote", vpcId))
  }
  /** The rules, in any VPC, whose remote is this address set, in creation order. */
  rulesUsing(addressSetId: string): ReadonlyArray<SecurityRuleRecord> {
    return this.sorted("rules", this.grouped(this.tables.rules, "addressSet", addressSetId))
  }
  pod(id: string): PodRecord | undefined {
    return Option.getOrUndefined(Table.get(this.tables.pods, id))
  }
  get pods(): ReadonlyArray<PodRecord> {
    return this.sorted("pods", this.tables.pods.rows)
  }
  podsOf(vpcId: string): ReadonlyArray<PodRecord> {
    return this.sorted("pods", this.grouped(this.tables.pods, "vpc", vpcId))
  }
  tunnel(id: string): TunnelRecord | undefined {
    return Option.getOrUndefined(Table.get(this.tables.tunnels, id))
  }
  get tunnels(): ReadonlyArray<TunnelRecord> {
    return this.sorted("tunnels", this.tables.tunnels.rows)
  }
  tunnelsOf(podId: string): ReadonlyArray<TunnelRecord> {
    return this.sorted("tunnels", this.grouped(this.tables.tunnels, "pod", podId))
  }
  credential(name: string): RegistryCredentialRecord | undefined {
    return Option.getOrUndefined(Table.get(this.tables.credentials, name))
  }
  get credentials(): ReadonlyArray<RegistryCredentialRecord> {
    return this.sorted("credentials", this.tables.credentials.rows)
  }
  get domains(): ReadonlyArray<DomainRecord> {
    return this.sorted("domains", this.tables.domains.rows)
  }
  guardrail(id: string): GuardrailRecord | undefined {
    return Option.getOrUndefined(Table.get(this.tables.guardrails, id))
  }
  /** Every guardrail of the tenant, oldest first: tenant-wide ones and each VPC's. */
  get guardrails(): ReadonlyArray<GuardrailRecord> {
    return this.sorted("guardrails", this.tables.guardrails.rows)
  }
  addressSet(id: string): AddressSetRecord | undefined {
    return Option.getOrUndefined(Table.get(this.tables.addressSets, id))
  }
  /** The tenant's address sets, oldest first. */
  get addressSets(): ReadonlyArray<AddressSetRecord> {
    return this.sorted("addressSets", this.tables.addressSets.rows)
  }
  /** The guardrails that hold in a VPC, oldest first: its own and the tenant-wide ones. */
  guardrailsOf(vpcId: string): ReadonlyArray<GuardrailRecord> {
    return this.guardrails.filter((g) => g.vpc_id === null || g.vpc_id === vpcId)
  }

  /**
   * What identifies the version of a kind of rows (the whole table, or one VPC's), for a
   * derivation's inputs: it is replaced by any change to those rows and by nothing else.
   */
  entryOf(part: Part, of?: { readonly vpc: VpcId }): unknown {
    const table = this.tables[part] as Table.Table<unknown, string>
    return of === undefined ? table.rows : this.grouped(table, "vpc", of.vpc)
  }

  /** `derivation` of `input`: computed once while its inputs stay what they are. */
  memo<I, A>(derivation: Derivation<I, A>, input: I): A {
    const inputs = derivation.inputs(this, input)
    let byKey = this.memos.get(derivation as Derivation<never, unknown>)
    if (byKey === undefined) {
      byKey = new Map()
      this.memos.set(derivation as Derivation<never, unknown>, byKey)
    }
    const key = derivation.key(input)
    let kept = byKey.get(key)
    if (kept === undefined) {
      kept = []
      byKey.set(key, kept)
    }
    const at = kept.findIndex((k) => sameInputs(k.inputs, inputs))
    if (at >= 0) {
      const found = kept[at]!
      // The latest read goes first: an older state's read does not push out what the next write needs.
      if (at > 0) kept.splice(0, 0, ...kept.splice(at, 1))
      return found.value as A
    }
    const value = derivation.compute(this, input)
    kept.unshift({ inputs, value })
    if (kept.length > KEPT) kept.pop()
    return value
  }

  /** Every row of `part` in the store's order: oldest first; rules VPC by VPC, each VPC's by `seq`. */
  list<P extends Part>(part: P): ReadonlyArray<Kind.RecordOf<P>> {
    const table = this.tables[part] as Table.Table<Kind.RecordOf<P>, string>
    return Kind.KINDS[part].order === "seq"
      ? this.vpcs.flatMap((v) => this.owned(part, table, "vpc", v.id))
      : this.sorted(part, table.rows)
  }

  /** The rows of `part` whose index `index` is `value`, in the order its kind lists them. */
  private owned<P extends Part>(part: P, table: Table.Table<Kind.RecordOf<P>, string>, index: string, value: string) {
    return this.sorted(part, this.grouped(table, index, value))
  }

  /**
   * What removing the row `part`/`key` takes along (`Kind.CASCADES`), in `KINDS` order, each
   * owned row followed by what it owns in turn.
   */
  cascadeOf(part: Part, key: string): ReadonlyArray<Change.Row> {
    return Kind.CASCADES[part].flatMap(([child, by]) =>
      this.owned(child, this.tables[child] as Table.Table<Kind.RecordOf<Part>, string>, Kind.OWNER_INDEX[by], key)
        .flatMap((record) => {
          const row = { part: child, record } as Change.Row
          return [row, ...this.cascadeOf(child, Kind.keyOf(row))]
        })
    )
  }

  /**
   * The state as a snapshot, each list in the store's order (rules by VPC, then `seq`): two
   * states hold the same rows exactly when their snapshots are equal.
   */
  toSnapshot(): TenantSnapshot {
    return {
      rows: Kind.byPart((part) => this.list(part)) as Kind.Rows,
      revision: this.revision,
      vpcVersions: Object.fromEntries(this.vpcs.map((v) => [v.id, this.vpcVersion(v.id)!])),
      scopeVersion: this.scopeVersion
    }
  }
}
