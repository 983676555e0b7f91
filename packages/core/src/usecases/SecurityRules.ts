/**
 * Security rules (tenant; own VPCs only): the spec's section 4 rules 1-5. Every change is
 * saved first and then applied through the NetworkApplier; the response says whether it is
 * in force (`applied`) or why not yet (`apply_error`).
 */
import { Context, DateTime, Effect, Either, Layer, Option } from "effect"
import * as Audit from "../changes/Audit.js"
import { Idempotency } from "../changes/Idempotency.js"
import type { Decision } from "../changes/Pipeline.js"
import { Pipeline } from "../changes/Pipeline.js"
import { TRUSTED } from "../domain/Common.js"
import type { ExplainEndpoint, ExplainQuery } from "../domain/FlowExplanation.js"
import { ExplainedHalf, FlowExplanation } from "../domain/FlowExplanation.js"
import type { PodId, SecurityRuleId, SubnetId, VpcId } from "../domain/Ids.js"
import { randomUuid, SecurityRuleId as RuleId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import * as PortRanges from "../domain/PortRanges.js"
import type { TenantPrincipal } from "../domain/Principal.js"
import type { ReachabilityEndpoint } from "../domain/ReachabilityMatrix.js"
import { ReachabilityMatrix, ReachabilityPair } from "../domain/ReachabilityMatrix.js"
import type {
  FlowQuery,
  RuleDeclaration,
  SecurityRule,
  SecurityRuleCreate,
  SecurityRulePatch,
  SecurityRuleRecord
} from "../domain/SecurityRule.js"
import type { GuardrailViolation } from "../domain/SecurityRule.js"
import {
  FlowVerdict,
  ImpactRegion,
  IMPLIED_RULES,
  RuleAnalysis,
  RuleFinding,
  RuleImpact,
  RuleList,
  RuleMutation,
  RuleRemoval,
  RulesPlan,
  RulesReplaced,
  viewOf
} from "../domain/SecurityRule.js"
import type { VpcRecord } from "../domain/Vpc.js"
import { RuleValidation } from "../Errors.js"
import type {
  Conflict,
  GuardrailViolated,
  IdempotencyKeyReused,
  NotFound,
  PreconditionFailed,
  ServiceUnavailable
} from "../Errors.js"
import { matcherOf, vpcContextOf } from "../readmodel/Derived.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import type { Derivation, TenantState } from "../readmodel/TenantState.js"
import * as Analysis from "../rules/Analysis.js"
import * as Declaration from "../rules/Declaration.js"
import type * as Evaluate from "../rules/Evaluate.js"
import * as Explain from "../rules/Explain.js"
import * as Impact from "../rules/Impact.js"
import * as Reachability from "../rules/Reachability.js"
import * as RuleSet from "../rules/RuleSet.js"
import * as Validate from "../rules/Validate.js"
import { storeUnavailable } from "./Failures.js"
import { verdictsHold, violationsOf } from "./Guardrails.js"
import type { ApplyState } from "./NetworkApplier.js"
import { NetworkApplier } from "./NetworkApplier.js"
import { found } from "./Ownership.js"
import * as Strategy from "./SecurityRuleStrategy.js"
import { Vpcs } from "./Vpcs.js"

type Failure = NotFound | RuleValidation | ServiceUnavailable

/** A VPC's rules with their ETag (`Declaration.etagOf`), the `If-Match` of a declarative replace. */
export interface TaggedRuleList {
  readonly list: RuleList
  readonly etag: string
  /** Each listed rule's place in evaluation order (`RuleSet.evaluationKey`), for pages of the list. */
  readonly keyOf: (rule: SecurityRule) => ReadonlyArray<string | number>
}

export interface SecurityRulesShape {
  readonly list: (caller: TenantPrincipal, vpcId: VpcId) => Effect.Effect<TaggedRuleList, Failure>
  readonly get: (caller: TenantPrincipal, id: SecurityRuleId) => Effect.Effect<SecurityRule, Failure>
  /**
   * The changes take `dryRun`: when true they validate exactly as the real call, change
   * nothing, and answer the change's impact instead.
   */
  readonly create: (
    caller: TenantPrincipal,
    input: SecurityRuleCreate,
    dryRun?: boolean
  ) => Effect.Effect<RuleMutation | RuleImpact, Failure | GuardrailViolated | Conflict | IdempotencyKeyReused>
  readonly update: (
    caller: TenantPrincipal,
    id: SecurityRuleId,
    patch: SecurityRulePatch,
    dryRun?: boolean
  ) => Effect.Effect<RuleMutation | RuleImpact, Failure | GuardrailViolated>
  readonly delete: (
    caller: TenantPrincipal,
    id: SecurityRuleId,
    dryRun?: boolean
  ) => Effect.Effect<RuleRemoval | RuleImpact, Failure | GuardrailViolated>
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
  readonly evaluate: (caller: TenantPrincipal, query: typeof FlowQuery.Type) => Effect.Effect<FlowVerdict, Failure>
  readonly analysis: (caller: TenantPrincipal, vpcId: VpcId) => Effect.Effect<RuleAnalysis, Failure>
  /** A flow between two endpoints, end to end: the source's egress and the destination's ingress. */
  readonly explain: (
    caller: TenantPrincipal,
    vpcId: VpcId,
    query: ExplainQuery
  ) => Effect.Effect<FlowExplanation, Failure>
  /** For every pair of the VPC's endpoints, the ports and protocols allowed end to end. */
  readonly reachability: (
    caller: TenantPrincipal,
    vpcId: VpcId
  ) => Effect.Effect<ReachabilityMatrix, NotFound | ServiceUnavailable>
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

const invalid = (e: Validate.FieldError) => RuleValidation.field(e.field, e.message)

/** A finding as the API states it. */
const findingOf = (f: Analysis.Finding, names: ReadonlyMap<string, string>) =>
  RuleFinding.make({
    kind: f.kind,
    rule_id: f.rule_id,
    related_rule_ids: f.related_rule_ids,
    message: explain(f, names)
  })

const decisionOf = (verdict: Evaluate.Verdict, names: ReadonlyMap<string, string>) => ({
  action: verdict.action,
  decided_by: verdict.decided_by.kind === "rule"
    ? { kind: "rule" as const, rule_id: verdict.decided_by.rule_id, name: names.get(verdict.decided_by.rule_id)! }
    : verdict.decided_by
})

/** Port intervals as the API writes them (`80,8000-8080`). */
const formatPorts = (intervals: ReadonlyArray<readonly [number, number]>) =>
  PortRanges.format(intervals.map(([from, to]) => ({ from, to })))

const regionOf = (change: Impact.Change, names: ReadonlyMap<string, string>) => {
  const atoms = [...change.box.locals]
  const after = (prefix: string) => atoms.filter((a) => a.startsWith(prefix)).map((a) => a.slice(prefix.length)).sort()
  return ImpactRegion.make({
    direction: change.direction,
    protocol: change.box.protocol,
    ports: change.box.protocol === "icmp" ? null : formatPorts([change.box.ports]),
    remote_cidrs: Net.cidrsOfRange(change.box.remote[0], change.box.remote[1]).map(Net.formatCidr),
    local: {
      pod_ids: after("pod:") as Array<PodId>,
      subnet_ids: after("subnet:") as Array<SubnetId>,
      outside_subnets: change.box.locals.has(Analysis.ELSEWHERE)
    },
    before: decisionOf(change.before, names),
    after: decisionOf(change.after, names)
  })
}

/**
 * What changing the VPC's rules from `before` to `after` does: the flows it flips, the
 * findings it brings, the guardrails it would break (`violations`); `grownTo` is the VPC's
 * context after a change that also adds to it.
 */
export const impactOf = (
  vpcId: VpcId,
  context: RuleSet.VpcContext,
  before: ReadonlyArray<SecurityRuleRecord>,
  after: ReadonlyArray<SecurityRuleRecord>,
  violations: ReadonlyArray<GuardrailViolation>,
  grownTo: RuleSet.VpcContext = context
): RuleImpact => {
  const names = new Map([...before, ...after].map((r) => [r.id as string, r.name]))
  const then = before.map(RuleSet.fromRecord)
  const now = after.map(RuleSet.fromRecord)
  const regions = Impact.diff(then, now, context, grownTo).map((change) => regionOf(change, names))
  const known = new Set(Analysis.analyze(then, context).map((f) => `${f.kind}:${f.rule_id}`))
  return RuleImpact.make({
    dry_run: true,
    vpc_id: vpcId,
    opened: regions.filter((r) => r.after.action === "allow"),
    closed: regions.filter((r) => r.after.action === "deny"),
    new_findings: Analysis.analyze(now, grownTo)
      .filter((f) => !known.has(`${f.kind}:${f.rule_id}`))
      .map((f) => findingOf(f, names)),
    violations
  })
}

const view = (rule: SecurityRuleRecord, context: RuleSet.VpcContext) =>
  viewOf(rule, RuleSet.statusOf(RuleSet.fromRecord(rule), context))

/** A VPC's rules in evaluation order, with their statuses in `context`. */
const ruleList = (vpc: VpcRecord, rules: ReadonlyArray<SecurityRuleRecord>, context: RuleSet.VpcContext) => {
  const byId = new Map(rules.map((r) => [r.id, r]))
  return RuleList.make({
    vpc_id: vpc.id,
    rules: RuleSet.sort(rules.map(RuleSet.fromRecord)).map((r) => view(byId.get(r.id)!, context)),
    implied: IMPLIED_RULES,
    applied: vpc.applied,
    apply_error: vpc.apply_error
  }, TRUSTED)
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

/**
 * For every pair of the VPC's endpoints, what is allowed end to end: it reads every VPC's
 * rules and contexts, so it is kept while the tenant's rules, VPCs, subnets and pods are unchanged.
 */
const Matrix: Derivation<{ readonly vpc: VpcRecord; readonly peeringCidr: string | null }, ReachabilityMatrix> = {
  key: ({ vpc }) => vpc.id,
  inputs: (state, { peeringCidr }) => [
    state.entryOf("rules"),
    state.entryOf("vpcs"),
    state.entryOf("subnets"),
    state.entryOf("pods"),
    peeringCidr
  ],
  compute: (state, { peeringCidr, vpc }) => {
    const ruleSet = (of: VpcId) => ({
      rules: state.rulesOf(of).map(RuleSet.fromRecord),
      context: vpcContextOf(state, of, peeringCidr)
    })
    const others = new Map(state.vpcs.filter((v) => v.id !== vpc.id).map((v) => [v.id, ruleSet(v.id)] as const))
    const names = new Map<string, string>(
      [...state.vpcs, ...state.subnetsOf(vpc.id), ...state.podsOf(vpc.id)].map((r) => [r.id, r.name])
    )
    const endpoint = (e: Reachability.Endpoint): ReachabilityEndpoint => {
      switch (e.kind) {
        case "subnet":
          return { kind: "subnet", subnet_id: e.subnet_id, name: names.get(e.subnet_id) ?? "" }
        case "pod":
          return { kind: "pod", pod_id: e.pod_id, name: names.get(e.pod_id) ?? "" }
        case "internet":
          return { kind: "internet" }
        case "vpc":
          return { kind: "vpc", vpc_id: e.vpc_id, name: names.get(e.vpc_id) ?? "" }
      }
    }
    return ReachabilityMatrix.make({
      vpc_id: vpc.id,
      pairs: Reachability.matrix(ruleSet(vpc.id), others).map((pair) =>
        ReachabilityPair.make({
          from: endpoint(pair.from),
          to: endpoint(pair.to),
          tcp: formatPorts(pair.reach.tcp),
          udp: formatPorts(pair.reach.udp),
          icmp: pair.reach.icmp.length > 0
        })
      )
    })
  }
}

export class SecurityRules extends Context.Tag("@tenet/core/SecurityRules")<SecurityRules, SecurityRulesShape>() {
  static readonly layer = Layer.effect(
    SecurityRules,
    Effect.gen(function*() {
      const vpcs = yield* Vpcs
      const applier = yield* NetworkApplier
      const idempotency = yield* Idempotency
      const readModel = yield* ReadModel
      const pipeline = yield* Pipeline

      const stateOf = (caller: TenantPrincipal) => readModel.stateOf(caller.tenant_id).pipe(storeUnavailable)

      const ownedRule = (caller: TenantPrincipal, id: SecurityRuleId) =>
        Effect.flatMap(stateOf(caller), (state) => found(state.rule(id), `security rule ${id}`))

      const references = (context: RuleSet.VpcContext): Validate.References => ({
        vpcs: new Set(context.vpcs.keys()),
        subnets: new Set(context.subnets.keys()),
        pods: new Set(context.pods.keys())
      })

      /** `rules` as the VPC's list: in evaluation order, with their statuses in its current context. */
      const listOf = (vpc: VpcRecord, rules: ReadonlyArray<SecurityRuleRecord>) =>
        Effect.gen(function*() {
          const state = yield* readModel.stateOf(vpc.tenant_id).pipe(storeUnavailable)
          const current = state.vpc(vpc.id) ?? vpc
          return ruleList(current, rules, yield* applier.context(current))
        })

      /**
       * Applies the VPC (with its rules as the caller wrote them, when given) and reports the
       * rule as it now stands, in the context the apply read.
       */
      const mutation = (vpc: VpcRecord, rule: SecurityRuleRecord, rules?: ReadonlyArray<SecurityRuleRecord>) =>
        Effect.gen(function*() {
          const { context, state } = yield* applier.applyInContext(vpc.tenant_id, vpc.id, rules)
          const described = view(rule, context ?? (yield* applier.context(vpc)))
          return RuleMutation.make({ rule: described, ...state }, TRUSTED)
        })

      /** Applies the VPC without a rule it had, and reports whether it is in force so. */
      const removal = (vpc: VpcRecord) =>
        Effect.map(
          applier.applyInContext(vpc.tenant_id, vpc.id),
          ({ state }) => RuleRemoval.make({ rule: null, ...state }, TRUSTED)
        )

      /** A rule change previewed: its impact, with the guardrails it would break. */
      const previewed = <A, E>(
        caller: TenantPrincipal,
        vpcId: VpcId,
        context: RuleSet.VpcContext,
        decide: (state: TenantState) => Either.Either<Decision<A>, E>,
        before: (result: A) => ReadonlyArray<SecurityRuleRecord>,
        after: (result: A) => ReadonlyArray<SecurityRuleRecord>
      ) =>
        Effect.map(
          pipeline.preview(caller.tenant_id, decide),
          ({ decision: { result }, state }) =>
            impactOf(vpcId, context, before(result), after(result), violationsOf(state, vpcId, after(result), context))
        )

      const create = Effect.fn("SecurityRules.create")(function*(
        caller: TenantPrincipal,
        input: SecurityRuleCreate,
        dryRun = false
      ) {
        if (dryRun) yield* Audit.dismiss
        const vpc = yield* vpcs.owned(caller, input.vpc_id)
        const earlier = dryRun ? Option.none() : yield* idempotency.replay(
          caller.tenant_id,
          (id) => Effect.map(stateOf(caller), (state) => Option.fromNullable(state.rule(RuleId.make(id))))
        )
        if (Option.isSome(earlier)) return yield* mutation(vpc, earlier.value)
        const context = yield* applier.context(vpc)
        const now = yield* DateTime.now
        const shape = { ...input, target_pod_ids: input.target_pod_ids }
        yield* Either.match(Validate.validate(shape, references(context)), {
          onLeft: (e) => Effect.fail(invalid(e)),
          onRight: () => Effect.void
        })
        const decide = Strategy.create({
          ...input,
          id: RuleId.make(randomUuid()),
          tenant_id: caller.tenant_id,
          created_at: now,
          updated_at: now
        })
        const after = (result: { readonly rules: ReadonlyArray<SecurityRuleRecord> }) => result.rules
        if (dryRun) return yield* previewed(caller, vpc.id, context, decide, (r) => r.rules.slice(0, -1), after)
        const { result } = yield* pipeline.create(caller.tenant_id, verdictsHold(decide, vpc.id, context, after)).pipe(
          Effect.catchTag("UniqueViolation", Effect.die)
        )
        return yield* mutation(vpc, result.record, result.rules)
      })

      const update = Effect.fn("SecurityRules.update")(
        function*(caller: TenantPrincipal, id: SecurityRuleId, patch: SecurityRulePatch, dryRun = false) {
          if (dryRun) yield* Audit.dismiss
          const first = yield* ownedRule(caller, id)
          const vpc = yield* vpcs.owned(caller, first.vpc_id)
          const context = yield* applier.context(vpc)
          const now = yield* DateTime.now
          const decide = Strategy.update(id, vpc.id, patch, references(context), now)
          const after = (result: Strategy.Updated) => result.before.map((r) => (r.id === id ? result.saved : r))
          if (dryRun) return yield* previewed(caller, vpc.id, context, decide, (r) => r.before, after)
          const { result } = yield* pipeline.commit(caller.tenant_id, verdictsHold(decide, vpc.id, context, after))
            .pipe(
              Effect.catchTag("UniqueViolation", Effect.die)
            )
          return yield* mutation(vpc, result.saved)
        }
      )

      const remove = Effect.fn("SecurityRules.delete")(function*(
        caller: TenantPrincipal,
        id: SecurityRuleId,
        dryRun = false
      ) {
        if (dryRun) yield* Audit.dismiss
        const rule = yield* ownedRule(caller, id)
        const vpc = yield* vpcs.owned(caller, rule.vpc_id)
        const decide = Strategy.remove(id, vpc.id)
        const context = yield* applier.context(vpc)
        const after = (before: ReadonlyArray<SecurityRuleRecord>) => before.filter((r) => r.id !== id)
        if (dryRun) return yield* previewed(caller, vpc.id, context, decide, (before) => before, after)
        yield* pipeline.commit(caller.tenant_id, verdictsHold(decide, vpc.id, context, after)).pipe(
          Effect.catchTag("UniqueViolation", Effect.die)
        )
        return yield* removal(vpc)
      })

      const reorder = Effect.fn("SecurityRules.reorder")(
        function*(caller: TenantPrincipal, vpcId: VpcId, ruleIds: ReadonlyArray<SecurityRuleId>, dryRun = false) {
          if (dryRun) yield* Audit.dismiss
          const vpc = yield* vpcs.owned(caller, vpcId)
          const now = yield* DateTime.now
          const context = yield* applier.context(vpc)
          const decide = Strategy.reorder(vpc.id, ruleIds, now)
          const after = (result: { readonly next: ReadonlyArray<SecurityRuleRecord> }) => result.next
          if (dryRun) return yield* previewed(caller, vpc.id, context, decide, (r) => r.rules, after)
          const { result } = yield* pipeline.commit(caller.tenant_id, verdictsHold(decide, vpc.id, context, after))
            .pipe(
              Effect.catchTag("UniqueViolation", Effect.die)
            )
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
        const decide = Strategy.replace(vpc.id, items, references(context), options.ifMatch, {
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
        const { decision: { result: planned }, state: planState } = yield* pipeline.preview(caller.tenant_id, decide)
        const changes = (outcome: Strategy.Replacement) => ({
          vpc_id: vpc.id,
          created: outcome.created.map((r) => view(r, context)),
          updated: outcome.updated.map((r) => view(r, context)),
          deleted: outcome.deleted.map((r) => r.id),
          unchanged: outcome.unchanged.map((r) => view(r, context))
        })
        if (options.dryRun === true || !Declaration.changes(planned)) yield* Audit.dismiss
        if (options.dryRun === true) {
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
              violationsOf(planState, vpc.id, planned.next, context)
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
        const { result } = yield* pipeline.commit(
          caller.tenant_id,
          verdictsHold(decide, vpc.id, context, (r) => r.next)
        ).pipe(Effect.catchTag("UniqueViolation", Effect.die))
        const { context: applied, state } = yield* applier.applyInContext(vpc.tenant_id, vpc.id, result.next)
        return answer(result, applied ?? context, state)
      })

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
          const state = yield* stateOf(caller)
          const verdict = matcherOf(state, vpc.id, context).decide({
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
          // Only the deciding rule is named: a map of the VPC's every rule per request was most of its garbage.
          const decider = verdict.decided_by.kind === "rule" ? state.rule(verdict.decided_by.rule_id) : undefined
          const names = new Map(decider === undefined ? [] : [[decider.id as string, decider.name]])
          return FlowVerdict.make({ allowed: verdict.action === "allow", ...decisionOf(verdict, names) }, TRUSTED)
        }
      )

      const analysis = Effect.fn("SecurityRules.analysis")(function*(caller: TenantPrincipal, vpcId: VpcId) {
        const vpc = yield* vpcs.owned(caller, vpcId)
        const rules = (yield* stateOf(caller)).rulesOf(vpc.id)
        const names = new Map(rules.map((r) => [r.id as string, r.name]))
        const findings = Analysis.analyze(rules.map(RuleSet.fromRecord), yield* applier.context(vpc))
        return RuleAnalysis.make({
          vpc_id: vpc.id,
          findings: findings.map((f) => findingOf(f, names))
        })
      })

      const explain = Effect.fn("SecurityRules.explain")(
        function*(caller: TenantPrincipal, vpcId: VpcId, query: ExplainQuery) {
          const vpc = yield* vpcs.owned(caller, vpcId)
          const state = yield* stateOf(caller)
          const peering = yield* applier.peeringCidr
          if (query.protocol === "icmp" && query.port !== undefined) {
            return yield* invalid({ field: "port", message: "icmp has no ports" })
          }
          if (query.protocol !== "icmp" && query.port === undefined) {
            return yield* invalid({ field: "port", message: `required for ${query.protocol}` })
          }
          const contextOf = (id: VpcId) => vpcContextOf(state, id, peering)
          const interval = (cidr: string) => {
            const c = Net.cidrOf(cidr)
            return [Net.networkOf(c), Net.broadcastOf(c)] as const
          }
          const blocksOf = (id: VpcId) => state.subnetsOf(id).map((s) => interval(s.cidr))
          const subnetAtoms = (id: SubnetId) => [
            `subnet:${id}`,
            ...state.pods.filter((p) => p.subnet_id === id).map((p) => `pod:${p.id}`)
          ]
          /** An end as given: where it is, what it is, and the side it is in its VPC (if any). */
          const resolve = (field: "from" | "to", text: string) => {
            const unknown = invalid({
              field,
              message: `${JSON.stringify(text)} is not a pod, subnet or VPC of yours, "internet" or an IPv4 address`
            })
            if (text === "internet") {
              return Either.right({
                endpoint: { kind: "internet" } as ExplainEndpoint,
                vpc: null,
                side: { atoms: new Set<string>(), addresses: Reachability.internetOf(contextOf(vpc.id)) }
              })
            }
            const ip = Net.parseIpv4(text)
            if (Option.isSome(ip)) {
              const subnet = state.subnets.find((s) => Net.contains(Net.cidrOf(s.cidr), ip.value))
              return Either.right({
                endpoint: {
                  kind: "address",
                  ip: text,
                  subnet_id: subnet?.id ?? null,
                  vpc_id: subnet?.vpc_id ?? null
                } as ExplainEndpoint,
                vpc: subnet?.vpc_id ?? null,
                side: {
                  atoms: new Set(subnet === undefined ? [] : [`subnet:${subnet.id}`]),
                  addresses: [[ip.value, ip.value] as const]
                }
              })
            }
            const pod = state.pod(text)
            if (pod !== undefined) {
              const subnet = state.subnet(pod.subnet_id)
              return Either.right({
                endpoint: { kind: "pod", pod_id: pod.id, vpc_id: pod.vpc_id, name: pod.name } as ExplainEndpoint,
                vpc: pod.vpc_id,
                side: {
                  atoms: new Set([`pod:${pod.id}`]),
                  addresses: subnet === undefined ? [] : [interval(subnet.cidr)]
                }
              })
            }
            const subnet = state.subnet(text)
            if (subnet !== undefined) {
              return Either.right({
                endpoint: {
                  kind: "subnet",
                  subnet_id: subnet.id,
                  vpc_id: subnet.vpc_id,
                  name: subnet.name
                } as ExplainEndpoint,
                vpc: subnet.vpc_id,
                side: { atoms: new Set(subnetAtoms(subnet.id)), addresses: [interval(subnet.cidr)] }
              })
            }
            const other = state.vpc(text)
            if (other !== undefined) {
              return Either.right({
                endpoint: { kind: "vpc", vpc_id: other.id, name: other.name } as ExplainEndpoint,
                vpc: other.id,
                side: { atoms: new Set(Analysis.universe(contextOf(other.id))), addresses: blocksOf(other.id) }
              })
            }
            return Either.left(unknown)
          }
          const from = yield* resolve("from", query.from)
          const to = yield* resolve("to", query.to)
          if (from.vpc !== vpc.id && to.vpc !== vpc.id) {
            return yield* invalid({ field: "from", message: `neither end is in VPC ${vpc.id}` })
          }
          const port = query.port ?? null
          const half = (direction: "egress" | "ingress", at: typeof from, remote: typeof from) => {
            if (at.vpc === null) return null
            const decided = Explain.side(
              state.rulesOf(at.vpc).map(RuleSet.fromRecord),
              contextOf(at.vpc),
              direction,
              query.protocol,
              port,
              at.side,
              remote.side.addresses
            )
            if (decided === null) return null
            const decider = decided.verdict.decided_by.kind === "rule"
              ? state.rule(decided.verdict.decided_by.rule_id)
              : undefined
            const names = new Map(decider === undefined ? [] : [[decider.id as string, decider.name]])
            const flow = decided.flow
            return ExplainedHalf.make({
              vpc_id: at.vpc,
              allowed: decided.verdict.action === "allow",
              ...decisionOf(decided.verdict, names),
              flow: {
                direction: flow.direction,
                protocol: flow.protocol,
                port: flow.port,
                remote_ip: flow.remote.kind === "ip" ? Net.formatIpv4(flow.remote.ip) : "",
                local: { pod_id: flow.local.pod_id ?? null, subnet_id: flow.local.subnet_id ?? null }
              }
            })
          }
          const egress = half("egress", from, to)
          const ingress = half("ingress", to, from)
          return FlowExplanation.make({
            vpc_id: vpc.id,
            from: from.endpoint,
            to: to.endpoint,
            protocol: query.protocol,
            port,
            allowed: (egress?.allowed ?? true) && (ingress?.allowed ?? true) &&
              from.side.addresses.length > 0 && to.side.addresses.length > 0,
            egress,
            ingress
          })
        }
      )

      const reachability = Effect.fn("SecurityRules.reachability")(function*(caller: TenantPrincipal, vpcId: VpcId) {
        const vpc = yield* vpcs.owned(caller, vpcId)
        const state = yield* stateOf(caller)
        return state.memo(Matrix, { vpc, peeringCidr: yield* applier.peeringCidr })
      })

      return SecurityRules.of({
        analysis,
        explain,
        reachability,
        // The list and its ETag from one read of the caller's state.
        list: (caller, vpcId) =>
          Effect.gen(function*() {
            const state = yield* stateOf(caller)
            const vpc = yield* found(state.vpc(vpcId), `VPC ${vpcId}`)
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
