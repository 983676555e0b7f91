/**
 * The decisions on a tenant's address sets, pure functions of the tenant's state: a create
 * within the tenant's limit, a change of the fields a patch names, a delete while no rule names
 * the set; each refused when the set is gone or is no longer the version the caller named
 * (`If-Match`). Writes of a set are decided on the tenant's scope (`Change.movesScope`), so two
 * of them racing are decided one after another, the second on what the first committed.
 *
 * A set is in every VPC's context, and any rule write may name it: an edit of its entries, and
 * its delete, are decided on every VPC of the tenant and step every one (as a tenant-wide
 * guardrail's create does). A rule write racing it, in whichever VPC, is decided again after it
 * (on the new entries, or on the set gone), and it is decided again after the rule write (which
 * it then sees naming the set): rule writes stay on their own VPC, and the cost is the set's,
 * the rarer write.
 */
import { Either } from "effect"
import type { Decision } from "../../changes/Pipeline.js"
import { creating, removing } from "../../changes/Pipeline.js"
import type { AddressSetPatch, AddressSetRecord } from "../../domain/AddressSet.js"
import { etagOf } from "../../domain/AddressSet.js"
import type { VpcId } from "../../domain/Ids.js"
import type { SecurityRuleRecord } from "../../domain/SecurityRule.js"
import { Conflict, NotFound, PreconditionFailed } from "../../Errors.js"
import * as Change from "../../kinds/Change.js"
import type { TenantState } from "../../readmodel/TenantState.js"

/** The most address sets one tenant may have (AWS's default quota of prefix lists per region). */
export const MAX_ADDRESS_SETS = 100

const missing = (id: string) => `address set ${id} not found`

/** `record` added to the tenant, while it has fewer than `MAX_ADDRESS_SETS`. */
export const create =
  (record: AddressSetRecord) => (state: TenantState): Either.Either<Decision<AddressSetRecord>, Conflict> =>
    state.addressSets.length >= MAX_ADDRESS_SETS
      ? Either.left(new Conflict({ detail: `the tenant already has ${MAX_ADDRESS_SETS} address sets` }))
      : Either.right(creating({ part: "addressSets", record }))

/** Every VPC of the tenant, decided on and stepped: a write that moves what a set's name means. */
const everyVpc = (state: TenantState): ReadonlyArray<VpcId> => state.vpcs.map((v) => v.id)

const sameEntries = (a: AddressSetRecord["entries"], b: AddressSetRecord["entries"]) =>
  a.length === b.length && a.every((e, i) => e.cidr === b[i]!.cidr)

/** An edit's answer: the set as saved, and whether its networks changed (a note or description moves no verdict). */
export interface Edited {
  readonly record: AddressSetRecord
  readonly moves: boolean
}

/**
 * The set with the fields `patch` names replaced (its entries as a whole), at `now`; decided on
 * and stepping every VPC when its networks change.
 */
export const update =
  (id: string, patch: AddressSetPatch, ifMatch: string | undefined, now: AddressSetRecord["updated_at"]) =>
  (state: TenantState): Either.Either<Decision<Edited>, NotFound | PreconditionFailed> => {
    const current = state.addressSet(id)
    if (current === undefined) return Either.left(new NotFound({ detail: missing(id) }))
    return Either.map(PreconditionFailed.unmoved(`address set ${id}`, etagOf(current), ifMatch), () => {
      const next: AddressSetRecord = {
        ...current,
        description: patch.description === undefined ? current.description : patch.description,
        entries: patch.entries === undefined
          ? current.entries
          : patch.entries.map((e) => ({ cidr: e.cidr, description: e.description })),
        updated_at: now
      }
      const moves = !sameEntries(current.entries, next.entries)
      const vpcs = moves ? everyVpc(state) : []
      return {
        writes: [Change.update({ part: "addressSets", record: next }), ...vpcs.map(Change.touch)],
        decidedOn: vpcs,
        subject: id,
        result: { record: next, moves }
      }
    })
  }

/** The most rules a refused delete names; the count says how many more. */
const NAMED_RULES = 10

/** The rules naming the set, for the refusal of its delete: each by name, id and VPC. */
const usedBy = (rules: ReadonlyArray<SecurityRuleRecord>): string => {
  const named = rules.slice(0, NAMED_RULES).map((r) => `'${r.name}' (${r.id}) in VPC ${r.vpc_id}`).join(", ")
  return rules.length > NAMED_RULES ? `${named} and ${rules.length - NAMED_RULES} more` : named
}

/** The set removed; refused while any rule names it (a rule's remote cannot vanish under it). */
export const remove =
  (id: string, ifMatch: string | undefined) =>
  (state: TenantState): Either.Either<Decision<void>, NotFound | PreconditionFailed | Conflict> =>
    Either.flatMap(
      removing(
        state,
        "addressSets",
        id,
        missing(id),
        undefined,
        (current) => PreconditionFailed.unmoved(`address set ${id}`, etagOf(current), ifMatch)
      ),
      (decision) => {
        const rules = state.rulesUsing(id)
        const vpcs = everyVpc(state)
        return rules.length === 0
          ? Either.right({ ...decision, writes: [...decision.writes, ...vpcs.map(Change.touch)], decidedOn: vpcs })
          : Either.left(
            new Conflict({
              detail: `address set ${id} is the remote of ${rules.length} rule${rules.length === 1 ? "" : "s"}: ${
                usedBy(rules)
              }; change or delete them first`
            })
          )
      }
    )
