/**
 * Address sets (`domain/AddressSet.ts`): a tenant's named lists of networks, each the tenant's
 * own to create, read, change and delete, and the remote of rules in any of its VPCs. The
 * decisions are `AddressSetStrategy`'s; every write goes through the pipeline, with its audit
 * entry, event and idempotency key. An edit moves the verdicts of every VPC whose rules name the
 * set: the pipeline checks their guardrails in the decision that commits it, and each of those
 * VPCs is converged after it. A dry run answers the edit's impact in each.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import * as Invariants from "../../changes/Invariants.js"
import { Pipeline } from "../../changes/Pipeline.js"
import type { AddressSet, AddressSetCreate, AddressSetPatch, AddressSetRecord } from "../../domain/AddressSet.js"
import { AddressSetChanged, AddressSetPlan, AddressSetUsage, viewOf } from "../../domain/AddressSet.js"
import { TRUSTED } from "../../domain/Common.js"
import type { VpcId } from "../../domain/Ids.js"
import { AddressSetId, randomUuid } from "../../domain/Ids.js"
import type { TenantPrincipal } from "../../domain/Principal.js"
import type {
  GuardrailViolated,
  IdempotencyKeyReused,
  NotFound,
  PreconditionFailed,
  ServiceUnavailable
} from "../../Errors.js"
import { Conflict } from "../../Errors.js"
import { storeUnavailable } from "../../ports/Failures.js"
import { vpcContextOf } from "../../readmodel/Derived.js"
import { found } from "../../readmodel/Ownership.js"
import { ReadModel } from "../../readmodel/ReadModel.js"
import type { TenantState } from "../../readmodel/TenantState.js"
import * as RuleSet from "../../rules/RuleSet.js"
import { NetworkApplier, together } from "../../usecases/NetworkApplier.js"
import { Resources } from "../Resources.js"
import { impactOf } from "../securityRules/RulePresentation.js"
import * as AddressSetStrategy from "./AddressSetStrategy.js"

type Failure = NotFound | ServiceUnavailable

export interface AddressSetsShape {
  /** 409 when the tenant has a set of that name, or `AddressSetStrategy.MAX_ADDRESS_SETS`. */
  readonly create: (
    caller: TenantPrincipal,
    input: AddressSetCreate
  ) => Effect.Effect<AddressSet, ServiceUnavailable | Conflict | IdempotencyKeyReused>
  /** The caller's sets, oldest first. */
  readonly list: (caller: TenantPrincipal) => Effect.Effect<ReadonlyArray<AddressSet>, ServiceUnavailable>
  /** One of the caller's sets; another tenant's is not found. */
  readonly get: (caller: TenantPrincipal, id: AddressSetId) => Effect.Effect<AddressSet, Failure>
  /** Every rule naming the set, by VPC then evaluation order. */
  readonly usage: (caller: TenantPrincipal, id: AddressSetId) => Effect.Effect<AddressSetUsage, Failure>
  /**
   * `ifMatch`: the set's `etag` the change was made against; 412 when it moved since. 409 when
   * it would break a guardrail in any VPC that uses the set. Answers once every such VPC is
   * converged (or still applying past the applier's wait), saying whether all are in force.
   */
  readonly update: (
    caller: TenantPrincipal,
    id: AddressSetId,
    patch: AddressSetPatch,
    ifMatch?: string
  ) => Effect.Effect<AddressSetChanged, Failure | PreconditionFailed | GuardrailViolated>
  /** The edit decided exactly as `update` decides it, not made: its impact in each VPC that uses the set. */
  readonly plan: (
    caller: TenantPrincipal,
    id: AddressSetId,
    patch: AddressSetPatch,
    ifMatch?: string
  ) => Effect.Effect<AddressSetPlan, Failure | PreconditionFailed>
  /** 409 while a rule names the set. */
  readonly delete: (
    caller: TenantPrincipal,
    id: AddressSetId,
    ifMatch?: string
  ) => Effect.Effect<void, Failure | PreconditionFailed | Conflict>
}

/** The VPCs with a rule naming the set, in the VPCs' creation order. */
const vpcsUsing = (state: TenantState, id: string): ReadonlyArray<VpcId> => {
  const using = new Set<string>(state.rulesUsing(id).map((r) => r.vpc_id))
  return state.vpcs.filter((v) => using.has(v.id)).map((v) => v.id)
}

export class AddressSets extends Context.Tag("@tenet/core/AddressSets")<AddressSets, AddressSetsShape>() {
  static readonly layer = Layer.effect(
    AddressSets,
    Effect.gen(function*() {
      const readModel = yield* ReadModel
      const pipeline = yield* Pipeline
      const resources = yield* Resources
      const applier = yield* NetworkApplier
      const stateOf = (caller: TenantPrincipal) => readModel.stateOf(caller.tenant_id).pipe(storeUnavailable)

      return AddressSets.of({
        create: Effect.fn("AddressSets.create")(function*(caller: TenantPrincipal, input: AddressSetCreate) {
          const earlier = yield* resources.replay(caller.tenant_id, "addressSets")
          if (Option.isSome(earlier)) return viewOf(earlier.value)
          const now = yield* DateTime.now
          const record: AddressSetRecord = {
            id: AddressSetId.make(randomUuid()),
            tenant_id: caller.tenant_id,
            name: input.name,
            description: input.description,
            entries: input.entries.map((e) => ({ cidr: e.cidr, description: e.description })),
            created_at: now,
            updated_at: now
          }
          // A new set is in no rule yet: no verdict, so no guardrail, can move with it.
          const { result } = yield* pipeline.create(
            caller.tenant_id,
            AddressSetStrategy.create(record),
            ["Conflict", "UniqueViolation"]
          ).pipe(
            Effect.catchTag(
              "UniqueViolation",
              () => new Conflict({ detail: `an address set named '${input.name}' exists` })
            )
          )
          return viewOf(result)
        }),
        list: Effect.fn("AddressSets.list")(function*(caller: TenantPrincipal) {
          return (yield* resources.list(caller.tenant_id, "addressSets")).map(viewOf)
        }),
        get: Effect.fn("AddressSets.get")(function*(caller: TenantPrincipal, id: AddressSetId) {
          return viewOf(yield* resources.get(caller.tenant_id, "addressSets", id))
        }),
        usage: Effect.fn("AddressSets.usage")(function*(caller: TenantPrincipal, id: AddressSetId) {
          const state = yield* stateOf(caller)
          yield* found(state.addressSet(id), `address set ${id}`)
          const rules = vpcsUsing(state, id).flatMap((vpc) =>
            RuleSet.sort(state.rulesOf(vpc).map(RuleSet.fromRecord)).filter((r) =>
              r.remote.kind === "address_set" && r.remote.address_set_id === id
            ).map((r) => ({ rule_id: r.id, name: state.rule(r.id)!.name, vpc_id: vpc }))
          )
          return AddressSetUsage.make({ address_set_id: id, rules }, TRUSTED)
        }),
        update: Effect.fn("AddressSets.update")(
          function*(caller: TenantPrincipal, id: AddressSetId, patch: AddressSetPatch, ifMatch?: string) {
            const now = yield* DateTime.now
            // An edit adds no rule and moves no block; the store's names do not change.
            const { result, state } = yield* pipeline.commit(
              caller.tenant_id,
              AddressSetStrategy.update(id, patch, ifMatch, now),
              ["GuardrailViolated"]
            )
            // The state the commit made, or (when this process did not make it) the latest; a new
            // description or notes move no verdict, so there is nothing to converge.
            const latest = result.moves ? state ?? (yield* stateOf(caller)) : undefined
            const states = yield* Effect.forEach(
              latest === undefined ? [] : vpcsUsing(latest, id),
              (vpc) =>
                Effect.map(applier.apply(caller.tenant_id, vpc), (applied) => ({
                  vpc: latest?.vpc(vpc)?.name ?? vpc,
                  state: applied
                })),
              { concurrency: "unbounded" }
            )
            return AddressSetChanged.make({ ...viewOf(result.record), ...together(states) }, TRUSTED)
          }
        ),
        plan: Effect.fn("AddressSets.plan")(
          function*(caller: TenantPrincipal, id: AddressSetId, patch: AddressSetPatch, ifMatch?: string) {
            const now = yield* DateTime.now
            const peering = yield* applier.peeringCidr
            // A set's entries move no block, add no rule and peer no VPCs: no invariant can refuse its edit with a conflict.
            const { after, decision, state } = yield* pipeline.preview(
              caller.tenant_id,
              AddressSetStrategy.update(id, patch, ifMatch, now),
              []
            )
            const vpcs = vpcsUsing(state, id).map((vpc) => {
              const rules = state.rulesOf(vpc)
              const was = vpcContextOf(state, vpc, peering)
              const violations = Invariants.violationsBrought(state, after, vpc, peering)
              return impactOf(vpc, was, rules, rules, violations, vpcContextOf(after, vpc, peering))
            })
            return AddressSetPlan.make({ dry_run: true, address_set: viewOf(decision.result.record), vpcs }, TRUSTED)
          }
        ),
        delete: Effect.fn("AddressSets.delete")(function*(caller: TenantPrincipal, id: AddressSetId, ifMatch?: string) {
          // A set no rule names moves no verdict; the store's names do not change.
          yield* pipeline.commit(caller.tenant_id, AddressSetStrategy.remove(id, ifMatch), [])
        })
      })
    })
  )
}
