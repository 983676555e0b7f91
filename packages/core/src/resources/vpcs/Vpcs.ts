/**
 * VPCs (tenant): create (seeded with the spec's "Allow internal traffic" rule), list,
 * delete (with its subnets, rules, pods and tunnels). Another tenant's VPC is indistinguishable from a
 * missing one.
 */
import { Context, DateTime, Effect, Either, Layer, Option } from "effect"
import type { Decision } from "../../changes/Pipeline.js"
import { creating, INVARIANTS, Pipeline, removing, updatingLatest } from "../../changes/Pipeline.js"
import * as DeleteMark from "../../domain/DeleteMark.js"
import type { TenantId } from "../../domain/Ids.js"
import { randomUuid, SecurityRuleId, VpcId } from "../../domain/Ids.js"
import type { TenantPrincipal } from "../../domain/Principal.js"
import type { SecurityRuleRecord } from "../../domain/SecurityRule.js"
import type { Vpc, VpcCreate, VpcRecord } from "../../domain/Vpc.js"
import { etagOf, toVpc } from "../../domain/Vpc.js"
import { Conflict, NotFound, PreconditionFailed, ServiceUnavailable } from "../../Errors.js"
import type { Forbidden, GuardrailViolated, IdempotencyKeyReused, InternalError, Unauthorized } from "../../Errors.js"
import * as Change from "../../kinds/Change.js"
import { clusterWaited, storeUnavailable } from "../../ports/Failures.js"
import { Orchestrator } from "../../ports/Orchestrator.js"
import { ProcessIdentity } from "../../ports/ProcessIdentity.js"
import { Store } from "../../ports/Store.js"
import { connectionsOf } from "../../readmodel/Derived.js"
import { liveVpc } from "../../readmodel/Ownership.js"
import { ReadModel } from "../../readmodel/ReadModel.js"
import type { TenantState } from "../../readmodel/TenantState.js"
import * as BodyCredentials from "../../usecases/BodyCredentials.js"
import { Identity } from "../../usecases/Identity.js"
import { NetworkApplier } from "../../usecases/NetworkApplier.js"
import { Resources } from "../Resources.js"
import { Tunnels } from "../tunnels/Tunnels.js"

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
  remote_address_set_id: null,
  target_type: "vpc",
  target_subnet_id: null,
  target_pod_ids: null,
  enabled: true,
  created_at: vpc.created_at,
  updated_at: vpc.created_at
})

type Failure = ServiceUnavailable | Unauthorized | Forbidden

/**
 * The VPC as `state` holds it, marked for deletion at `now` by the server `by`: refused when it
 * is not there (or already going), or when `ifMatch` does not name its version.
 */
export const marking = (id: VpcId, now: DateTime.Utc, by: string | null, ifMatch?: string) =>
(
  state: TenantState
): Either.Either<Decision<VpcRecord | undefined>, NotFound | PreconditionFailed> => {
  const vpc = state.vpc(id)
  if (vpc === undefined) return Either.left(new NotFound({ detail: `VPC ${id} not found` }))
  if (vpc.lifecycle !== "active") return Either.left(new NotFound({ detail: `VPC ${id} is being deleted` }))
  return Either.map(
    PreconditionFailed.unmoved(`VPC ${id}`, etagOf(vpc), ifMatch),
    () => {
      const marked = updatingLatest("vpcs", id, vpc, (latest) => ({
        ...latest,
        lifecycle: "deleting" as const,
        deleting_since: now,
        deleting_by: by
      }))
      // The mark steps the VPC's version: what was decided on the VPC before it is stale.
      return { ...marked, writes: [...marked.writes, Change.touch(id)] }
    }
  )
}

export interface VpcsShape {
  readonly create: (
    caller: TenantPrincipal,
    input: VpcCreate
  ) => Effect.Effect<Vpc, Failure | Conflict | IdempotencyKeyReused | GuardrailViolated>
  readonly list: (caller: TenantPrincipal) => Effect.Effect<ReadonlyArray<Vpc>, ServiceUnavailable>
  readonly delete: (
    caller: TenantPrincipal,
    id: VpcId,
    ifMatch?: string
  ) => Effect.Effect<void, NotFound | PreconditionFailed | ServiceUnavailable | InternalError | GuardrailViolated>
  /**
   * Finishes the deletes a stopped process left marked (the cluster, the hostnames, the store):
   * those past their lease, and at once those whose marking server is known to be gone
   * (`ProcessIdentity.gone`); how many it finished, for the reconciler.
   */
  readonly reconcile: Effect.Effect<number, ServiceUnavailable>
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
      const store = yield* Store
      const tunnels = yield* Tunnels
      const resources = yield* Resources
      const pipeline = yield* Pipeline
      const readModel = yield* ReadModel
      const processes = yield* ProcessIdentity

      const stateOf = (caller: TenantPrincipal) => readModel.stateOf(caller.tenant_id).pipe(storeUnavailable)

      const owned = (caller: TenantPrincipal, id: VpcId) =>
        Effect.flatMap(stateOf(caller), (state) => liveVpc(state, id))

      const create = Effect.fn("Vpcs.create")(function*(caller: TenantPrincipal, input: VpcCreate) {
        yield* BodyCredentials.check(identity, caller, input)
        const earlier = yield* resources.replay(caller.tenant_id, "vpcs")
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
          lifecycle: "active",
          deleting_since: null,
          deleting_by: null,
          created_at: yield* DateTime.now
        }
        // The tenant-wide guardrails hold in the new VPC from its first rule: the pipeline checks
        // them on the tenant's scope, so a guardrail added meanwhile is checked against it too.
        yield* pipeline.create(
          caller.tenant_id,
          () => Effect.succeed(creating({ part: "vpcs", record: vpc }, { part: "rules", record: seededRule(vpc) })),
          ["Conflict", "GuardrailViolated", "UniqueViolation"]
        ).pipe(
          Effect.catchTag(
            "UniqueViolation",
            () => new Conflict({ detail: `you already have a VPC named '${input.name}'` })
          )
        )
        const state = yield* applier.apply(caller.tenant_id, vpc.id)
        return toVpc({ ...vpc, ...state })
      })

      /**
       * The mark made at `since` taken back after the cluster failed the delete; nothing written
       * when the VPC holds another mark, or none. The cluster may have removed part of the VPC
       * (its workloads go first) before it failed, so the VPC and its pods are to be applied
       * again: the request applies the VPC at once, the reconciler the pods.
       */
      const unmarking =
        (id: VpcId, since: DateTime.Utc | null) =>
        (state: TenantState): Effect.Effect<Decision<VpcRecord | undefined>> => {
          const vpc = state.vpc(id)
          const mine = vpc?.lifecycle === "deleting" && DeleteMark.same(vpc.deleting_since, since) ? vpc : undefined
          const reapplied = { applied: false, apply_error: DeleteMark.REFUSED } as const
          return Effect.succeed({
            writes: mine === undefined ? [] : [
              Change.update({
                part: "vpcs",
                record: { ...mine, ...reapplied, lifecycle: "active", deleting_since: null, deleting_by: null }
              }),
              ...state.podsOf(id).map((pod) => Change.update({ part: "pods", record: { ...pod, ...reapplied } })),
              Change.touch(id)
            ],
            decidedOn: mine === undefined ? [] : [id],
            subject: id,
            result: mine
          })
        }

      const remove = Effect.fn("Vpcs.delete")(function*(caller: TenantPrincipal, id: VpcId, ifMatch?: string) {
        // The mark is the decision: a VPC being deleted has left enforcement (rules elsewhere that
        // name it match nothing), so the mark is refused when that breaks a guardrail, before
        // the cluster is touched; of concurrent deletes one marks, the others find it gone.
        // A mark adds no rule and no block: no limit or overlap can refuse it.
        const { result, state } = yield* pipeline.commit(
          caller.tenant_id,
          marking(id, yield* DateTime.now, processes.self, ifMatch),
          ["GuardrailViolated"]
        )
        yield* finish(caller.tenant_id, id, { state, since: result?.deleting_since ?? null })
      })

      /**
       * A delete marked: the cluster lets the VPC go, its public hostnames are withdrawn, the
       * store drops it with everything beneath, and the VPCs whose rules named it or that its rules
       * named are applied without it (and without a peering with it). Each step may be repeated: a removal another finisher made is done. A
       * request's delete (`marked`: the state its mark made, and the mark) that the cluster
       * fails, or does not answer within `DeleteMark.CLUSTER_WAIT`, takes its mark back (nothing
       * deleted in the store, the VPC applied again); the reconciler's keeps it and tries again
       * next pass.
       */
      const finish = (
        tenantId: TenantId,
        id: VpcId,
        marked?: { readonly state: TenantState | undefined; readonly since: DateTime.Utc | null }
      ) =>
        Effect.gen(function*() {
          // The VPCs whose rules name this one, those its rules name (either may be peered with
          // it), and their peers (a link may move back into the slot one of its peerings frees).
          const known = marked?.state ?? (yield* readModel.stateOf(tenantId).pipe(storeUnavailable))
          const named = [
            ...known.rulesNaming(id).map((r) => r.vpc_id),
            ...known.rulesOf(id).flatMap((r) =>
              r.remote_vpc_id !== null && r.remote_vpc_id !== id && known.vpc(r.remote_vpc_id) !== undefined
                ? [r.remote_vpc_id]
                : []
            )
          ]
          const peers = connectionsOf(known).peers
          const referencing = new Set(
            [...named, ...named.flatMap((v) => [...(peers.get(v) ?? [])])].filter((v) => v !== id)
          )
          yield* (marked === undefined
            ? orchestrator.deleteVpc(id)
            : clusterWaited("deleteVpc", orchestrator.deleteVpc(id))).pipe(
              Effect.tapError(() =>
                marked === undefined
                  ? Effect.void
                  : pipeline.commit(tenantId, unmarking(id, marked.since), INVARIANTS).pipe(
                    // Back with its peerings: the VPC, and the others that let them go meanwhile.
                    Effect.flatMap(({ result }) =>
                      result === undefined ?
                        Effect.void :
                        Effect.forEach([id, ...referencing], (vpc) => applier.apply(tenantId, vpc), {
                          concurrency: "unbounded",
                          discard: true
                        })
                    ),
                    Effect.ignore
                  )
              ),
              Effect.mapError((e) =>
                new ServiceUnavailable({
                  detail: `the cluster could not delete the VPC (${e.message}); the VPC is kept, and applied again ` +
                    "where the cluster removed part of it"
                })
              )
            )
          const now = yield* readModel.stateOf(tenantId).pipe(storeUnavailable)
          yield* tunnels.withdrawAll(now.tunnels.filter((t) => t.vpc_id === id))
          yield* pipeline.record(tenantId, (state) => removing(state, "vpcs", id, `VPC ${id} not found`)).pipe(
            Effect.catchTag("NotFound", () => Effect.void)
          )
          yield* Effect.forEach(referencing, (vpcId) => applier.apply(tenantId, vpcId), {
            concurrency: "unbounded",
            discard: true
          })
        })

      const reconcile = Effect.gen(function*() {
        const now = yield* DateTime.now
        // A mark within its lease is its request's to finish, unless the server that made it is gone.
        const marked = (yield* store.vpcs.listDeleting.pipe(storeUnavailable)).filter((vpc) =>
          DeleteMark.abandoned(vpc.deleting_since, now) || (vpc.deleting_by !== null && processes.gone(vpc.deleting_by))
        )
        const finished = yield* Effect.forEach(
          marked,
          (vpc) =>
            finish(vpc.tenant_id, vpc.id).pipe(
              Effect.as(1),
              Effect.catchAll((e) =>
                Effect.as(Effect.logWarning("finishing a VPC's delete failed; next pass retries", vpc.id, e), 0)
              )
            )
        )
        return finished.reduce((a, b) => a + b, 0)
      }).pipe(Effect.withSpan("Vpcs.reconcile"))

      return Vpcs.of({
        create,
        list: (caller) => Effect.map(stateOf(caller), (state) => state.vpcs.map(toVpc)),
        delete: remove,
        owned,
        reconcile
      })
    })
  )
}
