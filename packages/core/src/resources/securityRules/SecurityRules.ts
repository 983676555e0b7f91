/**
 * Security rules (tenant; own VPCs only): the spec's section 4 rules 1-5. Every change is
 * saved first and then applied through the NetworkApplier; the response says whether it is
 * in force (`applied`) or why not yet (`apply_error`).
 */
import type { Either } from "effect"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import * as Audit from "../../changes/Audit.js"
import { connectionsMoved, violationsOf } from "../../changes/Invariants.js"
import type { Committed, Decision } from "../../changes/Pipeline.js"
import { INVARIANTS, Pipeline } from "../../changes/Pipeline.js"
import { TRUSTED } from "../../domain/Common.js"
import type { SecurityRuleId, VpcId } from "../../domain/Ids.js"
import { randomUuid, SecurityRuleId as RuleId } from "../../domain/Ids.js"
import type { TenantPrincipal } from "../../domain/Principal.js"
import type {
  RuleDeclaration,
  RuleImpact,
  RuleList,
  SecurityRule,
  SecurityRuleCreate,
  SecurityRulePatch,
  SecurityRuleRecord
} from "../../domain/SecurityRule.js"
import { etagOf, RuleAnalysis, RuleMutation, RuleRemoval, RulesPlan, RulesReplaced } from "../../domain/SecurityRule.js"
import type { VpcRecord } from "../../domain/Vpc.js"
import type { RuleValidation, TooManyRequests } from "../../Errors.js"
import type {
  Conflict,
  GuardrailViolated,
  IdempotencyKeyReused,
  NotFound,
  PreconditionFailed,
  ServiceUnavailable
} from "../../Errors.js"
import { storeUnavailable } from "../../ports/Failures.js"
import { connectionsOf, findingsOf, vpcContextOf } from "../../readmodel/Derived.js"
import { liveVpc } from "../../readmodel/Ownership.js"
import { ReadModel } from "../../readmodel/ReadModel.js"
import type { Derivation, TenantState } from "../../readmodel/TenantState.js"
import * as Declaration from "../../rules/Declaration.js"
import * as RuleSet from "../../rules/RuleSet.js"
import { Fairness } from "../../usecases/Fairness.js"
import type { ApplyState } from "../../usecases/NetworkApplier.js"
import { NetworkApplier, together } from "../../usecases/NetworkApplier.js"
import { Resources } from "../Resources.js"
import { Vpcs } from "../vpcs/Vpcs.js"
import { findingOf, impactOf, ruleList, view } from "./RulePresentation.js"
import * as Strategy from "./SecurityRuleStrategy.js"

type Failure = NotFound | RuleValidation | ServiceUnavailable
/** What a read fails with: it validates nothing of the rules' (its path and query are the platform's to check). */
type Lookup = NotFound | ServiceUnavailable

/** A VPC's rules with their ETag (`Declaration.etagOf`), the `If-Match` of a declarative replace. */
export interface TaggedRuleList {
  readonly list: RuleList
  readonly etag: string
  /** Each listed rule's place in evaluation order (`RuleSet.evaluationKey`), for pages of the list. */
  readonly keyOf: (rule: SecurityRule) => ReadonlyArray<string | number>
}

export interface SecurityRulesShape {
  readonly list: (caller: TenantPrincipal, vpcId: VpcId) => Effect.Effect<TaggedRuleList, Lookup>
  /** The rule, and its version as an ETag (for `If-Match` on its changes). */
  readonly get: (
    caller: TenantPrincipal,
    id: SecurityRuleId
  ) => Effect.Effect<{ readonly rule: SecurityRule; readonly etag: string }, Lookup>
  /**
   * The changes take `dryRun`: when true they validate exactly as the real call, change
   * nothing, and answer the change's impact instead.
   */
  readonly create: (
    caller: TenantPrincipal,
    input: SecurityRuleCreate,
    dryRun?: boolean
  ) => Effect.Effect<RuleMutation | RuleImpact, Failure | GuardrailViolated | Conflict | IdempotencyKeyReused>
  /**
   * `ifMatch`: the rule's ETag (`get`) the change was made against; 412 when it moved since.
   * Answers the rule's new ETag with it (none for a dry run).
   */
  readonly update: (
    caller: TenantPrincipal,
    id: SecurityRuleId,
    patch: SecurityRulePatch,
    dryRun?: boolean,
    ifMatch?: string
  ) => Effect.Effect<
    { readonly answer: RuleMutation | RuleImpact; readonly etag: string | null },
    Failure | GuardrailViolated | PreconditionFailed | Conflict
  >
  readonly delete: (
    caller: TenantPrincipal,
    id: SecurityRuleId,
    dryRun?: boolean,
    ifMatch?: string
  ) => Effect.Effect<RuleRemoval | RuleImpact, Failure | GuardrailViolated | PreconditionFailed>
  readonly reorder: (
    caller: TenantPrincipal,
    vpcId: VpcId,
    ruleIds: ReadonlyArray<SecurityRuleId>,
    dryRun?: boolean
  ) => Effect.Effect<RuleList | RuleImpact, Failure | GuardrailViolated>
  /**
   * A declarative replace: the VPC's rules become exactly `items` in one change, applied once
   * (`ifMatch`: the `If-Match` header). `dryRun`: the plan and its impact, nothing changed.
   */
  readonly replace: (
    caller: TenantPrincipal,
    vpcId: VpcId,
    items: ReadonlyArray<RuleDeclaration>,
    options: { readonly ifMatch?: string | undefined; readonly dryRun?: boolean }
  ) => Effect.Effect<RulesReplaced | RulesPlan, Failure | GuardrailViolated | Conflict | PreconditionFailed>
  readonly analysis: (caller: TenantPrincipal, vpcId: VpcId) => Effect.Effect<RuleAnalysis, Lookup | TooManyRequests>
}

/** A VPC's rule list, kept while its rules, its record and its context are what they were. */
const RuleListOf: Derivation<{ readonly vpc: VpcRecord; readonly context: RuleSet.VpcContext }, RuleList> = {
  key: ({ vpc }) => vpc.id,
  inputs: (state, { context, vpc }) => [state.entryOf("rules", { vpc: vpc.id }), vpc, context],
  compute: (state, { context, vpc }) => ruleList(vpc, state.rulesOf(vpc.id), context)
}

/** The ETag of a VPC's rules, kept while they are unchanged. */
const EtagOf: Derivation<VpcId, string> = {
  key: (vpc) => vpc,
  inputs: (state, vpc) => [state.entryOf("rules", { vpc })],
  compute: (state, vpc) => Declaration.etagOf(state.rulesOf(vpc))
}

export class SecurityRules extends Context.Tag("@tenet/core/SecurityRules")<SecurityRules, SecurityRulesShape>() {
  static readonly layer = Layer.effect(
    SecurityRules,
    Effect.gen(function*() {
      const vpcs = yield* Vpcs
      const applier = yield* NetworkApplier
      const resources = yield* Resources
      const readModel = yield* ReadModel
      const pipeline = yield* Pipeline
      const fairness = yield* Fairness

      const stateOf = (caller: TenantPrincipal) => readModel.stateOf(caller.tenant_id).pipe(storeUnavailable)

      const ownedRule = (caller: TenantPrincipal, id: SecurityRuleId) => resources.get(caller.tenant_id, "rules", id)

      /** `rules` as the VPC's list: in evaluation order, with their statuses in its current context. */
      const listOf = (vpc: VpcRecord, rules: ReadonlyArray<SecurityRuleRecord>) =>
        Effect.gen(function*() {
          const state = yield* readModel.stateOf(vpc.tenant_id).pipe(storeUnavailable)
          const current = state.vpc(vpc.id) ?? vpc
          return ruleList(current, rules, yield* applier.context(current))
        })

      /**
       * The other VPCs the rules name (`before` and after a change): a rule naming another VPC can
       * peer the two, so the other side's router holds the peering too (`Paths`).
       */
      const namedBy = (vpc: VpcRecord, rules: ReadonlyArray<SecurityRuleRecord | undefined>) => [
        ...new Set(
          rules.flatMap((r) => r?.remote_vpc_id != null && r.remote_vpc_id !== vpc.id ? [r.remote_vpc_id] : [])
        )
      ]

      /**
       * Converges the VPC and the other VPCs a change can move the peerings of at once: those
       * its rules `named` (before and after it), and the peers of each side as committed now (a
       * link moved back into the slot a removed peering freed: `Paths`). Answers the context the
       * VPC's apply read, and whether every VPC is in force. A `committed` change that left the
       * VPC's connections as they were moves no other VPC: the VPC alone is converged.
       */
      const applyWith = (vpc: VpcRecord, named: ReadonlyArray<VpcId>, committed?: Committed<unknown>) =>
        named.length === 0 || (committed?.state !== undefined &&
            !connectionsMoved(committed.before, committed.state, vpc.id)) ?
          applyTogether(vpc, []) :
          Effect.flatMap(readModel.stateOf(vpc.tenant_id).pipe(storeUnavailable), (now) => {
            const peers = connectionsOf(now).peers
            const others = [
              ...new Set([...named, ...[vpc.id, ...named].flatMap((v) => [...(peers.get(v) ?? [])])])
            ].filter((v) => v !== vpc.id && now.vpc(v) !== undefined)
            return applyTogether(vpc, others)
          })

      /**
       * Converges the VPC and `peers` at once: the context the VPC's apply read, and whether every
       * one is in force. The VPC alone (nearly every write) is its apply, with no fibers forked.
       */
      const applyTogether = (vpc: VpcRecord, peers: ReadonlyArray<VpcId>) =>
        peers.length === 0 ? applier.applyInContext(vpc.tenant_id, vpc.id) : Effect.map(
          Effect.zip(
            applier.applyInContext(vpc.tenant_id, vpc.id),
            Effect.forEach(peers, (peer) => applier.apply(vpc.tenant_id, peer), { concurrency: "unbounded" }),
            { concurrent: true }
          ),
          ([{ context, state }, others]) => ({
            context,
            state: together([{ vpc: vpc.id, state }, ...others.map((other, i) => ({ vpc: peers[i]!, state: other }))])
          })
        )

      /** Converges the VPC and its `peers`, and reports the rule as it now stands, in the context the apply read. */
      const mutation = (
        vpc: VpcRecord,
        rule: SecurityRuleRecord,
        peers: ReadonlyArray<VpcId>,
        committed?: Committed<unknown>
      ) =>
        Effect.gen(function*() {
          const { context, state } = yield* applyWith(vpc, peers, committed)
          const described = view(rule, context ?? (yield* applier.context(vpc)))
          return RuleMutation.make({ rule: described, ...state }, TRUSTED)
        })

      /** Applies the VPC without a rule it had (and the `peers` it may have peered), and reports whether it is in force so. */
      const removal = (vpc: VpcRecord, peers: ReadonlyArray<VpcId>, committed?: Committed<unknown>) =>
        Effect.map(applyWith(vpc, peers, committed), ({ state }) => RuleRemoval.make({ rule: null, ...state }, TRUSTED))

      /**
       * What a delete or a reorder (or their previews) can be refused by: neither adds a rule, moves
       * a block or peers two VPCs, so no invariant's `Conflict`; a guardrail, yes. (A patch can peer
       * two VPCs whose blocks overlap: its `Conflict` is the answer.)
       */
      const UNCOUNTED = ["GuardrailViolated"] as const

      /** A rule change previewed: its impact, with the guardrails it would break. */
      const previewed = <A, E, T extends "Conflict" = "Conflict">(
        caller: TenantPrincipal,
        vpcId: VpcId,
        context: RuleSet.VpcContext,
        decide: (state: TenantState) => Either.Either<Decision<A>, E>,
        before: (result: A) => ReadonlyArray<SecurityRuleRecord>,
        after: (result: A) => ReadonlyArray<SecurityRuleRecord>,
        refusals?: ReadonlyArray<T>
      ) =>
        Effect.gen(function*() {
          const { after: then, decision: { result }, state } = yield* pipeline.preview(
            caller.tenant_id,
            decide,
            refusals
          )
          const grown = vpcContextOf(then, vpcId, yield* applier.peeringCidr)
          return impactOf(
            vpcId,
            context,
            before(result),
            after(result),
            violationsOf(state, vpcId, after(result), grown),
            grown
          )
        })

      const create = Effect.fn("SecurityRules.create")(function*(
        caller: TenantPrincipal,
        input: SecurityRuleCreate,
        dryRun = false
      ) {
        const vpc = yield* vpcs.owned(caller, input.vpc_id)
        const earlier = dryRun ? Option.none() : yield* resources.replay(caller.tenant_id, "rules")
        if (Option.isSome(earlier)) return yield* mutation(vpc, earlier.value, namedBy(vpc, [earlier.value]))
        const now = yield* DateTime.now
        const decide = Strategy.create({
          ...input,
          id: RuleId.make(randomUuid()),
          tenant_id: caller.tenant_id,
          created_at: now,
          updated_at: now
        }, yield* applier.peeringCidr)
        const after = (result: { readonly rules: ReadonlyArray<SecurityRuleRecord> }) => result.rules
        if (dryRun) {
          const context = yield* applier.context(vpc)
          return yield* previewed(caller, vpc.id, context, decide, (r) => r.rules.slice(0, -1), after)
        }
        const committed = yield* pipeline.create(caller.tenant_id, decide, INVARIANTS)
        return yield* mutation(vpc, committed.result.record, namedBy(vpc, [committed.result.record]), committed)
      })

      const update = Effect.fn("SecurityRules.update")(
        function*(
          caller: TenantPrincipal,
          id: SecurityRuleId,
          patch: SecurityRulePatch,
          dryRun = false,
          ifMatch?: string
        ) {
          const first = yield* ownedRule(caller, id)
          const vpc = yield* vpcs.owned(caller, first.vpc_id)
          const context = yield* applier.context(vpc)
          const now = yield* DateTime.now
          const decide = Strategy.update(id, vpc.id, patch, yield* applier.peeringCidr, now, ifMatch)
          const after = (result: Strategy.Updated) => result.before.map((r) => (r.id === id ? result.saved : r))
          if (dryRun) {
            return { answer: yield* previewed(caller, vpc.id, context, decide, (r) => r.before, after), etag: null }
          }
          const committed = yield* pipeline.commit(caller.tenant_id, decide, INVARIANTS)
          const saved = committed.result.saved
          return {
            answer: yield* mutation(vpc, saved, namedBy(vpc, [first, saved]), committed),
            etag: etagOf(saved)
          }
        }
      )

      const remove = Effect.fn("SecurityRules.delete")(function*(
        caller: TenantPrincipal,
        id: SecurityRuleId,
        dryRun = false,
        ifMatch?: string
      ) {
        const rule = yield* ownedRule(caller, id)
        const vpc = yield* vpcs.owned(caller, rule.vpc_id)
        const decide = Strategy.remove(id, vpc.id, ifMatch)
        const context = yield* applier.context(vpc)
        const after = (before: ReadonlyArray<SecurityRuleRecord>) => before.filter((r) => r.id !== id)
        if (dryRun) {
          return yield* previewed(caller, vpc.id, context, decide, (before) => before, after, [])
        }
        const committed = yield* pipeline.commit(caller.tenant_id, decide, UNCOUNTED)
        return yield* removal(vpc, namedBy(vpc, [rule]), committed)
      })

      const reorder = Effect.fn("SecurityRules.reorder")(
        function*(caller: TenantPrincipal, vpcId: VpcId, ruleIds: ReadonlyArray<SecurityRuleId>, dryRun = false) {
          const vpc = yield* vpcs.owned(caller, vpcId)
          const now = yield* DateTime.now
          const context = yield* applier.context(vpc)
          const decide = Strategy.reorder(vpc.id, ruleIds, now)
          const after = (result: { readonly next: ReadonlyArray<SecurityRuleRecord> }) => result.next
          if (dryRun) {
            return yield* previewed(caller, vpc.id, context, decide, (r) => r.rules, after, [])
          }
          const { result } = yield* pipeline.commit(caller.tenant_id, decide, UNCOUNTED)
          yield* applier.apply(vpc.tenant_id, vpc.id)
          // The order this reorder committed, whatever changed since.
          return yield* listOf(vpc, result.next)
        }
      )

      const replace = Effect.fn("SecurityRules.replace")(function*(
        caller: TenantPrincipal,
        vpcId: VpcId,
        items: ReadonlyArray<RuleDeclaration>,
        options: { readonly ifMatch?: string | undefined; readonly dryRun?: boolean }
      ) {
        const vpc = yield* vpcs.owned(caller, vpcId)
        const context = yield* applier.context(vpc)
        const now = yield* DateTime.now
        const decide = Strategy.replace(vpc.id, items, yield* applier.peeringCidr, options.ifMatch, {
          newId: () => RuleId.make(randomUuid()),
          stamp: (fields) => ({
            ...fields,
            vpc_id: vpc.id,
            tenant_id: caller.tenant_id,
            created_at: now,
            updated_at: now
          }),
          touch: (record) => ({ ...record, updated_at: now })
        })
        const preview = yield* pipeline.preview(caller.tenant_id, decide)
        const planned = preview.decision.result
        const changes = (outcome: Strategy.Replacement) => ({
          vpc_id: vpc.id,
          created: outcome.created.map((r) => view(r, context)),
          updated: outcome.updated.map((r) => view(r, context)),
          deleted: outcome.deleted.map((r) => r.id),
          unchanged: outcome.unchanged.map((r) => view(r, context))
        })
        // The same declaration again changes nothing: it leaves no audit entry (a dry run opened none).
        if (!Declaration.changes(planned)) yield* Audit.dismiss
        if (options.dryRun === true) {
          const grown = vpcContextOf(preview.after, vpc.id, yield* applier.peeringCidr)
          return RulesPlan.make({
            dry_run: true,
            ...changes(planned),
            rules: ruleList(vpc, planned.next, context).rules,
            etag: planned.etag,
            impact: impactOf(
              vpc.id,
              context,
              planned.before,
              planned.next,
              violationsOf(preview.state, vpc.id, planned.next, grown),
              grown
            )
          }, TRUSTED)
        }
        const answer = (outcome: Strategy.Replacement, in_: RuleSet.VpcContext, state: ApplyState) =>
          RulesReplaced.make({
            dry_run: false,
            ...changes(outcome),
            rules: ruleList(vpc, outcome.next, in_).rules,
            etag: Declaration.etagOf(outcome.next),
            ...state
          }, TRUSTED)
        // The same declaration again writes nothing, takes no revision step and applies nothing.
        if (!Declaration.changes(planned)) {
          return answer(planned, context, { applied: vpc.applied, apply_error: vpc.apply_error })
        }
        const committed = yield* pipeline.commit(caller.tenant_id, decide, INVARIANTS)
        const result = committed.result
        const { context: applied, state } = yield* applyWith(
          vpc,
          namedBy(vpc, [...result.before, ...result.next]),
          committed
        )
        return answer(result, applied ?? context, state)
      })

      const analysis = (caller: TenantPrincipal, vpcId: VpcId) =>
        fairness.expensive(caller.tenant_id, analyzed(caller, vpcId))

      const analyzed = Effect.fn("SecurityRules.analysis")(function*(caller: TenantPrincipal, vpcId: VpcId) {
        const vpc = yield* vpcs.owned(caller, vpcId)
        const state = yield* stateOf(caller)
        const rules = state.rulesOf(vpc.id)
        const names = new Map(rules.map((r) => [r.id as string, r.name]))
        const findings = findingsOf(state, vpc.id, yield* applier.context(vpc))
        return RuleAnalysis.make({
          vpc_id: vpc.id,
          findings: findings.map((f) => findingOf(f, names))
        })
      })

      return SecurityRules.of({
        analysis,
        // The list and its ETag from one read of the caller's state.
        list: (caller, vpcId) =>
          Effect.gen(function*() {
            const state = yield* stateOf(caller)
            const vpc = yield* liveVpc(state, vpcId)
            const context = yield* applier.context(vpc)
            let seqs: Map<string, number> | undefined
            return {
              list: state.memo(RuleListOf, { vpc, context }),
              etag: state.memo(EtagOf, vpc.id),
              keyOf: (rule: SecurityRule) => {
                seqs ??= new Map(state.rulesOf(vpc.id).map((r) => [r.id, r.seq]))
                return RuleSet.evaluationKey({ ...rule, seq: seqs.get(rule.id) ?? 0 })
              }
            }
          }),
        replace,
        get: (caller, id) =>
          Effect.gen(function*() {
            const rule = yield* ownedRule(caller, id)
            const vpc = yield* vpcs.owned(caller, rule.vpc_id)
            return { rule: view(rule, yield* applier.context(vpc)), etag: etagOf(rule) }
          }),
        create,
        update,
        delete: remove,
        reorder
      })
    })
  )
}
