/**
 * Converging a VPC: the store says what should run, the orchestrator is asked to run it
 * (the VPC, its subnets and its compiled security plan), and the outcome is recorded on the
 * VPC as `applied` / `apply_error`. Saving never depends on this succeeding; the reconciler
 * calls `apply` again for every VPC whose last apply failed.
 */
import { Context, Duration, Effect, Either, Layer, Option } from "effect"
import { Pipeline, updatingLatest } from "../changes/Pipeline.js"
import type { TenantId, VpcId } from "../domain/Ids.js"
import type { ProviderConfigRecord } from "../domain/ProviderConfig.js"
import type { SecurityRuleRecord } from "../domain/SecurityRule.js"
import type { VpcRecord } from "../domain/Vpc.js"
import type { ServiceUnavailable } from "../Errors.js"
import * as Metrics from "../observability/Metrics.js"
import { Orchestrator } from "../ports/Orchestrator.js"
import { Store } from "../ports/Store.js"
import { vpcContextOf } from "../readmodel/Derived.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import * as Plan from "../rules/Plan.js"
import * as RuleSet from "../rules/RuleSet.js"
import { storeUnavailable } from "./Failures.js"
import { ProviderConfigs } from "./ProviderConfigs.js"

export interface ApplyState {
  readonly applied: boolean
  readonly apply_error: string | null
}

export interface NetworkApplierShape {
  /** What the VPC's rules resolve against: the tenant's VPCs, this VPC's subnets and pods. */
  readonly context: (vpc: VpcRecord) => Effect.Effect<RuleSet.VpcContext, ServiceUnavailable>
  /** The provider configuration's peering block, which every VPC's context includes. */
  readonly peeringCidr: Effect.Effect<string | null, ServiceUnavailable>
  /** Applies the tenant's VPC as stored and records the outcome on it. */
  readonly apply: (tenantId: TenantId, vpcId: VpcId) => Effect.Effect<ApplyState, ServiceUnavailable>
  /**
   * `apply`, answering also the context it applied against (none when the VPC is gone), so
   * that a caller describing the VPC's rules afterwards does not read it all again. A caller
   * that has just written the VPC's rules (and read them, under the VPC's lock) hands them on.
   */
  readonly applyInContext: (
    tenantId: TenantId,
    vpcId: VpcId,
    rules?: ReadonlyArray<SecurityRuleRecord>
  ) => Effect.Effect<{ readonly state: ApplyState; readonly context: RuleSet.VpcContext | null }, ServiceUnavailable>
  /** Applies every VPC whose last apply failed; returns how many are now applied. */
  readonly reconcile: Effect.Effect<number, ServiceUnavailable>
}

export interface Options {
  /** An apply that takes longer is recorded as failed (and retried later). */
  readonly timeout?: Duration.DurationInput
}

export class NetworkApplier extends Context.Tag("@tenet/core/NetworkApplier")<NetworkApplier, NetworkApplierShape>() {
  static readonly layer = (options: Options = {}) =>
    Layer.effect(
      NetworkApplier,
      Effect.gen(function*() {
        const store = yield* Store
        const orchestrator = yield* Orchestrator
        const configs = yield* ProviderConfigs
        const readModel = yield* ReadModel
        const pipeline = yield* Pipeline
        const timeout = Duration.decode(options.timeout ?? Duration.seconds(10))

        const peeringOf = (config: Option.Option<ProviderConfigRecord>) =>
          Option.match(config, { onNone: () => null, onSome: (c) => c.peering_subnet_cidr })

        const peeringCidr = Effect.map(configs.current, peeringOf)

        const context = (vpc: VpcRecord) =>
          Effect.zipWith(
            configs.current,
            readModel.stateOf(vpc.tenant_id).pipe(storeUnavailable),
            (config, state) => vpcContextOf(state, vpc.id, peeringOf(config))
          )

        const applyInContext = Effect.fn("NetworkApplier.apply")(function*(
          tenantId: TenantId,
          vpcId: VpcId,
          given?: ReadonlyArray<SecurityRuleRecord>
        ) {
          const tenant = yield* readModel.stateOf(tenantId).pipe(storeUnavailable)
          const vpc = tenant.vpc(vpcId)
          // A VPC gone or going is nothing to apply: the cluster is letting it go.
          if (vpc === undefined || vpc.lifecycle === "deleting") {
            return { state: { applied: true, apply_error: null }, context: null }
          }
          const config = yield* configs.current
          const vpcContext = vpcContextOf(tenant, vpc.id, peeringOf(config))
          const subnets = tenant.subnetsOf(vpc.id)
          const rules = given ?? tenant.rulesOf(vpc.id)
          const plan = Plan.compile(rules.map(RuleSet.fromRecord), vpcContext)
          const outcome = yield* orchestrator.applyVpc({
            tenant_id: vpc.tenant_id,
            vpc_id: vpc.id,
            name: vpc.name,
            enable_internet: vpc.enable_internet,
            uplink: Option.match(config, {
              onNone: () => null,
              onSome: (c) => ({
                external_gateway: c.external_subnet_gateway,
                peering_subnet_cidr: c.peering_subnet_cidr
              })
            })
          }).pipe(
            Effect.zipRight(Effect.forEach(subnets, (s) =>
              orchestrator.applySubnet({
                tenant_id: s.tenant_id,
                vpc_id: s.vpc_id,
                subnet_id: s.id,
                name: s.name,
                cidr: s.cidr,
                gateway_ip: s.gateway_ip,
                enable_internet: vpc.enable_internet && Option.isSome(config)
              }), { discard: true })),
            Effect.zipRight(orchestrator.applySecurityPlan(plan)),
            Effect.timeoutFail({
              duration: timeout,
              onTimeout: () => ({ message: `the cluster did not answer within ${Duration.format(timeout)}` })
            }),
            Effect.either
          )
          const state: ApplyState = Either.match(outcome, {
            onLeft: (e) => ({ applied: false, apply_error: e.message }),
            onRight: () => ({ applied: true, apply_error: null })
          })
          // Recorded only when it changes: an outcome recorded elsewhere since this request's
          // snapshot is at worst an apply the reconciler repeats.
          if (vpc.applied !== state.applied || vpc.apply_error !== state.apply_error) {
            yield* pipeline.record(
              vpc.tenant_id,
              (now) =>
                Effect.succeed(updatingLatest("vpcs", vpc.id, now.vpc(vpc.id), (latest) => ({ ...latest, ...state })))
            ).pipe(Effect.catchTag("UniqueViolation", Effect.die))
          }
          yield* Metrics.recordApply("vpc", state.applied)
          if (!state.applied) {
            yield* Effect.logWarning("applying a VPC failed; it will be retried", vpc.id, state.apply_error)
          }
          return { state, context: vpcContext }
        })

        const apply = (tenantId: TenantId, vpcId: VpcId) => Effect.map(applyInContext(tenantId, vpcId), (r) => r.state)

        const reconcile = Effect.gen(function*() {
          const pending = yield* store.vpcs.listUnapplied.pipe(storeUnavailable)
          const results = yield* Effect.forEach(pending, (vpc) => apply(vpc.tenant_id, vpc.id))
          return results.filter((r) => r.applied).length
        }).pipe(Effect.withSpan("NetworkApplier.reconcile"))

        return NetworkApplier.of({ context, peeringCidr, apply, applyInContext, reconcile })
      })
    )
}
