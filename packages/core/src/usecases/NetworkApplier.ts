/**
 * Converging a VPC: the store says what should run, the orchestrator is asked to run it
 * (the VPC, its subnets and its compiled security plan), and the outcome is recorded on the
 * VPC as `applied` / `apply_error`. Saving never depends on this succeeding; the reconciler
 * and the controller converge again every VPC whose last apply failed or drifted.
 *
 * A request does not touch the cluster: it commits, then asks for its VPC to be converged and
 * waits, up to a bound (`wait`), for a convergence that began after its commit (`Convergence`:
 * a burst of writes to one VPC is one apply of its ACLs).
 */
import { Context, Duration, Effect, Either, Layer, Option } from "effect"
import { Pipeline, updatingLatest } from "../changes/Pipeline.js"
import type { TenantId, VpcId } from "../domain/Ids.js"
import type { ProviderConfigRecord } from "../domain/ProviderConfig.js"
import type { VpcRecord } from "../domain/Vpc.js"
import type { ServiceUnavailable } from "../Errors.js"
import * as Metrics from "../observability/Metrics.js"
import { storeUnavailable } from "../ports/Failures.js"
import type { SubnetSpec, VpcSpec } from "../ports/Orchestrator.js"
import { Orchestrator } from "../ports/Orchestrator.js"
import { Store } from "../ports/Store.js"
import { connectionsOf, planOf, vpcContextOf } from "../readmodel/Derived.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import type { TenantState } from "../readmodel/TenantState.js"
import type * as Plan from "../rules/Plan.js"
import type * as RuleSet from "../rules/RuleSet.js"
import * as Convergence from "./Convergence.js"
import { ProviderConfigs } from "./ProviderConfigs.js"

export interface ApplyState {
  readonly applied: boolean
  readonly apply_error: string | null
}

/**
 * One write's state over the VPCs it converged: in force when every one is, else each one not
 * yet in force named with why. A write that converged none waits on nothing: it is in force.
 */
export const together = (
  states: ReadonlyArray<{ readonly vpc: string; readonly state: ApplyState }>
): ApplyState => {
  const pending = states.filter(({ state }) => !state.applied)
  return pending.length === 0
    ? { applied: true, apply_error: null }
    : { applied: false, apply_error: pending.map(({ state, vpc }) => `VPC ${vpc}: ${state.apply_error}`).join("; ") }
}

export interface NetworkApplierShape {
  /** What the VPC's rules resolve against: the tenant's VPCs, this VPC's subnets and pods. */
  readonly context: (vpc: VpcRecord) => Effect.Effect<RuleSet.VpcContext, ServiceUnavailable>
  /** The provider configuration's peering block, which every VPC's context includes. */
  readonly peeringCidr: Effect.Effect<string | null, ServiceUnavailable>
  /**
   * A request's convergence: the tenant's VPC, as committed when the convergence begins, brought
   * into force and the outcome recorded on it; answered when in force, or past `wait` as still
   * applying (the convergence goes on and records its outcome).
   */
  readonly apply: (tenantId: TenantId, vpcId: VpcId) => Effect.Effect<ApplyState, ServiceUnavailable>
  /**
   * `apply`, answering also the context the VPC's rules read in (none when the VPC is gone), so
   * that a caller describing them afterwards does not read it all again.
   */
  readonly applyInContext: (
    tenantId: TenantId,
    vpcId: VpcId
  ) => Effect.Effect<Converged, ServiceUnavailable>
  /** `apply`, waiting however long the convergence takes: for the controller and the reconciler. */
  readonly converge: (tenantId: TenantId, vpcId: VpcId) => Effect.Effect<ApplyState, ServiceUnavailable>
  /** Applies every VPC whose last apply failed; returns how many are now applied. */
  readonly reconcile: Effect.Effect<number, ServiceUnavailable>
}

/** A VPC of a tenant. */
interface Owner {
  readonly tenantId: TenantId
  readonly vpcId: VpcId
}

/** A convergence's outcome, and the context the VPC's rules were compiled in (none: the VPC is gone). */
export interface Converged {
  readonly state: ApplyState
  readonly context: RuleSet.VpcContext | null
}

export interface Options {
  /** An apply that takes longer is recorded as failed (and retried later). */
  readonly timeout?: Duration.DurationInput
  /** How long a request waits for its change to be in force before answering it still applying (2 s). */
  readonly wait?: Duration.DurationInput
  /** VPCs converged at once (4). */
  readonly workers?: number
}

export class NetworkApplier extends Context.Tag("@tenet/core/NetworkApplier")<NetworkApplier, NetworkApplierShape>() {
  static readonly layer = (options: Options = {}) =>
    Layer.scoped(
      NetworkApplier,
      Effect.gen(function*() {
        const store = yield* Store
        const orchestrator = yield* Orchestrator
        const configs = yield* ProviderConfigs
        const readModel = yield* ReadModel
        const pipeline = yield* Pipeline
        const timeout = Duration.decode(options.timeout ?? Duration.seconds(10))
        const wait = Duration.decode(options.wait ?? Duration.seconds(2))

        const peeringOf = (config: Option.Option<ProviderConfigRecord>) =>
          Option.match(config, { onNone: () => null, onSome: (c) => c.peering_subnet_cidr })

        const peeringCidr = Effect.map(configs.current, peeringOf)

        const context = (vpc: VpcRecord) =>
          Effect.zipWith(
            configs.current,
            readModel.stateOf(vpc.tenant_id).pipe(storeUnavailable),
            (config, state) => vpcContextOf(state, vpc.id, peeringOf(config))
          )

        const stillApplying: ApplyState = {
          applied: false,
          apply_error: Convergence.stillApplying(wait, "VPC")
        }

        /**
         * Whether the VPC says the state already. A still-applying mark is said by any reason for
         * not being applied (a drift's names who changed what: it is kept).
         */
        const says = (vpc: VpcRecord | undefined, state: ApplyState) =>
          vpc === undefined ||
          (state === stillApplying
            ? !vpc.applied
            : vpc.applied === state.applied && vpc.apply_error === state.apply_error)

        /**
         * Records the state on the VPC when it says otherwise (a drift, or a still-applying mark,
         * included), judged on the state the commit decides on.
         */
        const recordState = (tenantId: TenantId, vpcId: VpcId, state: ApplyState, known?: TenantState) =>
          Effect.gen(function*() {
            const tenant = known ?? (yield* readModel.stateOf(tenantId).pipe(storeUnavailable))
            if (says(tenant.vpc(vpcId), state)) return
            yield* pipeline.record(tenantId, (latest) => {
              const vpc = latest.vpc(vpcId)
              return Effect.succeed(
                updatingLatest("vpcs", vpcId, says(vpc, state) ? undefined : vpc, (v) => ({ ...v, ...state }))
              )
            })
          })

        /** What the cluster is to hold for the VPC as `tenant` has it: none while it is gone or going. */
        const desiredOf = (tenant: TenantState, vpcId: VpcId, config: Option.Option<ProviderConfigRecord>) => {
          const vpc = tenant.vpc(vpcId)
          if (vpc === undefined || vpc.lifecycle === "deleting") return null
          const context = vpcContextOf(tenant, vpc.id, peeringOf(config))
          const links = connectionsOf(tenant).links.get(vpc.id)
          const spec: VpcSpec = {
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
            }),
            peerings: [...context.paths.peers].sort().map((remote) => ({
              remote_vpc_id: remote,
              local_connect_ip: links!.get(remote)!.local,
              remote_connect_ip: links!.get(remote)!.remote,
              remote_blocks: tenant.subnetsOf(remote).map((s) => s.cidr)
            }))
          }
          const subnets = tenant.subnetsOf(vpc.id).map((s): SubnetSpec => ({
            tenant_id: s.tenant_id,
            vpc_id: s.vpc_id,
            subnet_id: s.id,
            name: s.name,
            cidr: s.cidr,
            gateway_ip: s.gateway_ip,
            enable_internet: vpc.enable_internet && Option.isSome(config)
          }))
          return { context, spec, subnets, plan: planOf(tenant, vpc.id, context) }
        }

        /** Each plan's text, written once however many fingerprints read it (plans are kept with their state). */
        const planTexts = new WeakMap<Plan.SecurityPlan, string>()

        /** The fingerprint of what was, or is to be, applied: equal when the cluster is to hold the same. */
        const fingerprintOf = (desired: NonNullable<ReturnType<typeof desiredOf>>) => {
          let plan = planTexts.get(desired.plan)
          if (plan === undefined) {
            plan = JSON.stringify(desired.plan)
            planTexts.set(desired.plan, plan)
          }
          return JSON.stringify([desired.spec, desired.subnets]) + plan
        }

        /**
         * The tenant and provider configuration as committed now, and what the VPC's desired state
         * reads of them: the same source, the same desired state, without compiling it again.
         */
        const committedNow = ({ tenantId }: Owner) =>
          Effect.map(
            readModel.stateAndConfig(tenantId).pipe(storeUnavailable),
            ({ config, state: tenant }) => ({
              tenant,
              config,
              source: JSON.stringify([
                tenant.revision,
                Option.map(config, (c) => [c.external_subnet_gateway, c.peering_subnet_cidr])
              ])
            })
          )

        /** Brings the VPC, as committed now, into force: the VPC, its subnets, its compiled plan. */
        const applyNow = Effect.fn("NetworkApplier.apply")(function*(owner: Owner) {
          const { config, source, tenant } = yield* committedNow(owner)
          const desired = desiredOf(tenant, owner.vpcId, config)
          // A VPC gone or going is nothing to apply: the cluster is letting it go.
          if (desired === null) return null
          const outcome = yield* orchestrator.applyVpc(desired.spec).pipe(
            Effect.zipRight(Effect.forEach(desired.subnets, orchestrator.applySubnet, { discard: true })),
            Effect.zipRight(orchestrator.applySecurityPlan(desired.plan)),
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
          return {
            converged: { state, context: desired.context } satisfies Converged,
            source,
            // Compared only where another replica can supersede the apply.
            fingerprint: () => fingerprintOf(desired)
          }
        })

        type Applied = Effect.Effect.Success<ReturnType<typeof applyNow>>

        /** The tenant each superseded check read, for the outcome's record to judge on without reading it again. */
        const readAfter = new WeakMap<NonNullable<Applied>, TenantState>()

        // Whether the VPC as committed now is to hold other than what was applied. Where this
        // process is the store's only writer, a change committed meanwhile asked for its
        // own convergence, which the record sees (`asked`): no other replica can supersede an apply.
        const superseded = (owner: Owner, applied: Applied) =>
          applied === null || store.soleWriter
            ? Effect.succeed(false)
            : Effect.map(committedNow(owner), ({ config, source, tenant }) => {
              readAfter.set(applied, tenant)
              if (source === applied.source) return false
              const now = desiredOf(tenant, owner.vpcId, config)
              return now !== null && fingerprintOf(now) !== applied.fingerprint()
            })

        /**
         * Records the outcome. A change committed meanwhile (its request waits for the next
         * convergence) is not in force yet: the VPC is not said to be applied before that one says so.
         */
        const record = ({ tenantId, vpcId }: Owner, applied: Applied, asked: boolean) =>
          Effect.gen(function*() {
            if (applied === null) return { state: { applied: true, apply_error: null }, context: null }
            const { state } = applied.converged
            if (!(state.applied && asked)) yield* recordState(tenantId, vpcId, state, readAfter.get(applied))
            yield* Metrics.recordApply("vpc", state.applied)
            if (!state.applied) {
              yield* Effect.logWarning("applying a VPC failed; it will be retried", vpcId, state.apply_error)
            }
            return applied.converged
          })

        const convergence = yield* Convergence.make<Owner, void, Applied, Converged, ServiceUnavailable>({
          name: "NetworkApplier",
          key: ({ tenantId, vpcId }) => `${tenantId}/${vpcId}`,
          attributes: ({ vpcId }) => ({ "tenet.vpc_id": vpcId }),
          workers: options.workers ?? 4,
          wait,
          apply: applyNow,
          superseded,
          record,
          caughtUp: ({ tenantId }) => readModel.catchUp(tenantId),
          markStillApplying: ({ tenantId, vpcId }) => recordState(tenantId, vpcId, stillApplying)
        })

        const applyInContext = (tenantId: TenantId, vpcId: VpcId) =>
          Effect.flatMap(
            convergence.request({ tenantId, vpcId }, undefined),
            Option.match({
              onSome: Effect.succeed,
              onNone: () =>
                Effect.gen(function*() {
                  const vpc = (yield* readModel.stateOf(tenantId).pipe(storeUnavailable)).vpc(vpcId)
                  return {
                    state: stillApplying,
                    context: vpc === undefined ? null : yield* context(vpc)
                  } satisfies Converged
                })
            })
          )

        const apply = (tenantId: TenantId, vpcId: VpcId) => Effect.map(applyInContext(tenantId, vpcId), (r) => r.state)

        const converge = (tenantId: TenantId, vpcId: VpcId) =>
          Effect.map(convergence.converge({ tenantId, vpcId }, undefined), (r) => r.state)

        const reconcile = Effect.gen(function*() {
          const pending = yield* store.vpcs.listUnapplied.pipe(storeUnavailable)
          const results = yield* Effect.forEach(pending, (vpc) => converge(vpc.tenant_id, vpc.id))
          return results.filter((r) => r.applied).length
        }).pipe(Effect.withSpan("NetworkApplier.reconcile"))

        return NetworkApplier.of({ context, peeringCidr, apply, applyInContext, converge, reconcile })
      })
    )
}
