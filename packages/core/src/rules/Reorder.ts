/**
 * `reorder`: new priorities 10, 20, 30, ... for a VPC's rules in the order given. The list
 * must name every rule of the VPC exactly once.
 */
import { Either } from "effect"
import type { SecurityRuleId } from "../domain/Ids.js"

export const STEP = 10

export type ReorderError =
  /** An id that is not a rule of this VPC (404 in the API). */
  | { readonly _tag: "UnknownRule"; readonly rule_id: SecurityRuleId }
  /** An id listed twice (422). */
  | { readonly _tag: "DuplicateRule"; readonly rule_id: SecurityRuleId }
  /** Rules of the VPC that the list leaves out (422). */
  | { readonly _tag: "MissingRules"; readonly rule_ids: ReadonlyArray<SecurityRuleId> }

export const reorder = (
  current: ReadonlyArray<SecurityRuleId>,
  requested: ReadonlyArray<SecurityRuleId>
): Either.Either<ReadonlyMap<SecurityRuleId, number>, ReorderError> => {
  const known = new Set(current)
  const seen = new Set<SecurityRuleId>()
  for (const id of requested) {
    if (!known.has(id)) return Either.left({ _tag: "UnknownRule", rule_id: id })
    if (seen.has(id)) return Either.left({ _tag: "DuplicateRule", rule_id: id })
    seen.add(id)
  }
  const missing = current.filter((id) => !seen.has(id))
  if (missing.length > 0) return Either.left({ _tag: "MissingRules", rule_ids: missing })
  return Either.right(new Map(requested.map((id, index) => [id, (index + 1) * STEP])))
}
