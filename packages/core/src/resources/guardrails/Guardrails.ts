/**
 * Guardrails (`domain/Guardrail.ts`): a VPC's, set and deleted by its tenant, and tenant-wide
 * ones, set and deleted by the administrator and read (never changed) by the tenant. A
 * guardrail the rules already break is refused like a change that would break one: 409 with
 * the violations, found by the pipeline (`Invariants`) on the state the change commits on.
 */
import { Context, DateTime, Effect, Either, Layer, Option } from "effect"
import type { Decision } from "../../changes/Pipeline.js"
import { creating, INVARIANTS, Pipeline, removing } from "../../changes/Pipeline.js"
import type { Guardrail, GuardrailCreate, GuardrailRecord } from "../../domain/Guardrail.js"
import { etagOf, MAX_GUARDRAILS, viewOf } from "../../domain/Guardrail.js"
import { ADMIN_SCOPE } from "../../domain/IdempotencyKey.js"
import type { TenantId, VpcId } from "../../domain/Ids.js"
import { GuardrailId, randomUuid } from "../../domain/Ids.js"
import type { TenantPrincipal } from "../../domain/Principal.js"
import type { GuardrailViolated, IdempotencyKeyReused, ServiceUnavailable } from "../../Errors.js"
import { Conflict, Forbidden, NotFound, PreconditionFailed, RuleValidation } from "../../Errors.js"
import * as Change from "../../kinds/Change.js"
import { storeUnavailable } from "../../ports/Failures.js"
import { Store } from "../../ports/Store.js"
import { vpcContextOf } from "../../readmodel/Derived.js"
import { liveVpc } from "../../readmodel/Ownership.js"
import { ReadModel } from "../../readmodel/ReadModel.js"
import type { TenantState } from "../../readmodel/TenantState.js"
import type * as RuleSet from "../../rules/RuleSet.js"
import { NetworkApplier } from "../../usecases/NetworkApplier.js"
import { Resources } from "../Resources.js"

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
    id: string,
    ifMatch?: string
  ) => Effect.Effect<void, NotFound | Forbidden | PreconditionFailed | ServiceUnavailable>
  /** The administrator's: a tenant's tenant-wide guardrails. */
  readonly listForTenant: (tenantId: TenantId) => Effect.Effect<ReadonlyArray<Guardrail>, NotFound | ServiceUnavailable>
  readonly createForTenant: (
    tenantId: TenantId,
    input: GuardrailCreate
  ) => Effect.Effect<Guardrail, Failure | IdempotencyKeyReused>
  readonly deleteForTenant: (
    tenantId: TenantId,
    id: string,
    ifMatch?: string
  ) => Effect.Effect<void, NotFound | PreconditionFailed | ServiceUnavailable>
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
      const resources = yield* Resources
      const applier = yield* NetworkApplier
      const store = yield* Store

      const stateOf = (tenantId: TenantId) => readModel.stateOf(tenantId).pipe(storeUnavailable)

      const ownedVpc = (state: TenantState, vpcId: VpcId) => liveVpc(state, vpcId)

      /**
       * A guardrail added to `tenantId` (for `vpcId`, or tenant-wide): refused when the limit is
       * reached or when the rules of a VPC it holds in already break it.
       */
      const add = (tenantId: TenantId, vpcId: VpcId | null, input: GuardrailCreate, scope: "tenant" | "admin") =>
        Effect.gen(function*() {
          const earlier = yield* resources.replay(tenantId, "guardrails", scope === "admin" ? ADMIN_SCOPE : tenantId)
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
            return Either.map(validate(input, context), () => {
              const made = creating({ part: "guardrails", record })
              // A tenant-wide guardrail is in no VPC's contents: it steps each VPC's version
              // itself, so a rule change decided on a VPC before it is decided again, with it.
              return {
                ...made,
                writes: vpcId === null ? [...made.writes, ...state.vpcs.map((v) => Change.touch(v.id))] : made.writes,
                ...(scope === "admin" ? { scope: ADMIN_SCOPE } : {})
              }
            })
          }
          const { result } = yield* pipeline.create(tenantId, decide, INVARIANTS)
          return viewOf(result)
        })

      const remove = <E>(
        tenantId: TenantId,
        id: string,
        ifMatch: string | undefined,
        allowed: (g: GuardrailRecord) => Effect.Effect<void, E>
      ) =>
        Effect.gen(function*() {
          const guardrail = yield* resources.get(tenantId, "guardrails", id)
          yield* allowed(guardrail)
          // Taking a guardrail away refuses nothing: recorded, not checked.
          yield* pipeline.record(tenantId, (state) =>
            removing(
              state,
              "guardrails",
              id,
              `guardrail ${id} not found`,
              guardrail.vpc_id ?? undefined,
              (current) => PreconditionFailed.unmoved(`guardrail ${id}`, etagOf(current), ifMatch)
            ))
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
        delete: Effect.fn("Guardrails.delete")((caller: TenantPrincipal, id: string, ifMatch?: string) =>
          remove(caller.tenant_id, id, ifMatch, (g) =>
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
        deleteForTenant: Effect.fn("Guardrails.deleteForTenant")(
          function*(tenantId: TenantId, id: string, ifMatch?: string) {
            yield* forTenant(tenantId)
            const guardrail = (yield* stateOf(tenantId)).guardrail(id)
            if (guardrail?.vpc_id !== null) {
              return yield* new NotFound({ detail: `tenant-wide guardrail ${id} not found` })
            }
            yield* remove(tenantId, id, ifMatch, () => Effect.void)
          }
        )
      })
    })
  )
}
