/**
 * The Store port: the desired state, the source of truth. Reads per resource; a tenant's
 * rows are written only by `commit` (one change, one transaction: see `changes/Pipeline.ts`),
 * and what no tenant's state holds (tenants, the admin, the provider configuration, service
 * tunnels) by repository writes inside `transaction`.
 *
 * Uniqueness rules are the store's job (a unique constraint in SQL), so they hold under
 * concurrent requests: `insert` fails with `UniqueViolation` naming the constraint.
 * Deleting a tenant cascades to everything it owns, inside the store.
 *
 * Every store keeps a revision per tenant that changes with each committed change to anything
 * the tenant owns (whoever made it: a request, the reconciler, another process), and one for
 * the provider configuration; `snapshots` reads them with the state they stand for, so the
 * read model (`readmodel/ReadModel.ts`) can serve reads from memory and prove them current.
 */
import type { DateTime } from "effect"
import { Context, Effect, Option, Schema } from "effect"
import type { AdminRecord } from "../domain/Admin.js"
import type { AuditEntry, AuditFilter, NewAuditEntry } from "../domain/AuditLog.js"
import type { NewEvent, StoredEvent } from "../domain/ChangeEvent.js"
import type { DomainRecord } from "../domain/Domain.js"
import type * as Hostname from "../domain/Hostname.js"
import type { IdempotencyKeyRecord, Scope } from "../domain/IdempotencyKey.js"
import type { ServiceTunnelId, TenantId, VpcId } from "../domain/Ids.js"
import type * as LoginThrottle from "../domain/LoginThrottle.js"
import type * as Page from "../domain/Page.js"
import type { PodRecord } from "../domain/Pod.js"
import type { ProviderConfigRecord } from "../domain/ProviderConfig.js"
import type { QuotaOverrides } from "../domain/Quota.js"
import type { ServiceTunnelRecord } from "../domain/ServiceTunnel.js"
import type * as Session from "../domain/Session.js"
import type { SessionRecord } from "../domain/Session.js"
import type { TenantRecord } from "../domain/Tenant.js"
import type { TunnelRecord, TunnelStatus } from "../domain/Tunnel.js"
import type { VpcRecord } from "../domain/Vpc.js"
import type * as Change from "../kinds/Change.js"
import type * as Kind from "../kinds/Kind.js"

/** A uniqueness rule would be broken; `constraint` names it (see `Constraints`). */
export class UniqueViolation extends Schema.TaggedError<UniqueViolation>()("UniqueViolation", {
  constraint: Schema.String
}) {}

/** The store could not be reached or failed; nothing was written. */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  detail: Schema.String
}) {}

/**
 * A commit's decision read a VPC's contents at a version the VPC is no longer at (or the VPC is
 * gone), or (`vpc_id` null) the tenant's scope at a version it is no longer at or a row it
 * removes that is gone already: nothing was written, and the decision must be made again on a
 * newer state.
 */
export class StaleDecision extends Schema.TaggedError<StaleDecision>()("StaleDecision", {
  vpc_id: Schema.NullOr(Schema.String)
}) {}

/** A commit's idempotency key is held by a live record of another request: nothing was written. */
export class KeyClaimed extends Schema.TaggedError<KeyClaimed>()("KeyClaimed", {}) {}

/** The names of the uniqueness rules every Store implements. */
export { Constraints } from "../kinds/Constraints.js"

type Read<A> = Effect.Effect<A, StoreUnavailable>
type Write<A = void> = Effect.Effect<A, StoreUnavailable | UniqueViolation>

export interface AdminRepository {
  readonly find: (username: string) => Read<Option.Option<AdminRecord>>
  readonly findByTokenHash: (tokenHash: string) => Read<Option.Option<AdminRecord>>
  /**
   * Creates or replaces the admin record. Its token's digest is a random token's, which no other
   * holds: a clash would be a defect, not an answer.
   */
  readonly put: (record: AdminRecord) => Read<void>
}

export interface TenantRepository {
  readonly insert: (record: TenantRecord) => Write
  readonly find: (id: TenantId) => Read<Option.Option<TenantRecord>>
  readonly findByName: (name: string) => Read<Option.Option<TenantRecord>>
  readonly findByTokenHash: (tokenHash: string) => Read<Option.Option<TenantRecord>>
  /** All tenants, oldest first. */
  readonly list: Read<ReadonlyArray<TenantRecord>>
  /**
   * Up to `limit + 1` tenants after `after` (`[created_at ms, id]`; from the first without it)
   * in that order, oldest first and ties by id: a page and whether another follows (`Page`).
   */
  readonly page: (after: Page.Key | undefined, limit: number) => Read<ReadonlyArray<TenantRecord>>
  /** Replaces the token; false when the tenant does not exist. */
  readonly setToken: (id: TenantId, tokenHash: string, tokenCiphertext: string) => Read<boolean>
  /** Replaces the tenant's own quotas; the record as it is now, none when the tenant does not exist. */
  readonly setQuotas: (id: TenantId, quotas: QuotaOverrides) => Read<Option.Option<TenantRecord>>
  /**
   * Deletes the tenant and, in the same step, everything it owns (VPCs down, and its
   * idempotency keys): the record it deleted, as it was when deleted (so a transaction can
   * refuse the delete of a version it did not expect); none when absent.
   */
  readonly delete: (id: TenantId) => Read<Option.Option<TenantRecord>>
  /**
   * Holds the tenant's scope (`TenantSnapshot.scopeVersion`) against commits decided on it
   * until the enclosing transaction ends.
   */
  readonly lockScope: (id: TenantId) => Read<void>
}

export interface DomainRepository {
  readonly listByTenant: (tenantId: TenantId) => Read<ReadonlyArray<DomainRecord>>
  readonly findByDomain: (domain: string) => Read<Option.Option<DomainRecord>>
}

export interface ProviderConfigRepository {
  readonly get: Read<Option.Option<ProviderConfigRecord>>
  /** Creates or replaces the one configuration: no uniqueness rule binds it. */
  readonly put: (record: ProviderConfigRecord) => Read<void>
}

export interface ServiceTunnelRepository {
  readonly insert: (record: ServiceTunnelRecord) => Write
  readonly list: Read<ReadonlyArray<ServiceTunnelRecord>>
  readonly find: (id: ServiceTunnelId) => Read<Option.Option<ServiceTunnelRecord>>
  /** Its status, error and target (its hostname is the one it was inserted with). */
  readonly update: (record: ServiceTunnelRecord) => Read<boolean>
  readonly delete: (id: ServiceTunnelId) => Read<boolean>
}

/**
 * The routed hostnames (`domain/Hostname.ts`): a tunnel or service tunnel takes its hostname as
 * it is inserted, in the same write, and gives it back as it is deleted; a hostname held by
 * either is refused to both (`UniqueViolation` of `Constraints.routedHostname`).
 */
export interface HostnameRepository {
  readonly holder: (hostname: string) => Read<Option.Option<Hostname.Holder>>
}

export interface VpcRepository {
  /** VPCs whose last apply failed, for the reconciler. */
  readonly listUnapplied: Read<ReadonlyArray<VpcRecord>>
  /** VPCs marked `deleting`, for the reconciler to finish what a stopped process left. */
  readonly listDeleting: Read<ReadonlyArray<VpcRecord>>
  /**
   * Inside a transaction, holds the VPC against concurrent writers until it ends (a row
   * lock in SQL): a decision `commit` found stale is made again while it is held, so writers
   * racing for one VPC get through in turn. Answers its tenant's revision as the lock's read
   * saw it (none when the VPC is absent).
   */
  readonly lock: (id: VpcId) => Read<Option.Option<Revision>>
}

export interface PodRepository {
  /** Pods whose last apply failed, for the reconciler. */
  readonly listUnapplied: Read<ReadonlyArray<PodRecord>>
  /** Pods marked `deleting`, for the reconciler to finish what a stopped process left. */
  readonly listDeleting: Read<ReadonlyArray<PodRecord>>
}

export interface TunnelRepository {
  /** Tunnels not active at the provider, for the reconciler. */
  readonly listInactive: Read<ReadonlyArray<TunnelRecord>>
  /** Every tenant's tunnels, counted by status (0 for a status none has): for the metrics. */
  readonly countByStatus: Read<Readonly<Record<TunnelStatus, number>>>
}

export interface IdempotencyKeyRepository {
  /** The key's record, expired or not: the caller judges its age. */
  readonly find: (scope: Scope, key: string) => Read<Option.Option<IdempotencyKeyRecord>>
  /**
   * Records the key, replacing a record of it made before `liveSince`; false (and nothing
   * written) when a record made since holds it. Called in the transaction of the write the
   * key names, so the two commit together.
   */
  readonly claim: (record: IdempotencyKeyRecord, liveSince: DateTime.Utc) => Read<boolean>
  /** Forgets every record made before `liveSince`; answers how many. */
  readonly purge: (liveSince: DateTime.Utc) => Read<number>
}

/**
 * Failed-login throttling, shared by every process on the store: the limit is the same whether
 * the guesses go to one replica or to ten (`domain/LoginThrottle.ts` decides). An attempt is
 * counted as it starts, before its password is checked, so concurrent guesses cannot all pass
 * the check; a success takes it back.
 */
export interface LoginAttemptRepository {
  /**
   * Under each key (held against concurrent attempts until it answers): refused while one is
   * locked, nothing recorded; otherwise `attempt` counted at `now` against every key.
   */
  readonly begin: (
    attempt: string,
    keys: ReadonlyArray<LoginThrottle.Keyed>,
    now: number
  ) => Read<LoginThrottle.Begun>
  /** The attempt succeeded: its count taken back, and every count of the keys in `clear`. */
  readonly succeeded: (attempt: string, clear: ReadonlyArray<string>) => Read<void>
  /** Forgets every attempt made before `before` (ms); answers how many. */
  readonly purge: (before: number) => Read<number>
}

/** Sign-in sessions (`domain/Session.ts`), by their token's digest. */
export interface SessionRepository {
  /** Keyed by a random token's digest, which no other session holds: a clash would be a defect. */
  readonly insert: (record: SessionRecord) => Read<void>
  /**
   * The session of this digest live at `now` (ms), with the API token digest of its principal
   * (the tenant's; the admin's), which authenticates it from then on as that token would.
   */
  readonly find: (
    tokenHash: string,
    now: number
  ) => Read<Option.Option<{ readonly session: SessionRecord; readonly principalTokenHash: string }>>
  /** Ends the session; false when there was none. */
  readonly delete: (tokenHash: string) => Read<boolean>
  /** Ends every session of `owner`; answers how many. */
  readonly deleteOf: (owner: Session.Owner) => Read<number>
  /** Forgets the sessions expired before `now` (ms); answers how many. */
  readonly purge: (now: number) => Read<number>
}

/**
 * The change stream's events (`domain/ChangeEvent.ts`): each commit's, appended in its
 * transaction under the next revisions, so the revision order is the order commits became
 * visible, on every replica. Kept for a window (`compact`), then forgotten: a watcher resuming
 * from before what is kept must list again.
 */
export interface EventRepository {
  /**
   * Up to `limit` events after `revision`, oldest first: every tenant's, or `tenant`'s only.
   * With `horizon`, the highest revision forgotten (resuming from before it is impossible), and
   * `latest`, the highest revision given so far (whoever it concerned).
   */
  readonly after: (revision: number, tenant: string | null, limit: number) => Read<{
    readonly events: ReadonlyArray<StoredEvent>
    readonly horizon: number
    readonly latest: number
  }>
  /** Appends events under the next revisions: inside the current transaction, committed with it. */
  readonly append: (events: ReadonlyArray<NewEvent>) => Read<void>
  /** Forgets the events appended before `before` (ms); answers how many. */
  readonly compact: (before: number) => Read<number>
}

/**
 * The audit trail (`domain/AuditLog.ts`): appended in the transaction of the change it
 * records, kept when what it names is deleted (tenants included), read newest first.
 */
export interface AuditRepository {
  readonly append: (entry: NewAuditEntry) => Read<void>
  /** Entries passing `filter` with `seq < before` (all when absent), newest first, at most `limit`. */
  readonly page: (filter: AuditFilter) => Read<{
    readonly entries: ReadonlyArray<AuditEntry>
    readonly next_before: number | null
  }>
}

/**
 * A tenant's (or the provider configuration's) revision: opaque, compared only for equality.
 * Two reads that answer the same revision saw the same state.
 */
export type Revision = string

/** Everything a tenant owns, read at one instant, with the revision that instant had. */
export interface TenantSnapshot {
  readonly revision: Revision
  /**
   * Each kind's rows (`Kind.KINDS`), oldest first; a VPC's rules in creation order (`seq`);
   * guardrails tenant-wide and every VPC's.
   */
  readonly rows: Kind.Rows
  /** Each VPC's version (`kinds/Change.ts`), by id. */
  readonly vpcVersions: Readonly<Record<string, number>>
  /**
   * The version of the tenant's scope: stepped by every commit that adds or removes a VPC,
   * writes a tenant-wide guardrail or writes an address set (`Change.movesScope`).
   */
  readonly scopeVersion: number
}

/** A change to one tenant's rows, with what commits with it (`kinds/Change.ts`). */
export interface Commit {
  readonly tenant: TenantId
  /** The VPCs whose contents the change was decided on, at the versions the deciding state held. */
  readonly decidedOn: ReadonlyArray<{ readonly vpc: VpcId; readonly version: number }>
  /**
   * A change decided on the tenant's scope (its set of VPCs, tenant-wide guardrails and address
   * sets), at the version the deciding state held: committed only while the scope is still at it, held
   * against other such commits until the end. A change that moves the scope
   * (`Change.movesScope`) steps its version.
   */
  readonly scope?: number
  readonly writes: ReadonlyArray<Change.Write>
  /** The request's audit entries: none, one, or one per resource a change of several is about. */
  readonly audit: ReadonlyArray<NewAuditEntry>
  /** The change's events (`changes/Events.ts`), appended under the next revisions. */
  readonly events: ReadonlyArray<NewEvent>
  /**
   * The idempotency keys of the requests the change answers (none, or one per request of a
   * batch: `changes/Pipeline.ts`), each recorded unless a live record holds it (`KeyClaimed`,
   * and nothing written). No two name the same key.
   */
  readonly claims: ReadonlyArray<KeyClaim>
}

/** An idempotency key to record, replacing a record of it made before `liveSince`. */
export interface KeyClaim {
  readonly record: IdempotencyKeyRecord
  readonly liveSince: DateTime.Utc
}

export interface ProviderConfigSnapshot {
  readonly revision: Revision
  readonly config: Option.Option<ProviderConfigRecord>
}

/** A tenant's revision and the provider configuration's, read together. */
export interface Revisions {
  /** None: no such tenant. */
  readonly tenant: Option.Option<Revision>
  readonly providerConfig: Revision
}

/** The tenant behind a token, with the revisions current when it was read. */
export interface Authenticated {
  readonly tenant: TenantRecord
  readonly revision: Revision
  readonly providerConfigRevision: Revision
}

export interface SnapshotRepository {
  /** `tenants.findByTokenHash` and both revisions, in one read. */
  readonly authenticate: (tokenHash: string) => Read<Option.Option<Authenticated>>
  readonly tenant: (id: TenantId) => Read<Option.Option<TenantSnapshot>>
  /**
   * The tenant's revision and the provider configuration's, in one read: whether what is held
   * of them is current, without reading either.
   */
  readonly revisions: (id: TenantId) => Read<Revisions>
  readonly providerConfig: Read<ProviderConfigSnapshot>
}

export interface StoreShape {
  /** Which implementation runs, for the startup line and `/healthz`. */
  readonly backend: string
  /**
   * True when this process is the only writer (the memory store, the embedded database whose
   * data directory it holds): what it has not written has not changed.
   */
  readonly soleWriter: boolean
  /**
   * Runs `self` as one transaction: its writes become visible together when it succeeds and
   * not at all when it fails. Nested calls join the outer transaction.
   */
  readonly transaction: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreUnavailable, R>
  /**
   * Runs `self` only while no one else, in this process or another on the same store, runs
   * work under `key`; answers none without running it otherwise. For work one replica at a
   * time should do, such as a reconciler pass.
   */
  readonly exclusive: <A, E, R>(
    key: string,
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<Option.Option<A>, E | StoreUnavailable, R>
  /**
   * Commits one tenant's change in one transaction: while every VPC in `decidedOn` is still at
   * its version (held against other writers until the end), writes the rows (removals cascade
   * as `Kind.CASCADES` says), steps the versions of the VPCs whose contents they change
   * (`Change.touchedVpcs`), records the keys, appends the audit entries and takes the tenant's
   * revision step, answering it as `snapshots.step` does.
   */
  readonly commit: (commit: Commit) => Effect.Effect<
    { readonly before: Revision; readonly after: Revision },
    StoreUnavailable | UniqueViolation | StaleDecision | KeyClaimed
  >
  /** A cheap round trip, for health checks. */
  readonly ping: Read<void>
  readonly admins: AdminRepository
  readonly tenants: TenantRepository
  readonly domains: DomainRepository
  readonly providerConfig: ProviderConfigRepository
  readonly serviceTunnels: ServiceTunnelRepository
  readonly hostnames: HostnameRepository
  readonly vpcs: VpcRepository
  readonly pods: PodRepository
  readonly tunnels: TunnelRepository
  readonly idempotencyKeys: IdempotencyKeyRepository
  readonly loginAttempts: LoginAttemptRepository
  readonly sessions: SessionRepository
  readonly events: EventRepository
  readonly audit: AuditRepository
  readonly snapshots: SnapshotRepository
}

export class Store extends Context.Tag("@tenet/core/Store")<Store, StoreShape>() {}

/**
 * `exclusive` for a store one process owns: work under a key runs for one holder at a time
 * in this process, and the others skip it.
 */
export const inProcessExclusive = (): StoreShape["exclusive"] => {
  const held = new Set<string>()
  return <A, E, R>(key: string, self: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      if (held.has(key)) return Effect.succeed(Option.none<A>())
      held.add(key)
      return self.pipe(Effect.map(Option.some), Effect.ensuring(Effect.sync(() => held.delete(key))))
    })
}
