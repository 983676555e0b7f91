/**
 * What each change to a VPC's security rules is, decided on the tenant's state: pure
 * functions from a `TenantState` to a `Decision` (or the refusal), which `Pipeline` commits.
 * Each names the VPC it read (`decidedOn`), so the 200-rule limit, the next `seq` and the
 * order a reorder read hold exactly when it commits, whichever process commits what meanwhile.
 */
import { Either } from "effect"
import type { Decision } from "../../changes/Pipeline.js"
import { creating, removing } from "../../changes/Pipeline.js"
import * as Etag from "../../domain/Etag.js"
import type { SecurityRuleId, VpcId } from "../../domain/Ids.js"
import type { RuleDeclaration, SecurityRulePatch, SecurityRuleRecord } from "../../domain/SecurityRule.js"
import { etagOf, MAX_RULES_PER_VPC } from "../../domain/SecurityRule.js"
import { Conflict, NotFound, PreconditionFailed, RuleValidation } from "../../Errors.js"
import * as Change from "../../kinds/Change.js"
import { vpcContextOf } from "../../readmodel/Derived.js"
import type { TenantState } from "../../readmodel/TenantState.js"
import * as Declaration from "../../rules/Declaration.js"
import * as Reorder from "../../rules/Reorder.js"
import * as Validate from "../../rules/Validate.js"

type Decided<A, E> = Either.Either<Decision<A>, E>

const vpcNotFound = (vpcId: VpcId) => new NotFound({ detail: `VPC ${vpcId} not found` })
const ruleNotFound = (id: SecurityRuleId) => new NotFound({ detail: `security rule ${id} not found` })

/**
 * What a rule of `vpcId` may name as `state` holds it (`peering`: the provider's peering block):
 * the tenant's VPCs and address sets, the VPC's subnets and pods. Read in the decision, so a rule naming a subnet
 * or pod deleted meanwhile is refused when the decision is made again on the newer state.
 */
export const referencesIn = (state: TenantState, vpcId: VpcId, peering: string | null): Validate.References => {
  const context = vpcContextOf(state, vpcId, peering)
  return {
    vpcs: new Set(context.vpcs.keys()),
    addressSets: new Set(context.addressSets.keys()),
    subnets: new Set(context.subnets.keys()),
    pods: new Set(context.pods.keys())
  }
}

/** The rule a create makes, before the state gives it its place (`seq`). */
export type NewRule = Omit<SecurityRuleRecord, "seq">

/**
 * A create: the rule goes last in its VPC's creation order; refused when the VPC is gone, when
 * it names what the VPC does not have, or when the VPC already holds `MAX_RULES_PER_VPC` rules.
 * Answers the rule and the VPC's rules with it.
 */
export const create = (rule: NewRule, peering: string | null) =>
(
  state: TenantState
): Decided<
  { readonly record: SecurityRuleRecord; readonly rules: ReadonlyArray<SecurityRuleRecord> },
  NotFound | Conflict | RuleValidation
> => {
  if (state.vpc(rule.vpc_id) === undefined) return Either.left(vpcNotFound(rule.vpc_id))
  const invalid = Validate.validate(rule, referencesIn(state, rule.vpc_id, peering))
  if (Either.isLeft(invalid)) return Either.left(RuleValidation.field(invalid.left.field, invalid.left.message))
  const existing = state.rulesOf(rule.vpc_id)
  if (existing.length >= MAX_RULES_PER_VPC) {
    return Either.left(
      new Conflict({ detail: `VPC ${rule.vpc_id} already has ${MAX_RULES_PER_VPC} rules, the most it may have` })
    )
  }
  const record: SecurityRuleRecord = { ...rule, seq: existing.reduce((max, r) => Math.max(max, r.seq), 0) + 1 }
  return Either.right({
    ...creating({ part: "rules", record }),
    decidedOn: [rule.vpc_id],
    result: { record, rules: [...existing, record] }
  })
}

/** What a patch answers: the rule saved and the VPC's rules before it. */
export interface Updated {
  readonly saved: SecurityRuleRecord
  readonly before: ReadonlyArray<SecurityRuleRecord>
}

/**
 * A patch, applied to the rule as the state holds it (a reorder or another patch committed
 * meanwhile is kept), validated against what the state's VPC holds (`referencesIn`). Answers the
 * rule saved and the VPC's rules before it.
 */
export const update = (
  id: SecurityRuleId,
  vpcId: VpcId,
  patch: SecurityRulePatch,
  peering: string | null,
  now: SecurityRuleRecord["updated_at"],
  ifMatch?: string
) =>
(
  state: TenantState
): Decided<Updated, NotFound | RuleValidation | PreconditionFailed> => {
  const current = state.rule(id)
  if (current === undefined || current.vpc_id !== vpcId) return Either.left(ruleNotFound(id))
  return unmoved(current, ifMatch).pipe(
    Either.flatMap(() => Validate.applyPatch(current, patch)),
    Either.flatMap((next) => Either.map(Validate.validate(next, referencesIn(state, vpcId, peering)), () => next)),
    Either.mapLeft((e) => e instanceof PreconditionFailed ? e : RuleValidation.field(e.field, e.message)),
    Either.map((next) => {
      const saved = { ...next, updated_at: now }
      return {
        writes: [Change.update({ part: "rules", record: saved })],
        decidedOn: [vpcId],
        subject: id,
        result: { saved, before: state.rulesOf(vpcId) }
      }
    })
  )
}

/** A delete: answers the VPC's rules before it. */
export const remove = (id: SecurityRuleId, vpcId: VpcId, ifMatch?: string) =>
(
  state: TenantState
): Decided<ReadonlyArray<SecurityRuleRecord>, NotFound | PreconditionFailed> =>
  Either.map(
    removing(state, "rules", id, ruleNotFound(id).detail, vpcId, (current) => unmoved(current, ifMatch)),
    (decision) => ({ ...decision, result: state.rulesOf(vpcId) })
  )

/** Refused (412) when `ifMatch` (an `If-Match` header) does not name the rule's ETag as the state holds it. */
const unmoved = (rule: SecurityRuleRecord, ifMatch: string | undefined): Either.Either<void, PreconditionFailed> =>
  PreconditionFailed.unmoved(`security rule ${rule.id}`, etagOf(rule), ifMatch)

/**
 * A reorder: `ruleIds` must list every rule of the VPC once; priorities become 10, 20, 30, ...
 * in that order. Answers the rules before and after.
 */
export const reorder = (
  vpcId: VpcId,
  ruleIds: ReadonlyArray<SecurityRuleId>,
  now: SecurityRuleRecord["updated_at"]
) =>
(
  state: TenantState
): Decided<
  { readonly rules: ReadonlyArray<SecurityRuleRecord>; readonly next: ReadonlyArray<SecurityRuleRecord> },
  NotFound | RuleValidation
> => {
  if (state.vpc(vpcId) === undefined) return Either.left(vpcNotFound(vpcId))
  const rules = state.rulesOf(vpcId)
  return Reorder.reorder(rules.map((r) => r.id), ruleIds).pipe(
    Either.mapLeft((e) =>
      e._tag === "UnknownRule"
        ? new NotFound({ detail: `security rule ${e.rule_id} is not a rule of VPC ${vpcId}` })
        : e._tag === "DuplicateRule"
        ? RuleValidation.field("rule_ids", `lists ${e.rule_id} more than once`)
        : RuleValidation.field("rule_ids", `must list every rule of the VPC; missing: ${e.rule_ids.join(", ")}`)
    ),
    Either.map((priorities) => {
      const next = rules.map((r) => ({ ...r, priority: priorities.get(r.id)!, updated_at: now }))
      return {
        writes: next.map((record) => Change.update({ part: "rules", record })),
        decidedOn: [vpcId],
        subject: vpcId,
        result: { rules, next }
      }
    })
  )
}

/** What a declarative replace answers: its outcome, and the rules' ETag before it. */
export interface Replacement extends Declaration.Outcome {
  readonly before: ReadonlyArray<SecurityRuleRecord>
  readonly etag: string
}

/**
 * A declarative replace: the VPC's rules become exactly `items` (`rules/Declaration.ts`).
 * Refused when `ifMatch` (an `If-Match` header) does not name the rules' ETag, when any item
 * is invalid (all named), or when the end state would hold more than `MAX_RULES_PER_VPC`.
 * Every rule it creates, changes or deletes is a subject of its own (one audit entry each).
 */
export const replace = (
  vpcId: VpcId,
  items: ReadonlyArray<RuleDeclaration>,
  peering: string | null,
  ifMatch: string | undefined,
  making: Declaration.Making
) =>
(state: TenantState): Decided<Replacement, NotFound | Conflict | RuleValidation | PreconditionFailed> => {
  if (state.vpc(vpcId) === undefined) return Either.left(vpcNotFound(vpcId))
  const before = state.rulesOf(vpcId)
  const etag = Declaration.etagOf(before)
  if (ifMatch !== undefined && !Etag.matches(ifMatch, etag)) {
    const why = Etag.unmatched(ifMatch, etag)
    return Either.left(
      new PreconditionFailed({
        detail: why === undefined
          ? `the rules of VPC ${vpcId} changed since ${Etag.named(ifMatch)}: they are now at ${etag}`
          : `the rules of VPC ${vpcId}: ${why}`
      })
    )
  }
  const sets = new Map(state.addressSets.map((set) => [set.name, set.id]))
  return Declaration.plan(before, items, referencesIn(state, vpcId, peering), making, sets).pipe(
    Either.mapLeft((problems) => new RuleValidation({ ...problems[0]!, errors: problems })),
    Either.filterOrLeft(
      (outcome) => outcome.moved.length === 0,
      (outcome) =>
        new PreconditionFailed({
          detail: `${
            outcome.moved.map((i) => `rules[${i}]`).join(", ")
          } changed since the etag given (or is gone): nothing was changed`
        })
    ),
    Either.filterOrLeft(
      (outcome) => outcome.next.length <= MAX_RULES_PER_VPC,
      (outcome) =>
        new Conflict({
          detail:
            `the declaration leaves VPC ${vpcId} with ${outcome.next.length} rules; it may have at most ${MAX_RULES_PER_VPC}`
        })
    ),
    Either.map((outcome) => ({
      writes: [
        ...outcome.deleted.map((r) => Change.remove("rules", r.id, vpcId)),
        ...outcome.updated.map((record) => Change.update({ part: "rules", record })),
        ...outcome.created.map((record) => Change.insert({ part: "rules", record }))
      ],
      decidedOn: [vpcId],
      subject: vpcId,
      subjects: [...outcome.created, ...outcome.updated, ...outcome.deleted].map((r) => r.id),
      result: { ...outcome, before, etag }
    }))
  )
}
