/**
 * The one write path. A use case hands it a decision: a pure function
 * from the tenant's state to the change to make (`Decision`), usually a resource's strategy.
 * The pipeline runs it on the request's state and checks the state it leaves against every
 * invariant across rows (`Invariants`: guardrails, overlaps, the rule limit) on exactly what
 * its writes reach; it then commits the change with the request's audit entry and idempotency
 * key in one store transaction (`Store.commit`), decided on every VPC the decision and the
 * check read and, for a change to the tenant's set of VPCs, tenant-wide guardrails or address
 * sets, on the tenant's scope. The read model makes its next state from the committed writes.
 * A tenant's writes that arrive while one of its commits is under way in this process wait for
 * it, then are decided in turn and committed together (`batch`), each keeping its own answer.
 * A decision the store finds stale is made and checked again from scratch on the store's state; a
 * preview (dry run) is the same decision, not committed. What no tenant's state holds
 * (tenants, the admin, the provider configuration, service tunnels) is written by
 * `commitGlobal`, in one transaction with the request's audit entry.
 */
import {
  Context,
  DateTime,
  Deferred,
  Effect,
  Either,
  Exit,
  FiberId,
  FiberRef,
  FiberRefs,
  Layer,
  Metric,
  MetricBoundaries,
  Option,
  Runtime
} from "effect"
import type { NewAuditEntry } from "../domain/AuditLog.js"
import type { NewEvent } from "../domain/ChangeEvent.js"
import type { Scope } from "../domain/IdempotencyKey.js"
import type { TenantId, VpcId } from "../domain/Ids.js"
import * as Quota from "../domain/Quota.js"
import type { Conflict, GuardrailViolated } from "../Errors.js"
import { NotFound, ServiceUnavailable } from "../Errors.js"
import * as Change from "../kinds/Change.js"
import * as Kind from "../kinds/Kind.js"
import { storeUnavailable } from "../ports/Failures.js"
import type * as Store from "../ports/Store.js"
import { StaleDecision, Store as StoreTag } from "../ports/Store.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import type { TenantState } from "../readmodel/TenantState.js"
import * as Audit from "./Audit.js"
import * as Events from "./Events.js"
import { Idempotency, keyInUse } from "./Idempotency.js"
import * as Invariants from "./Invariants.js"

/** What a decision made on a state is: the writes, what they were decided on, and the answer. */
export interface Decision<A> {
  readonly writes: ReadonlyArray<Change.Write>
  /**
   * The VPCs whose contents the decision read beyond what its writes reach (`Invariants`
   * adds those): it holds only while they are unchanged.
   */
  readonly decidedOn: ReadonlyArray<VpcId>
  /** The resource the change is about, for the audit entry. */
  readonly subject: string
  /**
   * The resources a change of several is about, one audit entry each (a declarative replace:
   * every rule it creates, changes or deletes); `subject` alone when absent.
   */
  readonly subjects?: ReadonlyArray<string>
  /** The resource a create made: the request's idempotency key records it, committed with it. */
  readonly made?: string
  /** Whose key it is: the tenant's by default, the admin's (`IdempotencyKey.ADMIN_SCOPE`) for the admin's writes. */
  readonly scope?: Scope
  readonly result: A
}

/** A row's record, by its part. */
type RecordOf<P extends Change.Part> = Extract<Change.Row, { readonly part: P }>["record"]

/** A create: `row` inserted (what the request made, which its key records), with `more` rows. */
export const creating = <R extends Change.Row>(row: R, ...more: ReadonlyArray<Change.Row>): Decision<R["record"]> => ({
  writes: [row, ...more].map(Change.insert),
  decidedOn: [],
  subject: Change.keyOf(row),
  made: Change.keyOf(row),
  result: row.record
})

/**
 * A delete of one row, with what it cascades to (`vpcId`: the VPC of a row of its contents),
 * decided like a create: `NotFound` (`missing`) when `state` no longer holds the row, so of
 * concurrent deletes one commits and the others, decided again, are not found; refused as
 * `unmoved` answers when the row is no longer the version the caller named (`If-Match`).
 */
export const removing = <P extends Change.Part, E = never>(
  state: TenantState,
  part: P,
  key: string,
  missing: string,
  vpcId?: VpcId,
  unmoved?: (row: RecordOf<P>) => Either.Either<void, E>
): Either.Either<Decision<void>, NotFound | E> => {
  const row = state.row(part, key) as RecordOf<P> | undefined
  if (row === undefined) return Either.left(new NotFound({ detail: missing }))
  return Either.map(
    unmoved === undefined ? Either.void : unmoved(row),
    () => ({ writes: [Change.remove(part, key, vpcId)], decidedOn: [], subject: key, result: undefined })
  )
}

/** The VPC whose version a row's writes are judged by: a VPC's own, a VPC's contents' VPC, else none. */
const versionedBy = (part: Change.Part, key: string, record: object): ReadonlyArray<VpcId> => {
  if (Kind.KINDS[part].versioned) return [key as VpcId]
  const vpc = Kind.KINDS[part].contents ? (record as { readonly vpc_id?: VpcId | null }).vpc_id : undefined
  return vpc === undefined || vpc === null ? [] : [vpc]
}

/**
 * A row as the state holds it now, changed by `change`; nothing written when it is gone (a
 * status recorded after a delete has nothing to record). The whole row is written, so it is
 * written only while the VPC that keeps its version (its own, or the VPC whose contents it is)
 * is at the version it was read at: a status recorded on a state from before a delete's mark
 * (which steps that version) is decided again rather than write the row back to active.
 */

export const updatingLatest = <P extends Change.Part>(
  part: P,
  key: string,
  latest: RecordOf<P> | undefined,
  change: (latest: RecordOf<P>) => RecordOf<P>
): Decision<RecordOf<P> | undefined> => {
  const next = latest === undefined ? undefined : change(latest)
  return {
    writes: next === undefined ? [] : [Change.update({ part, record: next } as Change.Row)],
    decidedOn: next === undefined ? [] : versionedBy(part, key, next),
    subject: key,
    result: next
  }
}

/** A decision committed: its answer, and the tenant's state with it made (when known here). */
export interface Committed<A> {
  readonly result: A
  readonly state: TenantState | undefined
  /** The state the committed decision was made on. */
  readonly before: TenantState
}

/** What refuses a change that would break an invariant (`Invariants.check`). */
export type Refused = Conflict | GuardrailViolated

/** What may refuse a commit beyond its decision's own errors: an invariant, or a uniqueness rule a write breaks. */
export type Refusal = Refused | Store.UniqueViolation

/**
 * The refusals of `tags`: what a caller declares its decision can meet, so its error union has
 * them and no other (one it did not declare is a defect, raised here rather than narrowed by each caller).
 */
export type Answerable<T extends Refusal["_tag"]> = Extract<Refusal, { readonly _tag: T }>

/** The invariants' refusals: what a decision that can move a limit, an overlap or a verdict declares. */
export const INVARIANTS = ["Conflict", "GuardrailViolated"] as const

export interface PipelineShape {
  /**
   * The decision, checked and committed; refused by what `refusals` declares it can meet, which
   * every caller states (`INVARIANTS`, the invariants' refusals; with `"UniqueViolation"` where a
   * write can break a uniqueness rule; fewer where the decision cannot meet them).
   */
  readonly commit: <A, E, T extends Refusal["_tag"]>(
    tenant: TenantId,
    decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
    refusals: ReadonlyArray<T>
  ) => Effect.Effect<Committed<A>, E | Answerable<T> | ServiceUnavailable>
  /**
   * `commit` for a decision whose writes move no invariant (a status recorded, a tunnel, a
   * credential, a domain): checked all the same, and a refusal is a defect, not an answer; one
   * that inserts a row bound by a uniqueness rule declares it.
   */
  readonly record: {
    <A, E, T extends "UniqueViolation" = never>(
      tenant: TenantId,
      decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
      keyed?: undefined,
      refusals?: ReadonlyArray<T>
    ): Effect.Effect<Committed<A>, E | Answerable<T> | ServiceUnavailable>
    /** Keyed like `create`. */
    <A, E, T extends "UniqueViolation" = never>(
      tenant: TenantId,
      decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
      keyed: "keyed",
      refusals?: ReadonlyArray<T>
    ): Effect.Effect<Committed<A>, E | Conflict | Answerable<T> | ServiceUnavailable>
  }
  /**
   * `commit` for a decision that makes something (`made`): the request's idempotency key
   * records it, and another request holding the key is a `Conflict`.
   */
  readonly create: <A, E, T extends Refusal["_tag"]>(
    tenant: TenantId,
    decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
    refusals: ReadonlyArray<T>
  ) => Effect.Effect<Committed<A>, E | Conflict | Answerable<T> | ServiceUnavailable>
  /**
   * A change to what no tenant's state holds (tenants' records, the admin, the provider
   * configuration, service tunnels): `change` runs as one store transaction, committed with
   * the request's audit entry about `subject` of its answer; failing, it writes nothing.
   */
  readonly commitGlobal: <A, E>(
    change: Effect.Effect<A, E>,
    subject: (result: A) => string | null
  ) => Effect.Effect<A, Exclude<E, Store.StoreUnavailable> | ServiceUnavailable>
  /**
   * The decision on the request's state, that state and the one the decision would leave: nothing
   * is written. Refused by the same `Conflict` as its commit would be (`Invariants.conflictOf`);
   * the guardrails it would break are not checked: a preview answers them in its impact.
   */
  readonly preview: <A, E, T extends "Conflict" = "Conflict">(
    tenant: TenantId,
    decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
    refusals?: ReadonlyArray<T>
  ) => Effect.Effect<
    { readonly decision: Decision<A>; readonly state: TenantState; readonly after: TenantState },
    E | Answerable<T> | ServiceUnavailable
  >
}

/** How many times a decision the store found stale is made again before the request gives up (503). */
const STALE_RETRIES = 4

/**
 * The most requests one batch commits: what a transaction of one tenant carries stays small
 * beside the rows it could hold (a topology's thousands), and the answers of a burst are not
 * held behind its slowest decision for long.
 */
const MAX_BATCH = 64

/**
 * Requests per commit of a tenant's writes: 1 for a request committed alone, more for a batch,
 * so an operator sees how much the commits under way gather.
 */
export const batchRequests = Metric.histogram(
  "tenet_write_batch_requests",
  MetricBoundaries.fromIterable([1, 2, 4, 8, 16, 32, MAX_BATCH]),
  "Requests committed together in one commit of a tenant's writes (1: alone)"
)

/**
 * A request's write: its decision; what records its idempotency key (`claim`) and what a key
 * held by another request answers (`claimed`); the refusals its caller declared (`answerable`).
 */
interface Request<A, E, K> {
  readonly decide: (state: TenantState) => Effect.Effect<Decision<A>, E>
  readonly claim: (decision: Decision<A>) => Effect.Effect<Store.KeyClaim | null>
  readonly claimed: Effect.Effect<never, K>
  readonly answerable: ReadonlyArray<Refusal["_tag"]>
}

/**
 * A request waiting for its tenant's batch, its types closed over (a batch holds requests of
 * every kind): its fiber's references (its context), its decision prepared on a batch's state,
 * the request alone (what a batch the store refused falls back to), and where its answer goes.
 */
interface Queued {
  readonly refs: FiberRefs.FiberRefs
  /** Whether the request's caller has gone (interrupted) while it waited. */
  readonly gone: () => boolean
  readonly prepare: (
    state: TenantState,
    peeringCidr: string | null,
    limits: Effect.Effect<Quota.Limits, ServiceUnavailable>
  ) => Effect.Effect<Prepared<unknown>, unknown>
  readonly alone: Effect.Effect<Committed<unknown>, unknown>
  readonly answer: (exit: Exit.Exit<Committed<unknown>, unknown>) => Effect.Effect<void>
}

/** A request's decision made and checked on a state, with everything its commit carries. */
interface Prepared<A> {
  readonly decision: Decision<A>
  /** The state it was decided on. */
  readonly state: TenantState
  /** Its writes, with the version steps the invariants ask for. */
  readonly writes: ReadonlyArray<Change.Write>
  /**
   * `state` with `writes` made, at `state`'s revision: what its commit makes when nothing came
   * between, with what the decision derived of it (a VPC's context, its connections) kept.
   */
  readonly after: TenantState
  readonly decidedOn: ReadonlySet<VpcId>
  /** Whether it was decided on the tenant's scope. */
  readonly scoped: boolean
  readonly audit: ReadonlyArray<NewAuditEntry>
  readonly events: ReadonlyArray<NewEvent>
  readonly claim: Store.KeyClaim | null
  readonly pending: Audit.Pending | undefined
}

/** A refusal the caller declared is its answer; one it did not is a defect. */
const refuseAs = (answerable: ReadonlyArray<Refusal["_tag"]>, refused: Refusal): Effect.Effect<never, Refusal> =>
  answerable.includes(refused._tag) ? Effect.fail(refused) : Effect.die(refused)

/** The rows `writes` write (a version step writes none), as a batch tells its requests' writes apart. */
const rowsOf = (writes: ReadonlyArray<Change.Write>): ReadonlyArray<string> =>
  writes.flatMap((w) =>
    w._tag === "Touch" ? [] : [`${w.part} ${w._tag === "Remove" ? w.key : Kind.keyOf(w as Change.Row)}`]
  )

/**
 * What is the request's own among its fiber's references: setting a request's references sets
 * only those its fiber holds, so each of these is set to the request's value (or its initial
 * one), never left as the batch's previous request had it (a background write after an audited
 * create would otherwise record the create's entry a second time).
 */
const REQUEST_OWN: ReadonlyArray<FiberRef.FiberRef<unknown>> = [
  Audit.CurrentEntry as FiberRef.FiberRef<unknown>,
  FiberRef.currentLogAnnotations as FiberRef.FiberRef<unknown>
]

/**
 * The version steps `writes` make beyond those of `decided`, its first writes (the rest are the
 * invariants' touches): made on the state `decided` made, they leave it where `writes` made at once
 * would, each VPC stepped once and one `writes` inserts not at all (`Change.touchedVpcs`).
 */
const versionSteps = (
  decided: ReadonlyArray<Change.Write>,
  writes: ReadonlyArray<Change.Write>
): ReadonlyArray<Change.Write> => {
  const stepped = new Set<VpcId>(Change.touchedVpcs(decided))
  return [...Change.touchedVpcs(writes)].filter((vpc) => !stepped.has(vpc)).map(Change.touch)
}

/** `self` run as the queued request's own fiber would run it: with its context, its audit entry, its key. */
const inRequest = <A, E>(request: Queued, self: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.flatMap(
    Effect.getFiberRefs,
    (own) =>
      Effect.setFiberRefs(
        REQUEST_OWN.reduce(
          (refs, ref) =>
            FiberRefs.updateAs(refs, {
              fiberId: FiberId.none,
              fiberRef: ref,
              value: FiberRefs.getOrDefault(refs, ref)
            }),
          request.refs
        )
      ).pipe(Effect.zipRight(self), Effect.ensuring(Effect.setFiberRefs(own)))
  )

export class Pipeline extends Context.Tag("@tenet/core/Pipeline")<Pipeline, PipelineShape>() {
  static readonly layer = Layer.effect(
    Pipeline,
    Effect.gen(function*() {
      const store = yield* StoreTag
      const readModel = yield* ReadModel
      const idempotency = yield* Idempotency
      const quotaDefaults = yield* Quota.Defaults
      const runtime = yield* Effect.runtime<never>()
      // Served from the start at 0, as every documented series is.
      yield* Metric.value(batchRequests)

      /** The quotas that hold for `tenant` now (read with the decision: an administrator may have just set them). */
      const limitsOf = (tenant: TenantId) =>
        store.tenants.find(tenant).pipe(
          storeUnavailable,
          Effect.map((record) =>
            Quota.limitsOf(Option.match(record, { onNone: () => Quota.NONE, onSome: (r) => r.quotas }), quotaDefaults)
          )
        )

      /** The provider configuration's peering block, null without one: what the invariants check blocks against. */
      const peeringOf = Effect.map(
        readModel.providerConfig.pipe(storeUnavailable),
        Option.match({ onNone: () => null, onSome: (config) => config.peering_subnet_cidr })
      )

      /**
       * Each tenant with a commit of this process under way, and the requests waiting for it to
       * end: they are then decided and committed together (`batch`), as PostgreSQL's group
       * commit gathers the transactions that arrive while one flushes. A tenant with nothing
       * under way is absent, and a request for it is decided and committed at once, in its own
       * fiber.
       */
      const waiting = new Map<TenantId, Array<Queued>>()

      /**
       * The decision on `state`, checked, with everything its commit carries: run in the
       * request's own context (its audit entry, its idempotency key), so a batch prepares each
       * of its requests as the request itself would.
       */
      const prepare = <A, E, K>(
        tenant: TenantId,
        request: Request<A, E, K>,
        state: TenantState,
        peeringCidr: string | null,
        limits: Effect.Effect<Quota.Limits, ServiceUnavailable>
      ): Effect.Effect<Prepared<A>, E | Refusal | ServiceUnavailable> =>
        Effect.gen(function*() {
          const decision = yield* request.decide(state)
          const after = state.apply(decision.writes, state.revision)
          const reach = Invariants.reachOf(state, after, decision.writes)
          const counted = Change.addsCounted(decision.writes) ? yield* limits : undefined
          yield* Either.match(Invariants.check(state, after, reach, peeringCidr, counted), {
            onLeft: (refused) => refuseAs(request.answerable, refused),
            onRight: () => Effect.void
          })
          const decidedOn = new Set([...decision.decidedOn, ...Invariants.dependenciesOf(state, after, reach)])
          const touches = Invariants.touchesOf(state, after, decision.writes).map(Change.touch)
          const writes = [...decision.writes, ...touches]
          const pending = yield* FiberRef.get(Audit.CurrentEntry)
          if (pending?.subject.from === "change") pending.resourceId = decision.subject
          const at = yield* DateTime.now
          const audit = pending === undefined || pending.recorded || pending.actor === undefined
            ? []
            : decision.subjects === undefined || pending.subject.from !== "change"
            ? [pending.entry("success", at)]
            : decision.subjects.map((id) => pending.entry("success", at, id))
          return {
            decision,
            state,
            writes,
            after: after.apply(versionSteps(decision.writes, writes), state.revision),
            decidedOn,
            scoped: reach.tenant,
            audit,
            events: Events.of(tenant, writes, state),
            claim: yield* request.claim(decision),
            pending
          }
        })

      /** The request's prepared change committed: its entries marked recorded, its state handed over. */
      const recorded = (prepared: Prepared<unknown>) => {
        if (prepared.audit.length > 0) prepared.pending!.recorded = true
      }

      /**
       * One request's write alone, in its own fiber: prepared on the request's state and
       * committed; a decision the store finds stale is made again while what it found changed
       * is held.
       */
      const alone = <A, E, K>(
        tenant: TenantId,
        request: Request<A, E, K>
      ): Effect.Effect<Committed<A>, E | K | Refusal | ServiceUnavailable> => {
        /** Whether this request's commit is the one its tenant's next batch waits for. */
        let turn = false
        /**
         * The tenant's next batch waits for this commit, unless another is already under way: a
         * request still deciding holds no one up (a slow decision delays only its own answer).
         */
        const takeTurn = Effect.sync(() => {
          if (!turn && !waiting.has(tenant)) {
            waiting.set(tenant, [])
            turn = true
          }
        })
        return Effect.gen(function*() {
          const peeringCidr = yield* peeringOf
          const limits = limitsOf(tenant)
          /** The decision on `state`, checked, committed with the request's entry and key. */
          const attempt = (state: TenantState) =>
            Effect.gen(function*() {
              const prepared = yield* prepare(tenant, request, state, peeringCidr, limits)
              yield* takeTurn
              const step = yield* store.commit({
                tenant,
                decidedOn: [...prepared.decidedOn].map((vpc) => ({ vpc, version: state.vpcVersion(vpc) ?? -1 })),
                ...(prepared.scoped ? { scope: state.scopeVersion } : {}),
                writes: prepared.writes,
                events: prepared.events,
                audit: prepared.audit,
                claims: prepared.claim === null ? [] : [prepared.claim]
              }).pipe(
                Effect.catchTag("UniqueViolation", (e) => refuseAs(request.answerable, e)),
                Effect.catchTag("KeyClaimed", () => request.claimed),
                storeUnavailable
              )
              recorded(prepared)
              yield* Metric.update(batchRequests, 1)
              return { prepared, step }
            })
          const isStale = (e: unknown): e is StaleDecision => e instanceof StaleDecision
          /**
           * Decided again on the store's state, read while what it found changed (a VPC, the
           * tenant's scope) is held, so writers racing for it (across processes too) each get
           * through in turn; a decision on several VPCs may find another moved meanwhile (or lose
           * a deadlock to a commit holding one of them), and goes again, `remaining` times more.
           */
          const decidedAgain = (remaining: number) =>
          (
            stale: StaleDecision
          ): Effect.Effect<
            Effect.Effect.Success<ReturnType<typeof attempt>>,
            Exclude<Effect.Effect.Error<ReturnType<typeof attempt>>, StaleDecision> | ServiceUnavailable
          > =>
            remaining === 0
              ? Effect.fail(
                new ServiceUnavailable({
                  detail: `${
                    stale.vpc_id === null ? "the tenant's VPCs, guardrails or address sets" : `VPC ${stale.vpc_id}`
                  } kept changing while this request was decided; retry it`
                })
              )
              : store.transaction(Effect.zipRight(
                // The scope first, as every commit takes it: retries of one tenant go one at a time.
                Effect.zipRight(
                  store.tenants.lockScope(tenant),
                  stale.vpc_id === null ? Effect.void : Effect.asVoid(store.vpcs.lock(stale.vpc_id as VpcId))
                ),
                Effect.flatMap(readModel.refresh(tenant), attempt)
              )).pipe(storeUnavailable, Effect.catchIf(isStale, decidedAgain(remaining - 1)))
          // Read before the commit is under way: a read off a request waits for this process's
          // commits to be handed over, which a commit itself must not.
          const first = yield* readModel.stateOf(tenant).pipe(storeUnavailable)
          return yield* readModel.writing(
            tenant,
            Effect.gen(function*() {
              const { prepared, step } = yield* attempt(first).pipe(
                Effect.catchIf(isStale, decidedAgain(STALE_RETRIES))
              )
              const made = yield* readModel.committed(tenant, prepared.state, prepared.writes, step, prepared.after)
              return { result: prepared.decision.result, state: made, before: prepared.state }
            })
          )
        }).pipe(Effect.ensuring(Effect.suspend(() => turn ? next(tenant) : Effect.void)))
      }

      /** The tenant's write ended: the requests that came meanwhile go next, as one batch. */
      const next = (tenant: TenantId): Effect.Effect<void> =>
        Effect.sync(() => {
          const queued = waiting.get(tenant)
          if (queued === undefined || queued.length === 0) {
            waiting.delete(tenant)
            return
          }
          const taken = queued.splice(0, MAX_BATCH)
          // Forked from the layer's runtime, not the request's: the batch belongs to no one request.
          Runtime.runFork(runtime)(Effect.ensuring(batch(tenant, taken), next(tenant)))
        })

      /**
       * Requests decided one after another, each on the state the one before leaves, and
       * committed in one transaction with all their entries, events and keys. A request its
       * decision or an invariant refuses is answered that, and its neighbours go on. A request
       * that writes a row another of the batch writes, or claims the same key, or removes (which
       * PostgreSQL cannot order within one statement), goes in the next batch. A commit the store
       * refuses (stale, a uniqueness rule, a key held) is made again request by request, so each
       * gets the answer it would have got alone.
       */
      const batch = (tenant: TenantId, requests: ReadonlyArray<Queued>): Effect.Effect<void> =>
        Effect.gen(function*() {
          // Read before the commit is under way, as a request alone reads its state.
          const settled = yield* Effect.flatMap(readModel.latest(tenant).pipe(storeUnavailable), (first) =>
            readModel.writing(
              tenant,
              Effect.gen(function*() {
                const peeringCidr = yield* peeringOf
                const limits = yield* Effect.cached(limitsOf(tenant))
                const joined: Array<{ readonly request: Queued; readonly prepared: Prepared<unknown> }> = []
                const refused: Array<{ readonly request: Queued; readonly exit: Exit.Exit<never, unknown> }> = []
                const written = new Set<string>()
                let state = first
                let index = 0
                for (; index < requests.length; index++) {
                  const request = requests[index]!
                  if (request.gone()) {
                    continue
                  }
                  const exit = yield* inRequest(request, request.prepare(state, peeringCidr, limits)).pipe(
                    Effect.exit
                  )
                  if (Exit.isFailure(exit)) {
                    refused.push({ request, exit: Exit.failCause(exit.cause) })
                    continue
                  }
                  const claims = exit.value.claim === null
                    ? []
                    : [`key ${exit.value.claim.record.scope} ${exit.value.claim.record.key}`]
                  const rows = [...rowsOf(exit.value.writes), ...claims]
                  const removes = exit.value.writes.some((w) =>
                    w._tag === "Remove"
                  )
                  if ((removes && joined.length > 0) || rows.some((row) => written.has(row))) break
                  joined.push({ request, prepared: exit.value })
                  for (const row of rows) written.add(row)
                  state = state.apply(exit.value.writes, state.revision)
                  if (removes) {
                    index++
                    break
                  }
                }
                const later = requests.slice(index)
                if (joined.length === 0) return { later, answered: refused, alone: [] }
                const decidedOn = new Map<VpcId, number>()
                for (const { prepared } of joined) {
                  for (const vpc of prepared.decidedOn) {
                    // A VPC the batch itself made is no one else's to change.
                    const version = first.vpcVersion(vpc)
                    if (version !== undefined) decidedOn.set(vpc, version)
                  }
                }
                const writes = joined.flatMap(({ prepared }) => prepared.writes)
                const step = yield* store.commit({
                  tenant,
                  decidedOn: [...decidedOn].map(([vpc, version]) => ({ vpc, version })),
                  ...(joined.some(({ prepared }) => prepared.scoped) ? { scope: first.scopeVersion } : {}),
                  writes,
                  events: joined.flatMap(({ prepared }) => prepared.events),
                  audit: joined.flatMap(({ prepared }) => prepared.audit),
                  claims: joined.flatMap(({ prepared }) => prepared.claim === null ? [] : [prepared.claim])
                }).pipe(Effect.either)
                // The store failed: the batch may or may not have committed, as a request alone would be
                // answered (503), so is every request of it; made again, a write could be made twice.
                if (Either.isLeft(step) && step.left._tag === "StoreUnavailable") {
                  const unavailable = yield* Effect.flip(storeUnavailable(Effect.fail(step.left)))
                  return {
                    later,
                    alone: [],
                    answered: [...joined, ...refused].map(({ request }) => ({ request, exit: Exit.fail(unavailable) }))
                  }
                }
                if (Either.isLeft(step)) {
                  return {
                    later,
                    answered: [],
                    alone: [...joined.map(({ request }) => request), ...refused.map(({ request }) => request)]
                  }
                }
                yield* Metric.update(batchRequests, joined.length)
                const made = yield* readModel.committed(tenant, first, writes, step.right)
                return {
                  later,
                  alone: [],
                  answered: [
                    ...refused,
                    ...joined.map(({ prepared, request }) => {
                      recorded(prepared)
                      return {
                        request,
                        exit: Exit.succeed({ result: prepared.decision.result, state: made, before: prepared.state })
                      }
                    })
                  ]
                }
              })
            )).pipe(Effect.catchAll((unavailable) =>
              Effect.succeed({
                later: [],
                alone: [],
                answered: requests.map((request) => ({ request, exit: Exit.fail(unavailable) }))
              })
            ))
          for (const { exit, request } of settled.answered) yield* request.answer(exit)
          if (settled.later.length > 0) waiting.get(tenant)?.unshift(...settled.later)
          // Refused by the store as a whole: each request again by itself, in turn, as it would have gone alone.
          for (const request of settled.alone) {
            yield* request.answer(yield* Effect.exit(inRequest(request, request.alone)))
          }
        }).pipe(
          // A defect in the batch's own code answers every request still waiting with it; a batch
          // interrupted (the process stopping) answers them interrupted.
          Effect.catchAllDefect((defect) =>
            Effect.forEach(requests, (request) => request.answer(Exit.die(defect)), { discard: true })
          ),
          Effect.onInterrupt((ids) =>
            Effect.forEach(requests, (request) => request.answer(Exit.interrupt(FiberId.combineAll(ids))), {
              discard: true
            })
          )
        )

      /**
       * `claim` is what records the key; `claimed`, what a key held by another request is;
       * `answerable`, the refusals the caller declared: one it did not is a defect.
       */
      const run = <A, E, K>(
        tenant: TenantId,
        decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
        claim: (decision: Decision<A>) => Effect.Effect<Store.KeyClaim | null>,
        claimed: Effect.Effect<never, K>,
        answerable: ReadonlyArray<Refusal["_tag"]>
      ): Effect.Effect<Committed<A>, E | K | Refusal | ServiceUnavailable> =>
        // Looked up and queued in one step: a batch ending in between would leave the request in a
        // queue no one drains.
        Effect.withFiberRuntime((fiber) => {
          const request: Request<A, E, K> = { decide, claim, claimed, answerable }
          const queued = waiting.get(tenant)
          if (queued === undefined) return alone(tenant, request)
          const done = Deferred.unsafeMake<Committed<A>, E | K | Refusal | ServiceUnavailable>(fiber.id())
          let gone = false
          queued.push({
            refs: fiber.getFiberRefs(),
            gone: () => gone,
            prepare: (state, peeringCidr, limits) => prepare(tenant, request, state, peeringCidr, limits),
            alone: alone(tenant, request),
            // The batch answers what this request's own decision and commit made: its types.
            answer: (exit) => Deferred.done(done, exit as Exit.Exit<Committed<A>, E | K | Refusal | ServiceUnavailable>)
          })
          return Deferred.await(done).pipe(
            Effect.tap(({ state }) => readModel.catchUp(tenant, state)),
            // A request whose caller left before its batch began is not made.
            Effect.onInterrupt(() => Effect.sync(() => gone = true))
          )
        })

      const preview = <A, E>(
        tenant: TenantId,
        decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
        refusals: ReadonlyArray<Refusal["_tag"]> = ["Conflict"]
      ) =>
        Effect.gen(function*() {
          const state = yield* readModel.stateOf(tenant).pipe(storeUnavailable)
          const decision = yield* decide(state)
          const after = state.apply(decision.writes, state.revision)
          const limits = Change.addsCounted(decision.writes) ? yield* limitsOf(tenant) : undefined
          const reach = Invariants.reachOf(state, after, decision.writes)
          const conflict = Invariants.conflictOf(state, after, reach, yield* peeringOf, limits)
          if (conflict !== undefined) return yield* refuseAs(refusals, conflict)
          return { decision, state, after }
        })

      const commitGlobal: PipelineShape["commitGlobal"] = (change, subject) =>
        Effect.flatMap(FiberRef.get(Audit.CurrentEntry), (pending) =>
          store.transaction(Effect.tap(change, (result) => {
            if (pending === undefined || pending.recorded || pending.actor === undefined) return Effect.void
            if (pending.subject.from === "change") pending.resourceId = subject(result)
            return Effect.flatMap(DateTime.now, (at) => store.audit.append(pending.entry("success", at)))
          })).pipe(
            Effect.tap(() => {
              if (pending !== undefined && pending.actor !== undefined) pending.recorded = true
            }),
            Effect.ensuring(readModel.committedGlobal),
            storeUnavailable
          ))

      const unkeyed = Effect.dieMessage("a commit without a key found it held")
      const claimMade = <A>(tenant: TenantId) => (decision: Decision<A>) =>
        decision.made === undefined
          ? Effect.succeed(null)
          : idempotency.claimOf(decision.scope ?? tenant, decision.made)
      const record = <A, E>(
        tenant: TenantId,
        decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
        keyed?: "keyed",
        refusals: ReadonlyArray<Refusal["_tag"]> = []
      ) =>
        keyed === undefined
          ? run(tenant, decide, () => Effect.succeed(null), unkeyed, refusals)
          : run(tenant, decide, claimMade(tenant), Effect.failSync(keyInUse), refusals)

      const commit = <A, E>(
        tenant: TenantId,
        decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
        refusals: ReadonlyArray<Refusal["_tag"]>
      ) => run(tenant, decide, () => Effect.succeed(null), unkeyed, refusals)
      const create = <A, E>(
        tenant: TenantId,
        decide: (state: TenantState) => Effect.Effect<Decision<A>, E>,
        refusals: ReadonlyArray<Refusal["_tag"]>
      ) => run(tenant, decide, claimMade(tenant), Effect.failSync(keyInUse), refusals)

      // Each is typed by the refusals its caller declares: `run` refuses with those alone.
      return Pipeline.of({
        commitGlobal,
        commit: commit as PipelineShape["commit"],
        record: record as PipelineShape["record"],
        create: create as PipelineShape["create"],
        preview: preview as PipelineShape["preview"]
      })
    })
  )
}
