/**
 * A table of records held in memory (the memory store's, the read model's): rows by key, and secondary indexes (for each value
 * of an indexed field, the rows that have it, by key). Everything is persistent, so a
 * transaction's draft is a cheap copy, and a list costs what it returns rather than what the
 * store holds (a scan of every tenant's VPCs to list one tenant's would grow with the tenants).
 * Index entries hold the rows themselves, so a list reads them without hashing each key again.
 */
import { HashMap, Option } from "effect"

type Index<R> = HashMap.HashMap<string, HashMap.HashMap<string, R>>

export interface Table<R, I extends string> {
  readonly rows: HashMap.HashMap<string, R>
  readonly indexes: { readonly [K in I]: Index<R> }
}

/** How a table keys its rows and what it indexes; an index function answers null to leave a row out. */
export interface Definition<R, I extends string> {
  readonly key: (record: R) => string
  readonly indexes: { readonly [K in I]: (record: R) => string | null }
  /**
   * Indexes whose emptied entries stay (as a new empty entry) rather than go: an entry's
   * identity then never comes back, so identities of entries can name versions (`entry`).
   */
  readonly retained?: ReadonlyArray<I>
}

export const define = <R, I extends string>(definition: Definition<R, I>) => definition

export const empty = <R, I extends string>(definition: Definition<R, I>): Table<R, I> => ({
  rows: HashMap.empty(),
  indexes: Object.fromEntries(
    Object.keys(definition.indexes).map((name) => [name, HashMap.empty<string, HashMap.HashMap<string, R>>()])
  ) as Table<R, I>["indexes"]
})

const names = <R, I extends string>(definition: Definition<R, I>) => Object.keys(definition.indexes) as Array<I>

const withEntry = <R>(index: Index<R>, value: string, key: string, record: R) =>
  HashMap.modifyAt(index, value, (rows) => Option.some(HashMap.set(Option.getOrElse(rows, HashMap.empty), key, record)))

const withoutEntry = <R>(index: Index<R>, value: string, key: string, retained: boolean) =>
  HashMap.modifyAt(index, value, (rows) =>
    Option.flatMap(rows, (entry) => {
      const rest = HashMap.remove(entry, key)
      if (retained) return Option.some(rest)
      return HashMap.size(rest) === 0 ? Option.none() : Option.some(rest)
    }))

export const get = <R, I extends string>(table: Table<R, I>, key: string): Option.Option<R> =>
  HashMap.get(table.rows, key)

export const has = <R, I extends string>(table: Table<R, I>, key: string): boolean => HashMap.has(table.rows, key)

/** Inserts or replaces the row, moving it between index entries when indexed fields changed. */
export const put = <R, I extends string>(definition: Definition<R, I>, table: Table<R, I>, record: R): Table<R, I> => {
  const key = definition.key(record)
  const previous = Option.getOrUndefined(HashMap.get(table.rows, key))
  const indexes: Record<I, Index<R>> = { ...table.indexes }
  for (const name of names(definition)) {
    const valueOf = definition.indexes[name]
    const before = previous === undefined ? null : valueOf(previous)
    const after = valueOf(record)
    let index = indexes[name]
    if (before !== null && before !== after) {
      index = withoutEntry(index, before, key, definition.retained?.includes(name) ?? false)
    }
    if (after !== null) index = withEntry(index, after, key, record)
    indexes[name] = index
  }
  return { rows: HashMap.set(table.rows, key, record), indexes }
}

export const remove = <R, I extends string>(
  definition: Definition<R, I>,
  table: Table<R, I>,
  key: string
): Table<R, I> => {
  const previous = Option.getOrUndefined(HashMap.get(table.rows, key))
  if (previous === undefined) return table
  const indexes: Record<I, Index<R>> = { ...table.indexes }
  for (const name of names(definition)) {
    const value = definition.indexes[name](previous)
    if (value !== null) {
      indexes[name] = withoutEntry(indexes[name], value, key, definition.retained?.includes(name) ?? false)
    }
  }
  return { rows: HashMap.remove(table.rows, key), indexes }
}

/** The rows whose indexed field `index` has `value`, in no particular order. */
export const lookup = <R, I extends string>(table: Table<R, I>, index: NoInfer<I>, value: string): Array<R> => {
  const rows = HashMap.get(table.indexes[index], value)
  // A copy: callers sort what they get in place, and the cached array is shared.
  return Option.isNone(rows) ? [] : rowsOf(rows.value).slice()
}

/**
 * The index entry for `value`, as an object that is replaced whenever one of its rows is
 * inserted, changed or removed (entries are persistent), or undefined when it has no rows.
 * Comparing entries by identity is how the memory store tells whether a tenant's rows changed.
 */
export const entry = <R, I extends string>(table: Table<R, I>, index: NoInfer<I>, value: string): object | undefined =>
  Option.getOrUndefined(HashMap.get(table.indexes[index], value))

/** An index entry's rows: entries are immutable, so each is walked once, not at every list. */
const entryRows = new WeakMap<object, ReadonlyArray<unknown>>()
const rowsOf = <R>(entry: HashMap.HashMap<string, R>): ReadonlyArray<R> => {
  let rows = entryRows.get(entry) as ReadonlyArray<R> | undefined
  if (rows === undefined) {
    rows = Array.from(HashMap.values(entry))
    entryRows.set(entry, rows)
  }
  return rows
}

/** Removes every row whose indexed field `index` has `value`. */
export const removeAll = <R, I extends string>(
  definition: Definition<R, I>,
  table: Table<R, I>,
  index: NoInfer<I>,
  value: string
): Table<R, I> =>
  lookup(table, index, value).reduce((t, record) => remove(definition, t, definition.key(record)), table)

export const values = <R, I extends string>(table: Table<R, I>): Array<R> => Array.from(HashMap.values(table.rows))
