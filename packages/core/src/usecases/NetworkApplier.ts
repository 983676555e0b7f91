/**
 * Converging a VPC: the store says what should run, the orchestrator is asked to run it
 * (the VPC, its subnets and its compiled security plan), and the outcome is recorded on the
 * VPC as `applied` / `apply_error`. Saving never depends on this succeeding; the reconciler
 * and the controller converge again every VPC whose last apply failed or drifted.
 *
 * A request does not touch the cluster: it commits, then asks for its VPC to be converged and
 * waits, up to a bound (`wait`), for a convergence that began after its commit. The VPC's
 * convergences run on this replica's work queue (one at a time per VPC, a few VPCs at once),
 * so writes to one VPC that arrive together are applied together: a burst of creates is one
 * apply of the VPC's ACLs, not one per create, and an answer never waits behind a stale apply.
 */
import type { Tracer } from "effect"
import { Context, Deferred, Duration, Effect, Either, Exit, Fiber, Layer, Option } from "effect"
import { Pipeline, updatingLatest } from "../changes/Pipeline.js"
import type { TenantId, VpcId } from "../domain/Ids.js"
import type { ProviderConfigRecord } from "../domain/ProviderConfig.js"
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
import * as Workqueue from "./Workqueue.js"

export interface ApplyState {
  readonly applied: boolean
  readonly apply_error: string | null
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

        /**
         * Who waits for a VPC's next convergence, with when each asked: each is answered by the
         * first convergence begun after it asked.
         */
        const waiters = new Map<
          string,
          Array<{
            readonly outcome: Deferred.Deferred<Converged, ServiceUnavailable>
            readonly asked: number
            /** The asking request's span: the convergence links to each (it is no request's child). */
            readonly span: Option.Option<Tracer.AnySpan>
          }>
        >()
        /** Each running convergence's `said`. */
        const running = new Map<string, Deferred.Deferred<void>>()
        const keyOf = (tenantId: TenantId, vpcId: VpcId) => `${tenantId}/${vpcId}`

        const stillApplying: ApplyState = {
          applied: false,
          apply_error: `still being applied to the cluster after ${Duration.format(wait)}; ` +
            "the VPC's applied says when it is in force"
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
        const recordState = (tenantId: TenantId, vpcId: VpcId, state: ApplyState) =>
          Effect.gen(function*() {
            if (says((yield* readModel.stateOf(tenantId).pipe(storeUnavailable)).vpc(vpcId), state)) return
            yield* pipeline.record(tenantId, (latest) => {
              const vpc = latest.vpc(vpcId)
              return Effect.succeed(
                updatingLatest("vpcs", vpcId, says(vpc, state) ? undefined : vpc, (v) => ({ ...v, ...state }))
              )
            }).pipe(Effect.catchTag("UniqueViolation", Effect.die))
          })

        /**
         * Converges the VPC; `said` is done once the VPC says how it stands (still applying, past
         * the bound, or its outcome), for the requests answered still applying to wait on.
         */
        const applyNow = Effect.fn("NetworkApplier.apply")(function*(
          tenantId: TenantId,
          vpcId: VpcId,
          said: Deferred.Deferred<void>,
          deadline: number
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
          const rules = tenant.rulesOf(vpc.id)
          const plan = Plan.compile(rules.map(RuleSet.fromRecord), vpcContext)
          // An apply past the bound its first request waits is said on the VPC, as the answer says it.
          const marker = yield* Effect.fork(
            Effect.sleep(Math.max(0, deadline - Date.now())).pipe(
              Effect.zipRight(recordState(tenantId, vpcId, stillApplying)),
              Effect.ignore,
              Effect.zipRight(Deferred.succeed(said, undefined))
            )
          )
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
            Effect.either,
            // A defect ends the mark too: it must not land after a later outcome.
            Effect.onExit((exit) => Exit.isFailure(exit) ? Fiber.interrupt(marker) : Effect.void)
          )
          const state: ApplyState = Either.match(outcome, {
            onLeft: (e) => ({ applied: false, apply_error: e.message }),
            onRight: () => ({ applied: true, apply_error: null })
          })
          // The mark, if it was begun, is recorded before the outcome, which replaces it. A change
          // committed meanwhile (its request waits for the next convergence) is not in force yet:
          // the VPC is not said to be applied before that convergence says so.
          yield* Fiber.interrupt(marker)
          if (!(state.applied && waiters.has(keyOf(tenantId, vpcId)))) yield* recordState(tenantId, vpcId, state)
          yield* Metrics.recordApply("vpc", state.applied)
          if (!state.applied) {
            yield* Effect.logWarning("applying a VPC failed; it will be retried", vpc.id, state.apply_error)
          }
          return { state, context: vpcContext } satisfies Converged
        })

        const queue = yield* Workqueue.make<string, never>({
          workers: options.workers ?? 4,
          // A convergence never fails the queue: its outcome is recorded, and retried by the
          // reconciler and the controller, not here.
          baseDelay: Duration.zero,
          maxDelay: Duration.zero,
          process: (key) =>
            Effect.gen(function*() {
              const waiting = waiters.get(key) ?? []
              waiters.delete(key)
              const said = yield* Deferred.make<void>()
              running.set(key, said)
              const [tenantId, vpcId] = key.split("/") as [TenantId, VpcId]
              // Marked when the first of its requests is answered still applying (the controller's
              // own convergences, asked with no bound, at the same bound from their start).
              const deadline = Math.min(Date.now(), ...waiting.map((w) => w.asked)) + Duration.toMillis(wait)
              const links = waiting.flatMap((w): Array<Tracer.SpanLink> =>
                Option.isSome(w.span) ? [{ _tag: "SpanLink", span: w.span.value, attributes: {} }] : []
              )
              const converging = applyNow(tenantId, vpcId, said, deadline).pipe(
                Effect.withSpan("NetworkApplier.converge", {
                  links,
                  attributes: { "tenet.requests": waiting.length }
                })
              )
              const exit = yield* Effect.exit(converging).pipe(
                Effect.ensuring(Effect.zipRight(
                  Deferred.succeed(said, undefined),
                  Effect.sync(() => running.delete(key))
                ))
              )
              yield* Effect.forEach(waiting, (w) => Deferred.done(w.outcome, exit), { discard: true })
            }),
          onFailure: () => Effect.void
        })

        /** Asks for the VPC's next convergence; the deferred is its outcome. */
        const ask = (tenantId: TenantId, vpcId: VpcId) =>
          Effect.gen(function*() {
            const outcome = yield* Deferred.make<Converged, ServiceUnavailable>()
            const span = yield* Effect.option(Effect.currentSpan)
            const key = keyOf(tenantId, vpcId)
            waiters.set(key, [...(waiters.get(key) ?? []), { outcome, asked: Date.now(), span }])
            yield* queue.add(key)
            return outcome
          })

        const applyInContext = (tenantId: TenantId, vpcId: VpcId) =>
          Effect.flatMap(ask(tenantId, vpcId), (outcome) =>
            Deferred.await(outcome).pipe(
              Effect.timeoutOption(wait),
              Effect.flatMap(Option.match({
                onSome: Effect.succeed,
                onNone: () =>
                  Effect.gen(function*() {
                    // Answered once the VPC says so too (its convergence marks it at the same bound;
                    // one still queued, when it begins), or with the outcome if it came meanwhile.
                    const said = running.get(keyOf(tenantId, vpcId))
                    if (said !== undefined) yield* Effect.timeoutOption(Deferred.await(said), wait)
                    const done = yield* Deferred.poll(outcome)
                    if (Option.isSome(done)) return yield* done.value
                    const vpc = (yield* readModel.stateOf(tenantId).pipe(storeUnavailable)).vpc(vpcId)
                    return {
                      state: stillApplying,
                      context: vpc === undefined ? null : yield* context(vpc)
                    } satisfies Converged
                  })
              }))
            )).pipe(Effect.withSpan("NetworkApplier.wait", { attributes: { "tenet.vpc_id": vpcId } }))

        const apply = (tenantId: TenantId, vpcId: VpcId) => Effect.map(applyInContext(tenantId, vpcId), (r) => r.state)

        const converge = (tenantId: TenantId, vpcId: VpcId) =>
          Effect.flatMap(ask(tenantId, vpcId), (outcome) => Effect.map(Deferred.await(outcome), (r) => r.state))

        const reconcile = Effect.gen(function*() {
          const pending = yield* store.vpcs.listUnapplied.pipe(storeUnavailable)
          const results = yield* Effect.forEach(pending, (vpc) => converge(vpc.tenant_id, vpc.id))
          return results.filter((r) => r.applied).length
        }).pipe(Effect.withSpan("NetworkApplier.reconcile"))

        return NetworkApplier.of({ context, peeringCidr, apply, applyInContext, converge, reconcile })
      })
    )
}
