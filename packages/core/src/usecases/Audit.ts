/**
 * The audit trail (`domain/AuditLog.ts`): one entry per request to an endpoint that changes
 * something, written in the store with the change.
 *
 * Whoever serves a request (the server's `RequestContext`) opens a `Pending` entry for it: the
 * action (the contract's endpoint), the request id and the path's parameters; authentication
 * names the actor. The store the use-cases see (`audited`) appends the entry inside the first
 * transaction the request commits, and a single write outside any transaction becomes such a
 * transaction: the entry commits if and only if the change does. What the request did not
 * write (a login, a logout, an idempotent replay, a refusal) is appended by the server once
 * the answer is known, when the caller was authenticated: a refusal is recorded with its
 * error; a request refused before its caller was known (no or wrong credentials, an
 * unreadable body) leaves no entry, so no one can fill the trail without credentials.
 */
import { Context, DateTime, Effect, FiberRef, Layer } from "effect"
import { globalValue } from "effect/GlobalValue"
import type { ActorType, AuditFilter, AuditQuery, ResourceKind } from "../domain/AuditLog.js"
import { AuditPage } from "../domain/AuditLog.js"
import type { Principal } from "../domain/Principal.js"
import type { NotFound, ServiceUnavailable } from "../Errors.js"
import type { StoreShape, StoreUnavailable } from "../ports/Store.js"
import { Store } from "../ports/Store.js"
import { storeUnavailable } from "./Failures.js"
import { ownTenant } from "./Ownership.js"

/** Where an action's resource id comes from. */
type Subject =
  /** A parameter of the request's path. */
  | { readonly kind: ResourceKind; readonly from: "path"; readonly param: string }
  /** The first call to `repository.method` in the change: the record it inserts, or the id it locks. */
  | {
    readonly kind: ResourceKind
    readonly from: "call"
    readonly repository: keyof StoreShape
    readonly method: string
    readonly id: (argument: any) => string // eslint-disable-line @typescript-eslint/no-explicit-any -- a repository's argument
  }
  /** The caller itself (logins, logouts, the admin's rotation). */
  | { readonly kind: ResourceKind; readonly from: "actor" }
  /** Nothing with an id (the provider configuration). */
  | { readonly kind: ResourceKind; readonly from: "none" }

const path = (kind: ResourceKind, param: string): Subject => ({ kind, from: "path", param })
const inserted = (
  kind: ResourceKind,
  repository: keyof StoreShape,
  id: (record: any) => string = (record) => record.id // eslint-disable-line @typescript-eslint/no-explicit-any -- a record
): Subject => ({ kind, from: "call", repository, method: "insert", id })

/**
 * Every endpoint that changes something, by `group.endpoint`, with what it changes. The
 * contract's other POST (`securityRules.evaluate`) only reads. A test holds this table and the
 * contract together.
 */
export const ACTIONS: Readonly<Record<string, Subject>> = {
  "adminIdentity.login": { kind: "admin", from: "actor" },
  "adminIdentity.logout": { kind: "admin", from: "actor" },
  "adminIdentity.rotateToken": { kind: "admin", from: "actor" },
  "tenantIdentity.login": { kind: "tenant", from: "actor" },
  "tenantIdentity.logout": { kind: "tenant", from: "actor" },
  "tenantIdentity.rotateToken": path("tenant", "tenant_id"),
  "tenants.create": inserted("tenant", "tenants"),
  "tenants.delete": path("tenant", "tenant_id"),
  "domains.assign": inserted("domain", "domains", (record) => record.domain),
  "domains.remove": path("domain", "domain"),
  "providerConfig.put": { kind: "provider_config", from: "none" },
  "serviceTunnels.create": inserted("service_tunnel", "serviceTunnels"),
  "serviceTunnels.delete": path("service_tunnel", "service_tunnel_id"),
  "vpcs.create": inserted("vpc", "vpcs"),
  "vpcs.delete": path("vpc", "vpc_id"),
  "subnets.create": inserted("subnet", "subnets"),
  "securityRules.create": inserted("security_rule", "securityRules"),
  "securityRules.update": path("security_rule", "rule_id"),
  "securityRules.delete": path("security_rule", "rule_id"),
  "securityRules.reorder": { kind: "vpc", from: "call", repository: "vpcs", method: "lock", id: (id) => id },
  "pods.create": inserted("pod", "pods"),
  "pods.delete": path("pod", "pod_id"),
  "pods.addReplica": path("pod", "pod_id"),
  "pods.removeReplica": path("pod", "pod_id"),
  "pods.restart": path("pod", "pod_id"),
  "pods.configure": path("pod", "pod_id"),
  "tunnels.createForPod": inserted("tunnel", "tunnels"),
  "tunnels.create": inserted("tunnel", "tunnels"),
  "tunnels.delete": path("tunnel", "tunnel_id"),
  "registryCredentials.create": inserted("registry_credential", "registryCredentials", (record) => record.name),
  "registryCredentials.delete": path("registry_credential", "name"),
  "topology.deploy": path("topology", "tenant_id")
}

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
  /** The resource's id once known: from the path at once, from a call during the change. */
  resourceId: string | null | undefined
  recorded = false

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

  /** The entry, with `outcome`. */
  entry(outcome: string, at: DateTime.Utc) {
    const actor = this.actor!
    const resourceId = this.subject.from === "actor"
      ? (actor.tenant_id ?? actor.name)
      : this.resourceId ?? null
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

/** A pending entry for the request, when `action` changes something (`params` read only then). */
export const open = (
  action: string,
  requestId: string,
  params: () => Readonly<Record<string, string>>
): Pending | undefined => {
  const subject = ACTIONS[action]
  return subject === undefined ? undefined : new Pending(action, subject, requestId, params())
}

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

/** Names the error a handler refused the request with: the entry's outcome. */
export const noteFailure = (error: unknown) =>
  Effect.map(FiberRef.get(CurrentEntry), (pending) => {
    const tag = (error as { readonly _tag?: unknown } | null)?._tag
    if (pending !== undefined && typeof tag === "string") pending.failure = tag
  })

/**
 * Appends the request's entry with its `outcome` now, outside any change (the request wrote
 * nothing): when there is an entry, its actor is known and nothing recorded it yet.
 */
export const recordAnswer = (
  store: StoreShape,
  pending: Pending | undefined,
  outcome: (pending: Pending) => string
): Effect.Effect<void, StoreUnavailable> =>
  pending === undefined || pending.recorded || pending.actor === undefined
    ? Effect.void
    : Effect.flatMap(DateTime.now, (at) =>
      Effect.tap(store.audit.append(pending.entry(outcome(pending), at)), () => {
        pending.recorded = true
      }))

const WRITES = new Set(["insert", "update", "delete", "put", "setToken", "setApplyState", "claim", "purge"])

/** True inside a transaction `audited` opened. */
const inTransaction = globalValue(
  Symbol.for("@tenet/core/Audit/inTransaction"),
  () => FiberRef.unsafeMake(false)
)

/**
 * The store with the current request's entry appended in the first transaction it commits
 * (a lone write outside a transaction runs in one), and the resource's id taken from the
 * call its action names.
 */
export const audited = (self: StoreShape): StoreShape => {
  const transaction: StoreShape["transaction"] = (effect) =>
    Effect.flatMap(FiberRef.get(inTransaction), (inside) => {
      if (inside) return self.transaction(effect)
      return Effect.flatMap(FiberRef.get(CurrentEntry), (pending) => {
        const body = Effect.locally(effect, inTransaction, true)
        if (pending === undefined || pending.recorded || pending.actor === undefined) return self.transaction(body)
        // A retried transaction finds its resource again: a create makes a new id each attempt.
        if (pending.subject.from === "call") pending.resourceId = undefined
        // A change committed through the pipeline inside it appended the entry already.
        return self.transaction(Effect.tap(
          body,
          () =>
            pending.recorded
              ? Effect.void
              : Effect.flatMap(DateTime.now, (at) => self.audit.append(pending.entry("success", at)))
        )).pipe(Effect.tap(() => {
          pending.recorded = true
        }))
      })
    })

  const observe = <R extends object>(name: keyof StoreShape, repository: R): R =>
    Object.fromEntries(
      Object.entries(repository).map(([method, call]) => {
        if (typeof call !== "function") return [method, call]
        const fn = call as (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown, unknown>
        const write = WRITES.has(method)
        return [method, (...args: ReadonlyArray<unknown>) =>
          Effect.flatMap(FiberRef.get(CurrentEntry), (pending) => {
            if (pending !== undefined && pending.resourceId === undefined && pending.subject.from === "call") {
              const subject = pending.subject
              if (subject.repository === name && subject.method === method) pending.resourceId = subject.id(args[0])
            }
            if (!write || pending === undefined || pending.recorded || pending.actor === undefined) return fn(...args)
            return Effect.flatMap(
              FiberRef.get(inTransaction),
              (inside) => inside ? fn(...args) : transaction(Effect.suspend(() => fn(...args)))
            )
          })]
      })
    ) as R

  return {
    ...self,
    transaction,
    tenants: observe("tenants", self.tenants),
    admins: observe("admins", self.admins),
    domains: observe("domains", self.domains),
    providerConfig: observe("providerConfig", self.providerConfig),
    serviceTunnels: observe("serviceTunnels", self.serviceTunnels),
    vpcs: observe("vpcs", self.vpcs),
    subnets: observe("subnets", self.subnets),
    securityRules: observe("securityRules", self.securityRules),
    pods: observe("pods", self.pods),
    tunnels: observe("tunnels", self.tunnels),
    registryCredentials: observe("registryCredentials", self.registryCredentials)
  }
}

/** The Store in context, audited. */
export const layer: Layer.Layer<Store, never, Store> = Layer.effect(Store, Effect.map(Store, audited))

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
