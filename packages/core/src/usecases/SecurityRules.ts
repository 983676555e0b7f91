/**
 * Security rules (tenant; own VPCs only): the spec's section 4 rules 1-5. Every change is
 * saved first and then applied through the NetworkApplier; the response says whether it is
 * in force (`applied`) or why not yet (`apply_error`).
 */
import { Context, DateTime, Effect, Either, Layer, Option } from "effect"
import { TRUSTED } from "../domain/Common.js"
import type { SecurityRuleId, VpcId } from "../domain/Ids.js"
import { randomUuid, SecurityRuleId as RuleId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { TenantPrincipal } from "../domain/Principal.js"
import type {
  FlowQuery,
  SecurityRule,
  SecurityRuleCreate,
  SecurityRulePatch,
  SecurityRuleRecord
} from "../domain/SecurityRule.js"
import {
  FlowVerdict,
  IMPLIED_RULES,
  MAX_RULES_PER_VPC,
  RuleAnalysis,
  RuleFinding,
  RuleList,
  RuleMutation,
  viewOf
} from "../domain/SecurityRule.js"
import type { VpcRecord } from "../domain/Vpc.js"
import { Conflict, NotFound, RuleValidation } from "../Errors.js"
import type { IdempotencyKeyReused, ServiceUnavailable } from "../Errors.js"
import { Store } from "../ports/Store.js"
import * as Analysis from "../rules/Analysis.js"
import * as Evaluate from "../rules/Evaluate.js"
import * as Reorder from "../rules/Reorder.js"
import * as RuleSet from "../rules/RuleSet.js"
import * as Validate from "../rules/Validate.js"
import { storeUnavailable } from "./Failures.js"
import { Idempotency } from "./Idempotency.js"
import { NetworkApplier } from "./NetworkApplier.js"
import { ownedBy, ownedOrNone } from "./Ownership.js"
import { ReadModel } from "./ReadModel.js"
import { Vpcs } from "./Vpcs.js"

type Failure = NotFound | RuleValidation | ServiceUnavailable

export interface SecurityRulesShape {
  readonly list: (caller: TenantPrincipal, vpcId: VpcId) => Effect.Effect<RuleList, Failure>
  readonly get: (caller: TenantPrincipal, id: SecurityRuleId) => Effect.Effect<SecurityRule, Failure>
  readonly create: (
    caller: TenantPrincipal,
    input: SecurityRuleCreate
  ) => Effect.Effect<RuleMutation, Failure | Conflict | IdempotencyKeyReused>
  readonly update: (
    caller: TenantPrincipal,
    id: SecurityRuleId,
    patch: SecurityRulePatch
  ) => Effect.Effect<RuleMutation, Failure>
  readonly delete: (caller: TenantPrincipal, id: SecurityRuleId) => Effect.Effect<RuleMutation, Failure>
  readonly reorder: (
    caller: TenantPrincipal,
    vpcId: VpcId,
    ruleIds: ReadonlyArray<SecurityRuleId>
  ) => Effect.Effect<RuleList, Failure>
  readonly evaluate: (caller: TenantPrincipal, query: typeof FlowQuery.Type) => Effect.Effect<FlowVerdict, Failure>
  readonly analysis: (caller: TenantPrincipal, vpcId: VpcId) => Effect.Effect<RuleAnalysis, Failure>
}

const describeFlow = (flow: RuleSet.Flow) =>
  `${flow.protocol}${flow.port === null ? "" : ` port ${flow.port}`} ${flow.direction === "ingress" ? "from" : "to"} ${
    flow.remote.kind === "ip" ? Net.formatIpv4(flow.remote.ip) : flow.remote.vpc_id
  }`

/** A finding in words, naming the rules involved. */
export const explain = (finding: Analysis.Finding, names: ReadonlyMap<string, string>): string => {
  const related = finding.related_rule_ids.map((id) => `'${names.get(id)}'`).join(", ")
  switch (finding.kind) {
    case "shadowed":
      return related === ""
        ? "never matches: all of its traffic is core-network traffic, which is always allowed"
        : `never matches: earlier rules ${related} (and the core network) cover all of its traffic`
    case "redundant":
      return `removing it changes no verdict: its traffic (e.g. ${
        describeFlow(finding.witness!)
      }) is decided the same way by ${
        related === "" ? "the implied default" : `later rules ${related} or the implied default`
      }`
    case "conflict":
      return `earlier rules ${related} with the opposite action take part of its traffic; it still decides e.g. ${
        describeFlow(finding.witness!)
      }`
  }
}

const invalid = (e: Validate.FieldError) => new RuleValidation(e)

export class SecurityRules extends Context.Tag("@tenet/core/SecurityRules")<SecurityRules, SecurityRulesShape>() {
  static readonly layer = Layer.effect(
    SecurityRules,
    Effect.gen(function*() {
      const store = yield* Store
      const vpcs = yield* Vpcs
      const applier = yield* NetworkApplier
      const idempotency = yield* Idempotency
      const readModel = yield* ReadModel

      const ownedRule = (caller: TenantPrincipal, id: SecurityRuleId) =>
        store.securityRules.find(id).pipe(storeUnavailable, Effect.flatMap(ownedBy(caller, `security rule ${id}`)))

      const references = (context: RuleSet.VpcContext): Validate.References => ({
        vpcs: new Set(context.vpcs.keys()),
        subnets: new Set(context.subnets.keys()),
        pods: new Set(context.pods.keys())
      })

      const view = (rule: SecurityRuleRecord, context: RuleSet.VpcContext) =>
        viewOf(rule, RuleSet.statusOf(RuleSet.fromRecord(rule), context))

      /** The VPC's rules (as read now, or as given) in evaluation order, with their statuses. */
      const listOf = (vpc: VpcRecord, given?: ReadonlyArray<SecurityRuleRecord>) =>
        Effect.gen(function*() {
          const rules = given ?? (yield* store.securityRules.listByVpc(vpc.id).pipe(storeUnavailable))
          const current = yield* store.vpcs.find(vpc.id).pipe(storeUnavailable, Effect.map(Option.getOrElse(() => vpc)))
          const context = yield* applier.context(current)
          const byId = new Map(rules.map((r) => [r.id, r]))
          return RuleList.make({
            vpc_id: vpc.id,
            rules: RuleSet.sort(rules.map(RuleSet.fromRecord)).map((r) => view(byId.get(r.id)!, context)),
            implied: IMPLIED_RULES,
            applied: current.applied,
            apply_error: current.apply_error
          }, TRUSTED)
        })

      /**
       * Applies the VPC (with its rules as the caller wrote them, when given) and reports the
       * rule as it now stands, in the context the apply read.
       */
      const mutation = (vpc: VpcRecord, rule: SecurityRuleRecord | null, rules?: ReadonlyArray<SecurityRuleRecord>) =>
        Effect.gen(function*() {
          const { context, state } = yield* applier.applyInContext(vpc.id, rules)
          const described = rule === null ? null : view(rule, context ?? (yield* applier.context(vpc)))
          return RuleMutation.make({ rule: described, ...state })
        })

      const create = Effect.fn("SecurityRules.create")(function*(caller: TenantPrincipal, input: SecurityRuleCreate) {
        const vpc = yield* vpcs.owned(caller, input.vpc_id)
        const earlier = yield* idempotency.replay(
          caller.tenant_id,
          (id) => store.securityRules.find(RuleId.make(id)).pipe(Effect.map(ownedOrNone(caller)), storeUnavailable)
        )
        if (Option.isSome(earlier)) return yield* mutation(vpc, earlier.value)
        const context = yield* applier.context(vpc)
        const now = yield* DateTime.now
        const shape = { ...input, target_pod_ids: input.target_pod_ids }
        yield* Either.match(Validate.validate(shape, references(context)), {
          onLeft: (e) => Effect.fail(invalid(e)),
          onRight: () => Effect.void
        })
        const { record: rule, rules } = yield* store.transaction(Effect.gen(function*() {
          yield* store.vpcs.lock(vpc.id)
          const existing = yield* store.securityRules.listByVpc(vpc.id)
          if (existing.length >= MAX_RULES_PER_VPC) {
            return yield* new Conflict({
              detail: `VPC ${vpc.id} already has ${MAX_RULES_PER_VPC} rules, the most it may have`
            })
          }
          const record: SecurityRuleRecord = {
            ...input,
            id: RuleId.make(randomUuid()),
            tenant_id: caller.tenant_id,
            seq: existing.reduce((max, r) => Math.max(max, r.seq), 0) + 1,
            created_at: now,
            updated_at: now
          }
          yield* store.securityRules.insert(record)
          yield* idempotency.record(caller.tenant_id, record.id)
          return { record, rules: [...existing, record] }
        })).pipe(Effect.catchTag("UniqueViolation", Effect.die), storeUnavailable)
        return yield* mutation(vpc, rule, rules)
      })

      const update = Effect.fn("SecurityRules.update")(
        function*(caller: TenantPrincipal, id: SecurityRuleId, patch: SecurityRulePatch) {
          const first = yield* ownedRule(caller, id)
          const vpc = yield* vpcs.owned(caller, first.vpc_id)
          const context = yield* applier.context(vpc)
          const now = yield* DateTime.now
          // The patch is applied to the rule as it stands under the VPC's lock: a reorder or
          // another patch that committed meanwhile is kept, not overwritten.
          const saved = yield* store.transaction(Effect.gen(function*() {
            yield* store.vpcs.lock(vpc.id)
            const current = yield* store.securityRules.find(id)
            if (Option.isNone(current)) return yield* new NotFound({ detail: `security rule ${id} not found` })
            const next = yield* Either.match(Validate.applyPatch(current.value, patch), {
              onLeft: (e) => Effect.fail(invalid(e)),
              onRight: Effect.succeed
            })
            yield* Either.match(Validate.validate(next, references(context)), {
              onLeft: (e) => Effect.fail(invalid(e)),
              onRight: () => Effect.void
            })
            const saved = { ...next, updated_at: now }
            yield* store.securityRules.update(saved)
            return saved
          })).pipe(storeUnavailable)
          return yield* mutation(vpc, saved)
        }
      )

      const remove = Effect.fn("SecurityRules.delete")(function*(caller: TenantPrincipal, id: SecurityRuleId) {
        const rule = yield* ownedRule(caller, id)
        const vpc = yield* vpcs.owned(caller, rule.vpc_id)
        const deleted = yield* store.securityRules.delete(id).pipe(storeUnavailable)
        if (!deleted) return yield* new NotFound({ detail: `security rule ${id} not found` })
        return yield* mutation(vpc, null)
      })

      const reorder = Effect.fn("SecurityRules.reorder")(
        function*(caller: TenantPrincipal, vpcId: VpcId, ruleIds: ReadonlyArray<SecurityRuleId>) {
          const vpc = yield* vpcs.owned(caller, vpcId)
          const now = yield* DateTime.now
          const reordered = yield* store.transaction(Effect.gen(function*() {
            yield* store.vpcs.lock(vpc.id)
            const rules = yield* store.securityRules.listByVpc(vpc.id)
            const priorities = yield* Either.match(Reorder.reorder(rules.map((r) => r.id), ruleIds), {
              onRight: Effect.succeed,
              onLeft: (e) =>
                Effect.fail(
                  e._tag === "UnknownRule"
                    ? new NotFound({ detail: `security rule ${e.rule_id} is not a rule of VPC ${vpc.id}` })
                    : e._tag === "DuplicateRule"
                    ? invalid({ field: "rule_ids", message: `lists ${e.rule_id} more than once` })
                    : invalid({
                      field: "rule_ids",
                      message: `must list every rule of the VPC; missing: ${e.rule_ids.join(", ")}`
                    })
                )
            })
            const next = rules.map((r) => ({ ...r, priority: priorities.get(r.id)!, updated_at: now }))
            yield* Effect.forEach(next, store.securityRules.update, { discard: true })
            return next
          })).pipe(storeUnavailable)
          yield* applier.apply(vpc.id)
          // The order this reorder committed, whatever changed since.
          return yield* listOf(vpc, reordered)
        }
      )

      const evaluate = Effect.fn("SecurityRules.evaluate")(
        function*(caller: TenantPrincipal, query: typeof FlowQuery.Type) {
          const vpc = yield* vpcs.owned(caller, query.vpc_id)
          const context = yield* applier.context(vpc)
          if ((query.remote_ip === undefined) === (query.remote_vpc_id === undefined)) {
            return yield* invalid({ field: "remote_ip", message: "give exactly one of remote_ip and remote_vpc_id" })
          }
          if (query.protocol === "icmp" && query.port !== undefined) {
            return yield* invalid({ field: "port", message: "icmp has no ports" })
          }
          if (query.protocol !== "icmp" && query.port === undefined) {
            return yield* invalid({ field: "port", message: `required for ${query.protocol}` })
          }
          if (query.remote_vpc_id !== undefined && !context.vpcs.has(query.remote_vpc_id)) {
            return yield* invalid({ field: "remote_vpc_id", message: `${query.remote_vpc_id} is not one of your VPCs` })
          }
          if (query.target_subnet_id !== undefined && !context.subnets.has(query.target_subnet_id)) {
            return yield* invalid({
              field: "target_subnet_id",
              message: `${query.target_subnet_id} is not a subnet of this VPC`
            })
          }
          if (query.target_pod_id !== undefined && !context.pods.has(query.target_pod_id)) {
            return yield* invalid({
              field: "target_pod_id",
              message: `${query.target_pod_id} is not a pod of this VPC`
            })
          }
          const rules = yield* store.securityRules.listByVpc(vpc.id).pipe(storeUnavailable)
          const matcher = yield* readModel.derived(
            `matcher:${vpc.id}`,
            Effect.sync(() => Evaluate.matcher(rules.map(RuleSet.fromRecord), context))
          )
          const verdict = matcher.decide({
            direction: query.direction,
            protocol: query.protocol,
            port: query.port ?? null,
            remote: query.remote_ip !== undefined
              ? { kind: "ip", ip: Net.ipv4Of(query.remote_ip) }
              : { kind: "vpc", vpc_id: query.remote_vpc_id! },
            local: {
              ...(query.target_pod_id === undefined ? {} : { pod_id: query.target_pod_id }),
              ...(query.target_subnet_id === undefined ? {} : { subnet_id: query.target_subnet_id })
            }
          })
          const decided = verdict.decided_by
          return FlowVerdict.make({
            allowed: verdict.action === "allow",
            action: verdict.action,
            decided_by: decided.kind === "rule"
              ? { kind: "rule", rule_id: decided.rule_id, name: rules.find((r) => r.id === decided.rule_id)!.name }
              : decided
          })
        }
      )

      const analysis = Effect.fn("SecurityRules.analysis")(function*(caller: TenantPrincipal, vpcId: VpcId) {
        const vpc = yield* vpcs.owned(caller, vpcId)
        const rules = yield* store.securityRules.listByVpc(vpc.id).pipe(storeUnavailable)
        const names = new Map(rules.map((r) => [r.id as string, r.name]))
        const findings = Analysis.analyze(rules.map(RuleSet.fromRecord), yield* applier.context(vpc))
        return RuleAnalysis.make({
          vpc_id: vpc.id,
          findings: findings.map((f) =>
            RuleFinding.make({
              kind: f.kind,
              rule_id: f.rule_id,
              related_rule_ids: f.related_rule_ids,
              message: explain(f, names)
            })
          )
        })
      })

      return SecurityRules.of({
        analysis,
        list: (caller, vpcId) =>
          Effect.flatMap(vpcs.owned(caller, vpcId), (vpc) => readModel.derived(`rules:${vpc.id}`, listOf(vpc))),
        get: (caller, id) =>
          Effect.gen(function*() {
            const rule = yield* ownedRule(caller, id)
            const vpc = yield* vpcs.owned(caller, rule.vpc_id)
            return view(rule, yield* applier.context(vpc))
          }),
        create,
        update,
        delete: remove,
        reorder,
        evaluate
      })
    })
  )
}
