/**
 * A VPC's declared policy against its rules: which existing rule each declared item is (by
 * `id`, else by `name`), and so what a declarative replace creates, changes in place,
 * deletes and leaves alone. Pure; the use case commits the outcome as one change.
 *
 * Matching is by `id` first; items without one match the existing rules no id claimed, by
 * name. Where a name does not say which rule is meant (two items, or two unclaimed existing
 * rules, with one name) the declaration is refused: guessing would change the wrong rule.
 */
import { Either } from "effect"
import * as Etag from "../domain/Etag.js"
import type { AddressSetId, SecurityRuleId } from "../domain/Ids.js"
import type { RuleDeclaration, SecurityRuleRecord } from "../domain/SecurityRule.js"
import * as SecurityRule from "../domain/SecurityRule.js"
import type { FieldError, References } from "./Validate.js"
import { validate } from "./Validate.js"

/** The fields a declaration sets: everything a user writes of a rule, in the order it is written. */
export const FIELDS = [
  "name",
  "description",
  "direction",
  "action",
  "priority",
  "protocol",
  "ports",
  "remote_type",
  "remote_cidr",
  "remote_vpc_id",
  "remote_address_set_id",
  "target_type",
  "target_subnet_id",
  "target_pod_ids",
  "enabled"
] as const satisfies ReadonlyArray<keyof RuleDeclaration & keyof SecurityRuleRecord>

type Declared = Pick<SecurityRuleRecord, typeof FIELDS[number]>

/** The tenant's address sets by name, for items that name a set by its name. */
export type SetsByName = ReadonlyMap<string, AddressSetId>

/** An item's declared fields, its set named by id (an unknown name is none: validation names the field). */
const declaredOf = (item: RuleDeclaration, sets: SetsByName): Declared => {
  const { etag: _etag, id: _id, remote_address_set_name: setName, ...fields } = item
  return setName === undefined ? fields : { ...fields, remote_address_set_id: sets.get(setName) ?? null }
}

/** The problem with how an item names its address set, if any. */
const setNameProblem = (item: RuleDeclaration, sets: SetsByName): string | undefined => {
  if (item.remote_address_set_name === undefined) return undefined
  if (item.remote_address_set_id !== null) return "give remote_address_set_id or remote_address_set_name, not both"
  if (item.remote_type !== "address_set") return "only allowed when remote_type is address_set"
  return sets.has(item.remote_address_set_name)
    ? undefined
    : `you have no address set named "${item.remote_address_set_name}"`
}

const sameValue = (a: unknown, b: unknown): boolean =>
  Array.isArray(a) && Array.isArray(b)
    ? a.length === b.length && a.every((v, i) => v === b[i])
    : a === b

/** Whether `record` already holds every declared field as `declared` has it. */
const holds = (record: SecurityRuleRecord, declared: Declared) =>
  FIELDS.every((field) => sameValue(record[field], declared[field]))

/** What a declaration does to the VPC's rules. */
export interface Outcome {
  readonly created: ReadonlyArray<SecurityRuleRecord>
  readonly updated: ReadonlyArray<SecurityRuleRecord>
  readonly deleted: ReadonlyArray<SecurityRuleRecord>
  readonly unchanged: ReadonlyArray<SecurityRuleRecord>
  /** The VPC's rules after it, in creation order (`seq`). */
  readonly next: ReadonlyArray<SecurityRuleRecord>
  /**
   * The items whose `etag` does not name the rule they are as it is now (none: a rule that is
   * gone), by index: a replace with any is refused (412).
   */
  readonly moved: ReadonlyArray<number>
}

/** Whether an outcome writes anything. */
export const changes = (outcome: Outcome): boolean =>
  outcome.created.length + outcome.updated.length + outcome.deleted.length > 0

/** What a new rule is given besides its declared fields. */
export interface Making {
  readonly newId: () => SecurityRuleId
  readonly stamp: (record: Declared & { readonly id: SecurityRuleId; readonly seq: number }) => SecurityRuleRecord
  readonly touch: (record: SecurityRuleRecord) => SecurityRuleRecord
}

/**
 * The outcome of declaring `items` over the VPC's `existing` rules (creation order), or every
 * problem found, each naming its item (`rules[3].name`).
 */
export const plan = (
  existing: ReadonlyArray<SecurityRuleRecord>,
  items: ReadonlyArray<RuleDeclaration>,
  references: References,
  making: Making,
  sets: SetsByName = new Map()
): Either.Either<Outcome, ReadonlyArray<FieldError>> => {
  const problems: Array<FieldError> = []
  const byId = new Map(existing.map((r) => [r.id as string, r]))
  const match = new Map<number, SecurityRuleRecord>()
  const claimedBy = new Map<string, number>()
  items.forEach((item, i) => {
    if (item.id === undefined) return
    const earlier = claimedBy.get(item.id)
    const record = byId.get(item.id)
    if (earlier !== undefined) {
      problems.push({ field: `rules[${i}].id`, message: `${item.id} is declared twice (also rules[${earlier}])` })
    } else if (record === undefined) {
      problems.push({ field: `rules[${i}].id`, message: `${item.id} is not a rule of this VPC` })
    } else {
      claimedBy.set(item.id, i)
      match.set(i, record)
    }
  })
  const unclaimedByName = new Map<string, Array<SecurityRuleRecord>>()
  for (const record of existing) {
    if (claimedBy.has(record.id)) continue
    unclaimedByName.set(record.name, [...(unclaimedByName.get(record.name) ?? []), record])
  }
  const itemsByName = new Map<string, Array<number>>()
  items.forEach((item, i) => {
    if (item.id === undefined) itemsByName.set(item.name, [...(itemsByName.get(item.name) ?? []), i])
  })
  items.forEach((item, i) => {
    if (item.id !== undefined) return
    const sameName = itemsByName.get(item.name)!
    const candidates = unclaimedByName.get(item.name) ?? []
    if (sameName.length > 1) {
      const others = sameName.filter((j) => j !== i).map((j) => `rules[${j}]`).join(", ")
      problems.push({
        field: `rules[${i}].name`,
        message: `"${item.name}" is also the name of ${others}: give each its id or a name of its own`
      })
    } else if (candidates.length > 1) {
      problems.push({
        field: `rules[${i}].name`,
        message: `"${item.name}" names ${candidates.length} rules (${
          candidates.map((r) => r.id).join(", ")
        }): give the id of the one meant`
      })
    } else if (candidates.length === 1) {
      match.set(i, candidates[0]!)
    }
  })
  items.forEach((item, i) => {
    const setName = setNameProblem(item, sets)
    if (setName !== undefined) {
      problems.push({ field: `rules[${i}].remote_address_set_name`, message: setName })
      return
    }
    Either.match(validate(declaredOf(item, sets), references), {
      onLeft: (e) => problems.push({ field: `rules[${i}].${e.field}`, message: e.message }),
      onRight: () => undefined
    })
  })
  if (problems.length > 0) {
    const index = (p: FieldError) => Number(/^rules\[(\d+)\]/.exec(p.field)?.[1] ?? 0)
    return Either.left(problems.sort((a, b) => index(a) - index(b)))
  }
  const moved = items.flatMap((item, i) => {
    const current = match.get(i)
    return item.etag === undefined || (current !== undefined && Etag.matches(item.etag, SecurityRule.etagOf(current)))
      ? []
      : [i]
  })
  const created: Array<SecurityRuleRecord> = []
  const updated: Array<SecurityRuleRecord> = []
  const unchanged: Array<SecurityRuleRecord> = []
  const kept = new Map<string, SecurityRuleRecord>()
  let seq = existing.reduce((max, r) => Math.max(max, r.seq), 0)
  items.forEach((item, i) => {
    const declared = declaredOf(item, sets)
    const current = match.get(i)
    if (current === undefined) {
      const record = making.stamp({ ...declared, id: making.newId(), seq: ++seq })
      created.push(record)
    } else if (holds(current, declared)) {
      unchanged.push(current)
      kept.set(current.id, current)
    } else {
      const record = making.touch({ ...current, ...declared })
      updated.push(record)
      kept.set(current.id, record)
    }
  })
  const deleted = existing.filter((r) => !kept.has(r.id))
  const next = [...existing.flatMap((r) => kept.get(r.id) ?? []), ...created]
  return Either.right({ created, updated, deleted, unchanged, next, moved })
}

/**
 * The ETag of a VPC's rules: a digest of every rule's fields in creation order, so it changes
 * with any change to them and is the same on every replica and store.
 */
export const etagOf = (rules: ReadonlyArray<SecurityRuleRecord>): string =>
  Etag.digest(JSON.stringify(rules.map((r) => [r.id, r.seq, ...FIELDS.map((field) => r[field])])))
