/**
 * The audit trail (`domain/AuditLog.ts`): one entry per request to an endpoint that changes
 * something, written in the store with the change.
 *
 * Whoever serves a request (the server's `RequestContext`) opens a `Pending` entry for it: the
 * action (the contract's endpoint) with the subject its `Audited` annotation declares, the
 * request id and the path's parameters; authentication
 * names the actor. The write path (`changes/Pipeline.ts`) commits the entry with the first
 * change the request makes, naming the resource the change is about: the entry commits if
 * and only if the change does. What the request did not
 * write (a login, a logout, an idempotent replay, a refusal) is appended by the server once
 * the answer is known, when the caller was authenticated: a refusal is recorded with its
 * error; a request refused before its caller was known (no or wrong credentials, an
 * unreadable body) leaves no entry, so no one can fill the trail without credentials.
 */
import { Context, DateTime, Effect, FiberRef, Layer } from "effect"
import { globalValue } from "effect/GlobalValue"
import type { ActorType, AuditFilter, AuditQuery, Subject } from "../domain/AuditLog.js"
import { AuditPage } from "../domain/AuditLog.js"
import type { Principal } from "../domain/Principal.js"
import type { NotFound, ServiceUnavailable } from "../Errors.js"
import { storeUnavailable } from "../ports/Failures.js"
import type { StoreShape, StoreUnavailable } from "../ports/Store.js"
import { Store } from "../ports/Store.js"
import { ownTenant } from "../readmodel/Ownership.js"

export interface Actor {
  readonly type: ActorType
  readonly name: string
  readonly tenant_id: string | null
}

export const actorOf = (principal: Principal): Actor =>
  principal._tag === "Admin"
    ? { type: "admin", name: principal.username, tenant_id: null }
    : { type: "tenant", name: principal.name, tenant_id: principal.tenant_id }

/** The entry a request will leave, filled in as the request goes. */
export class Pending {
  actor: Actor | undefined = undefined
  /** The tag of the error a handler refused the request with. */
  failure: string | undefined = undefined
  /** The resource's id once known: from the path at once, from the change when it commits. */
  resourceId: string | null | undefined
  recorded = false
  /** A dry run: it changes nothing, so it leaves no entry. */
  dismissed = false

  constructor(
    readonly action: string,
    readonly subject: Subject,
    readonly requestId: string,
    readonly params: Readonly<Record<string, string>>
  ) {
    this.resourceId = subject.from === "path"
      ? params[subject.param] ?? null
      : subject.from === "none"
      ? null
      : undefined
  }

  /** The entry, with `outcome` (about `about`, one of several resources the request changed, when given). */
  entry(outcome: string, at: DateTime.Utc, about?: string) {
    const actor = this.actor!
    const resourceId = this.subject.from === "actor"
      ? (actor.tenant_id ?? actor.name)
      : about ?? this.resourceId ?? null
    return {
      at,
      request_id: this.requestId,
      actor_type: actor.type,
      actor: actor.name,
      tenant_id: actor.tenant_id ?? this.params["tenant_id"] ??
        (this.subject.kind === "tenant" ? resourceId : null),
      action: this.action,
      resource_kind: this.subject.kind,
      resource_id: resourceId,
      outcome
    }
  }
}

/** The current request's pending entry; none outside requests that change something. */
export const CurrentEntry = globalValue(
  Symbol.for("@tenet/core/Audit/CurrentEntry"),
  () => FiberRef.unsafeMake<Pending | undefined>(undefined)
)

/**
 * A pending entry for the request to `action`, when the endpoint changes something: when the
 * contract declares its audit subject (`Audited`; `params` read only then).
 */
export const open = (
  action: string,
  subject: Subject | undefined,
  requestId: string,
  params: () => Readonly<Record<string, string>>
): Pending | undefined => subject === undefined ? undefined : new Pending(action, subject, requestId, params())

/** Names who is acting, for the current request's entry (authentication calls this). */
export const noteActor = (principal: Principal) =>
  Effect.map(FiberRef.get(CurrentEntry), (pending) => {
    if (pending !== undefined) pending.actor = actorOf(principal)
  })

/** Names the resource, for a request that did not write it (an idempotent replay). */
export const noteResource = (id: string) =>
  Effect.map(FiberRef.get(CurrentEntry), (pending) => {
    if (pending !== undefined && pending.resourceId === undefined) pending.resourceId = id
  })

/**
 * The current request changed nothing after all (a rule declaration applied again): it leaves
 * no entry. A dry run opens none (the server reads `?dry_run=true` where the contract takes it).
 */
export const dismiss = Effect.map(FiberRef.get(CurrentEntry), (pending) => {
  if (pending !== undefined) pending.dismissed = true
})

/** Names the error a handler refused the request with: the entry's outcome. */
export const noteFailure = (error: unknown) =>
  Effect.map(FiberRef.get(CurrentEntry), (pending) => {
    const tag = (error as { readonly _tag?: unknown } | null)?._tag
    if (pending !== undefined && typeof tag === "string") pending.failure = tag
  })

/**
 * Whether the request's entry is still to be recorded with its answer: there is one, its actor is
 * known, and nothing recorded (or dismissed) it yet.
 */
export const awaitsAnswer = (pending: Pending | undefined): pending is Pending =>
  pending !== undefined && !pending.recorded && !pending.dismissed && pending.actor !== undefined

/**
 * Appends the request's entry with its `outcome` now, outside any change (the request wrote
 * nothing), when it awaits its answer (`awaitsAnswer`).
 */
export const recordAnswer = (
  store: StoreShape,
  pending: Pending | undefined,
  outcome: (pending: Pending) => string
): Effect.Effect<void, StoreUnavailable> =>
  !awaitsAnswer(pending)
    ? Effect.void
    : Effect.flatMap(DateTime.now, (at) =>
      Effect.tap(store.audit.append(pending.entry(outcome(pending), at)), () => {
        pending.recorded = true
      }))

export interface AuditTrailShape {
  /** The whole trail (the admin's), filtered, newest first. */
  readonly list: (query: AuditQuery) => Effect.Effect<AuditPage, ServiceUnavailable>
  /** One tenant's entries: the admin's for any tenant, a tenant's for itself (another's is 404). */
  readonly listForTenant: (
    caller: Principal,
    tenantId: string,
    query: Omit<AuditQuery, "tenant_id">
  ) => Effect.Effect<AuditPage, ServiceUnavailable | NotFound>
}

export class AuditTrail extends Context.Tag("@tenet/core/AuditTrail")<AuditTrail, AuditTrailShape>() {
  static readonly layer = Layer.effect(
    AuditTrail,
    Effect.map(Store, (store) => {
      const page = (filter: AuditFilter) =>
        store.audit.page(filter).pipe(storeUnavailable, Effect.map((p) => AuditPage.make(p)))
      return AuditTrail.of({
        list: (query) => page(query),
        listForTenant: (caller, tenantId, query) =>
          (caller._tag === "Tenant" ? ownTenant(caller, tenantId) : Effect.void).pipe(
            Effect.zipRight(page({ ...query, tenant_id: tenantId }))
          )
      })
    })
  )
}
