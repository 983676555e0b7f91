/**
 * VPCs (tenant): create (seeded with the spec's "Allow internal traffic" rule), list,
 * delete (with its subnets, rules, pods and tunnels). Another tenant's VPC is indistinguishable from a
 * missing one.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { Idempotency } from "../changes/Idempotency.js"
import { creating, Pipeline, removing } from "../changes/Pipeline.js"
import { randomUuid, SecurityRuleId, VpcId } from "../domain/Ids.js"
import type { TenantPrincipal } from "../domain/Principal.js"
import type { SecurityRuleRecord } from "../domain/SecurityRule.js"
import type { Vpc, VpcCreate, VpcRecord } from "../domain/Vpc.js"
import { toVpc } from "../domain/Vpc.js"
import { Conflict, ServiceUnavailable } from "../Errors.js"
import type {
  Forbidden,
  GuardrailViolated,
  IdempotencyKeyReused,
  InternalError,
  NotFound,
  Unauthorized
} from "../Errors.js"
import { Orchestrator } from "../ports/Orchestrator.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import * as BodyCredentials from "./BodyCredentials.js"
import { storeUnavailable } from "./Failures.js"
import { violated, violationsAfter } from "./Guardrails.js"
import { Identity } from "./Identity.js"
import { NetworkApplier } from "./NetworkApplier.js"
import { found } from "./Ownership.js"
import { Tunnels } from "./Tunnels.js"

export const SEEDED_RULE_NAME = "Allow internal traffic"

/** The rule every new VPC starts with: ingress from the VPC itself, at the lowest precedence. */
export const seededRule = (vpc: VpcRecord): SecurityRuleRecord => ({
  id: SecurityRuleId.make(randomUuid()),
  vpc_id: vpc.id,
  tenant_id: vpc.tenant_id,
  seq: 1,
  name: SEEDED_RULE_NAME,
  description: null,
  direction: "ingress",
  action: "allow",
  priority: 2000,
  protocol: "all",
  ports: null,
  remote_type: "vpc",
  remote_cidr: null,
  remote_vpc_id: vpc.id,
  target_type: "vpc",
  target_subnet_id: null,
  target_pod_ids: null,
  enabled: true,
  created_at: vpc.created_at,
  updated_at: vpc.created_at
})

type Failure = ServiceUnavailable | Unauthorized | Forbidden

export interface VpcsShape {
  readonly create: (
    caller: TenantPrincipal,
    input: VpcCreate
  ) => Effect.Effect<Vpc, Failure | Conflict | IdempotencyKeyReused | GuardrailViolated>
  readonly list: (caller: TenantPrincipal) => Effect.Effect<ReadonlyArray<Vpc>, ServiceUnavailable>
  readonly delete: (
    caller: TenantPrincipal,
    id: VpcId
  ) => Effect.Effect<void, NotFound | ServiceUnavailable | InternalError | GuardrailViolated>
  /** The caller's VPC, or 404. */
  readonly owned: (caller: TenantPrincipal, id: VpcId) => Effect.Effect<VpcRecord, NotFound | ServiceUnavailable>
}

export class Vpcs extends Context.Tag("@tenet/core/Vpcs")<Vpcs, VpcsShape>() {
  static readonly layer = Layer.effect(
    Vpcs,
    Effect.gen(function*() {
      const identity = yield* Identity
      const applier = yield* NetworkApplier
      const orchestrator = yield* Orchestrator
      const tunnels = yield* Tunnels
      const idempotency = yield* Idempotency
      const pipeline = yield* Pipeline
      const readModel = yield* ReadModel

      const stateOf = (caller: TenantPrincipal) => readModel.stateOf(caller.tenant_id).pipe(storeUnavailable)

      const owned = (caller: TenantPrincipal, id: VpcId) =>
        Effect.flatMap(stateOf(caller), (state) => found(state.vpc(id), `VPC ${id}`))

      const create = Effect.fn("Vpcs.create")(function*(caller: TenantPrincipal, input: VpcCreate) {
        yield* BodyCredentials.check(identity, caller, input)
        const earlier = yield* idempotency.replay(
          caller.tenant_id,
          (id) => Effect.map(stateOf(caller), (state) => Option.fromNullable(state.vpc(VpcId.make(id))))
        )
        if (Option.isSome(earlier)) {
          return toVpc({ ...earlier.value, ...(yield* applier.apply(caller.tenant_id, earlier.value.id)) })
        }
        const vpc: VpcRecord = {
          id: VpcId.make(randomUuid()),
          tenant_id: caller.tenant_id,
          name: input.name,
          enable_internet: input.enable_internet,
          applied: false,
          apply_error: "not yet applied",
          created_at: yield* DateTime.now
        }
        const seeded = seededRule(vpc)
        const peeringCidr = yield* applier.peeringCidr
        // The tenant-wide guardrails hold in the new VPC from its first rule.
        yield* pipeline.create(caller.tenant_id, (state) => {
          const violations = violationsAfter(
            state,
            { vpcs: [...state.vpcs, vpc], subnets: state.subnets, pods: state.pods, peeringCidr },
            [vpc.id],
            () => [seeded]
          )
          return violations.length > 0
            ? Effect.fail(violated(violations))
            : Effect.succeed(creating({ part: "vpcs", record: vpc }, { part: "rules", record: seeded }))
        }).pipe(
          Effect.catchTag(
            "UniqueViolation",
            () => new Conflict({ detail: `you already have a VPC named '${input.name}'` })
          )
        )
        const state = yield* applier.apply(caller.tenant_id, vpc.id)
        return toVpc({ ...vpc, ...state })
      })

      const remove = Effect.fn("Vpcs.delete")(function*(caller: TenantPrincipal, id: VpcId) {
        yield* owned(caller, id)
        // The cluster first: if it cannot delete, nothing is deleted and the caller may retry.
        yield* orchestrator.deleteVpc(id).pipe(
          Effect.mapError((e) =>
            new ServiceUnavailable({
              detail: `the cluster could not delete the VPC (${e.message}); nothing was deleted`
            })
          )
        )
        const state = yield* stateOf(caller)
        const referencing = state.rulesNaming(id)
        // Rules elsewhere that name this VPC leave enforcement with it: their verdicts move.
        const violations = violationsAfter(
          state,
          {
            vpcs: state.vpcs.filter((v) => v.id !== id),
            subnets: state.subnets.filter((s) => s.vpc_id !== id),
            pods: state.pods,
            peeringCidr: yield* applier.peeringCidr
          },
          referencing.map((r) => r.vpc_id)
        )
        if (violations.length > 0) return yield* violated(violations)
        // Public hostnames of the VPC's pods go first; the store then drops everything beneath.
        yield* tunnels.withdrawAll(state.tunnels.filter((t) => t.vpc_id === id))
        yield* pipeline.commit(
          caller.tenant_id,
          () => Effect.succeed(removing("vpcs", id))
        ).pipe(
          Effect.catchTag("UniqueViolation", Effect.die)
        )
        // Rules elsewhere that named this VPC are now unresolvable and leave enforcement.
        yield* Effect.forEach(
          new Set(referencing.map((r) => r.vpc_id)),
          (vpcId) => applier.apply(caller.tenant_id, vpcId),
          { discard: true }
        )
      })

      return Vpcs.of({
        create,
        list: (caller) => Effect.map(stateOf(caller), (state) => state.vpcs.map(toVpc)),
        delete: remove,
        owned
      })
    })
  )
}
