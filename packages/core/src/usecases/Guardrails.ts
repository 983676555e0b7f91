/**
 * Guardrails (`domain/Guardrail.ts`): a VPC's, set and deleted by its tenant, and tenant-wide
 * ones, set and deleted by the administrator and read (never changed) by the tenant. A
 * guardrail the rules already break is refused like a change that would break one: 409 with
 * the violations. `verdictsHold` is what every change that can move a verdict checks, inside
 * its decision, so the check is made on the very state the change commits on.
 */
import { Context, DateTime, Effect, Either, Layer, Option } from "effect"
import * as Change from "../changes/Change.js"
import { Idempotency } from "../changes/Idempotency.js"
import type { Decision } from "../changes/Pipeline.js"
import { creating, Pipeline, removing } from "../changes/Pipeline.js"
import type { Guardrail, GuardrailCreate, GuardrailRecord } from "../domain/Guardrail.js"
import { MAX_GUARDRAILS, viewOf } from "../domain/Guardrail.js"
import { ADMIN_SCOPE } from "../domain/IdempotencyKey.js"
import type { TenantId, VpcId } from "../domain/Ids.js"
import { GuardrailId, randomUuid } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import type { TenantPrincipal } from "../domain/Principal.js"
import type { SecurityRuleRecord } from "../domain/SecurityRule.js"
import { GuardrailViolation } from "../domain/SecurityRule.js"
import type { IdempotencyKeyReused, ServiceUnavailable } from "../Errors.js"
import { Conflict, Forbidden, GuardrailViolated, NotFound, RuleValidation } from "../Errors.js"
import { Store } from "../ports/Store.js"
import { vpcContextOf } from "../readmodel/Derived.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import type { TenantState } from "../readmodel/TenantState.js"
import * as GuardrailCheck from "../rules/GuardrailCheck.js"
import * as RuleSet from "../rules/RuleSet.js"
import { storeUnavailable } from "./Failures.js"
import { NetworkApplier } from "./NetworkApplier.js"
import { found } from "./Ownership.js"

/** The violations of the guardrails that hold in `vpcId` by `rules` in `context`, as the API states them. */
export const violationsOf = (
  state: TenantState,
  vpcId: VpcId,
  rules: ReadonlyArray<SecurityRuleRecord>,
  context: RuleSet.VpcContext,
  guardrails: ReadonlyArray<GuardrailRecord> = state.guardrailsOf(vpcId)
): Array<GuardrailViolation> => {
  if (guardrails.length === 0) return []
  const found = GuardrailCheck.violations(guardrails, rules.map(RuleSet.fromRecord), context)
  if (found.length === 0) return []
  const names = new Map(rules.map((r) => [r.id as string, r.name]))
  return found.map(({ flow, guardrail, verdict }) =>
    GuardrailViolation.make({
      guardrail_id: guardrail.id,
      name: guardrail.name,
      vpc_id: vpcId,
      flow: {
        direction: flow.direction,
        protocol: flow.protocol,
        port: flow.port,
        remote_ip: flow.remote.kind === "ip" ? Net.formatIpv4(flow.remote.ip) : "",
        local: { pod_id: flow.local.pod_id ?? null, subnet_id: flow.local.subnet_id ?? null }
      },
      decided_by: verdict.decided_by.kind === "rule"
        ? { kind: "rule", rule_id: verdict.decided_by.rule_id, name: names.get(verdict.decided_by.rule_id) ?? "" }
        : verdict.decided_by
    })
  )
}

/**
 * The violations in each of `vpcIds` once the tenant's VPCs, subnets and pods are `after`
 * (a VPC or subnet added or removed), each VPC with its rules as `state` holds them unless
 * `rulesOf` says otherwise (a new VPC's seeded rule).
 */
export const violationsAfter = (
  state: TenantState,
  after: RuleSet.Surroundings,
  vpcIds: Iterable<VpcId>,
  rulesOf: (vpcId: VpcId) => ReadonlyArray<SecurityRuleRecord> = (vpcId) => state.rulesOf(vpcId)
): Array<GuardrailViolation> =>
  [...new Set(vpcIds)].flatMap((vpcId) => violationsOf(state, vpcId, rulesOf(vpcId), RuleSet.contextOf(vpcId, after)))

/** The refusal of a change that breaks guardrails. */
export const violated = (violations: ReadonlyArray<GuardrailViolation>) =>
  new GuardrailViolated({
    detail: `the change would break ${violations.map((v) => `guardrail '${v.name}'`).join(", ")}: no change was made`,
    violations
  })

/**
 * `decide`, refused when the VPC's rules it leaves (`after`) break a guardrail that holds in
 * the VPC. `context`: the VPC's, as the change leaves it.
 */
export const verdictsHold = <A, E>(
  decide: (state: TenantState) => Either.Either<Decision<A>, E>,
  vpcId: VpcId,
  context: RuleSet.VpcContext,
  after: (result: A, state: TenantState) => ReadonlyArray<SecurityRuleRecord>
) =>
(state: TenantState): Either.Either<Decision<A>, E | GuardrailViolated> =>
  Either.flatMap(decide(state), (decision) => {
    const violations = violationsOf(state, vpcId, after(decision.result, state), context)
    return violations.length === 0 ? Either.right(decision) : Either.left(violated(violations))
  })

type Failure = NotFound | RuleValidation | Conflict | GuardrailViolated | ServiceUnavailable

export interface GuardrailsShape {
  /** The guardrails that hold in the caller's VPC: its own and the tenant-wide ones. */
  readonly list: (
    caller: TenantPrincipal,
    vpcId: VpcId
  ) => Effect.Effect<ReadonlyArray<Guardrail>, NotFound | ServiceUnavailable>
  readonly create: (
    caller: TenantPrincipal,
    vpcId: VpcId,
    input: GuardrailCreate
  ) => Effect.Effect<Guardrail, Failure | IdempotencyKeyReused>
  /** A VPC's guardrail; a tenant-wide one is the administrator's (403). */
  readonly delete: (
    caller: TenantPrincipal,
    id: string
  ) => Effect.Effect<void, NotFound | Forbidden | ServiceUnavailable>
  /** The administrator's: a tenant's tenant-wide guardrails. */
  readonly listForTenant: (tenantId: TenantId) => Effect.Effect<ReadonlyArray<Guardrail>, NotFound | ServiceUnavailable>
  readonly createForTenant: (
    tenantId: TenantId,
    input: GuardrailCreate
  ) => Effect.Effect<Guardrail, Failure | IdempotencyKeyReused>
  readonly deleteForTenant: (tenantId: TenantId, id: string) => Effect.Effect<void, NotFound | ServiceUnavailable>
}

const invalid = (field: string, message: string) => Either.left(RuleValidation.field(field, message))

/** The cross-field rules of a guardrail, against the VPC it is for (none: tenant-wide). */
const validate = (input: GuardrailCreate, context: RuleSet.VpcContext | null): Either.Either<void, RuleValidation> => {
  if (input.ports !== null && input.protocol !== "tcp" && input.protocol !== "udp") {
    return invalid("ports", `ports are only allowed with protocol tcp or udp, not ${input.protocol}`)
  }
  if (input.local === null) return Either.void
  if (context === null) return invalid("local", "a tenant-wide guardrail covers whole VPCs: local must be null")
  if (input.local.pod_ids.length + input.local.subnet_ids.length === 0) {
    return invalid("local", "name at least one pod or subnet, or leave local null for the whole VPC")
  }
  const pod = input.local.pod_ids.find((id) => !context.pods.has(id))
  if (pod !== undefined) return invalid("local.pod_ids", `${pod} is not a pod of this VPC`)
  const subnet = input.local.subnet_ids.find((id) => !context.subnets.has(id))
  if (subnet !== undefined) return invalid("local.subnet_ids", `${subnet} is not a subnet of this VPC`)
  return Either.void
}

export class Guardrails extends Context.Tag("@tenet/core/Guardrails")<Guardrails, GuardrailsShape>() {
  static readonly layer = Layer.effect(
    Guardrails,
    Effect.gen(function*() {
      const readModel = yield* ReadModel
      const pipeline = yield* Pipeline
      const idempotency = yield* Idempotency
      const applier = yield* NetworkApplier
      const store = yield* Store

      const stateOf = (tenantId: TenantId) => readModel.stateOf(tenantId).pipe(storeUnavailable)

      const ownedVpc = (state: TenantState, vpcId: VpcId) => found(state.vpc(vpcId), `VPC ${vpcId}`)

      /**
       * A guardrail added to `tenantId` (for `vpcId`, or tenant-wide): refused when the limit is
       * reached or when the rules of a VPC it holds in already break it.
       */
      const add = (tenantId: TenantId, vpcId: VpcId | null, input: GuardrailCreate, scope: "tenant" | "admin") =>
        Effect.gen(function*() {
          const earlier = yield* idempotency.replay(
            scope === "admin" ? ADMIN_SCOPE : tenantId,
            (id) => Effect.map(stateOf(tenantId), (state) => Option.fromNullable(state.guardrail(id)))
          )
          if (Option.isSome(earlier)) return viewOf(earlier.value)
          const peeringCidr = yield* applier.peeringCidr
          const now = yield* DateTime.now
          const record: GuardrailRecord = {
            ...input,
            id: GuardrailId.make(randomUuid()),
            tenant_id: tenantId,
            vpc_id: vpcId,
            created_at: now
          }
          const decide = (
            state: TenantState
          ): Either.Either<Decision<GuardrailRecord>, NotFound | Conflict | RuleValidation | GuardrailViolated> => {
            const vpcs = vpcId === null ? state.vpcs.map((v) => v.id) : [vpcId]
            if (vpcId !== null && state.vpc(vpcId) === undefined) {
              return Either.left(new NotFound({ detail: `VPC ${vpcId} not found` }))
            }
            const siblings = state.guardrails.filter((g) => g.vpc_id === vpcId)
            if (siblings.length >= MAX_GUARDRAILS) {
              return Either.left(
                new Conflict({
                  detail: `${vpcId === null ? "the tenant" : `VPC ${vpcId}`} already has ${MAX_GUARDRAILS} guardrails`
                })
              )
            }
            const context = vpcId === null ? null : vpcContextOf(state, vpcId, peeringCidr)
            return validate(input, context).pipe(
              Either.flatMap(() => {
                const violations = vpcs.flatMap((vpc) =>
                  violationsOf(state, vpc, state.rulesOf(vpc), vpcContextOf(state, vpc, peeringCidr), [record])
                )
                return violations.length === 0 ? Either.void : Either.left(violated(violations))
              }),
              Either.map(() => {
                const made = creating({ part: "guardrails", record })
                // A tenant-wide guardrail is in no VPC's contents: it steps each VPC's version
                // itself, so a rule change decided on a VPC before it is decided again, with it.
                return {
                  ...made,
                  writes: vpcId === null ? [...made.writes, ...vpcs.map(Change.touch)] : made.writes,
                  decidedOn: vpcs,
                  ...(scope === "admin" ? { scope: ADMIN_SCOPE } : {})
                }
              })
            )
          }
          const { result } = yield* pipeline.create(tenantId, decide).pipe(
            Effect.catchTag("UniqueViolation", Effect.die)
          )
          return viewOf(result)
        })

      const remove = <E>(tenantId: TenantId, id: string, allowed: (g: GuardrailRecord) => Effect.Effect<void, E>) =>
        Effect.gen(function*() {
          const guardrail = yield* found((yield* stateOf(tenantId)).guardrail(id), `guardrail ${id}`)
          yield* allowed(guardrail)
          yield* pipeline.commit(tenantId, (state) =>
            state.guardrail(id) === undefined
              ? Either.left(new NotFound({ detail: `guardrail ${id} not found` }))
              : Either.right(removing("guardrails", id, guardrail.vpc_id ?? undefined))).pipe(
              Effect.catchTag("UniqueViolation", Effect.die)
            )
        })

      const forTenant = (tenantId: TenantId) =>
        Effect.flatMap(
          store.tenants.find(tenantId).pipe(storeUnavailable),
          (tenant) =>
            Option.isNone(tenant) ? Effect.fail(new NotFound({ detail: `tenant ${tenantId} not found` })) : Effect.void
        )

      return Guardrails.of({
        list: Effect.fn("Guardrails.list")(function*(caller: TenantPrincipal, vpcId: VpcId) {
          const state = yield* stateOf(caller.tenant_id)
          yield* ownedVpc(state, vpcId)
          return state.guardrailsOf(vpcId).map(viewOf)
        }),
        create: Effect.fn("Guardrails.create")(
          function*(caller: TenantPrincipal, vpcId: VpcId, input: GuardrailCreate) {
            yield* ownedVpc(yield* stateOf(caller.tenant_id), vpcId)
            return yield* add(caller.tenant_id, vpcId, input, "tenant")
          }
        ),
        delete: Effect.fn("Guardrails.delete")((caller: TenantPrincipal, id: string) =>
          remove(caller.tenant_id, id, (g) =>
            g.vpc_id === null
              ? Effect.fail(
                new Forbidden({ detail: `guardrail ${id} is tenant-wide: only the administrator removes it` })
              )
              : Effect.void)
        ),
        listForTenant: Effect.fn("Guardrails.listForTenant")(function*(tenantId: TenantId) {
          yield* forTenant(tenantId)
          return (yield* stateOf(tenantId)).guardrails.filter((g) => g.vpc_id === null).map(viewOf)
        }),
        createForTenant: Effect.fn("Guardrails.createForTenant")(function*(tenantId: TenantId, input: GuardrailCreate) {
          yield* forTenant(tenantId)
          return yield* add(tenantId, null, input, "admin")
        }),
        deleteForTenant: Effect.fn("Guardrails.deleteForTenant")(function*(tenantId: TenantId, id: string) {
          yield* forTenant(tenantId)
          const guardrail = (yield* stateOf(tenantId)).guardrail(id)
          if (guardrail?.vpc_id !== null) {
            return yield* new NotFound({ detail: `tenant-wide guardrail ${id} not found` })
          }
          yield* remove(tenantId, id, () => Effect.void)
        })
      })
    })
  )
}
