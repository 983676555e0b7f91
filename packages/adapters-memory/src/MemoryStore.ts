/**
 * The Store in memory. State is one immutable value of persistent maps, so a transaction
 * works on a private draft and commits by swapping it in: readers never see half a
 * transaction, and a failed one leaves nothing behind. Writers are serialized, which is what
 * makes the uniqueness checks below hold under concurrent requests.
 */
import type {
  Admin,
  ChangeEvent,
  Hostname,
  IdempotencyKey,
  Ids,
  ProviderConfig,
  ServiceTunnel,
  Session,
  Tenant
} from "@tenet/core"
import { AuditLog, Change, Common, Kind, LoginThrottle, Page, Store, Table } from "@tenet/core"
import { Chunk, Clock, Context, DateTime, Effect, Either, FiberRef, HashMap, Layer, Option, Ref } from "effect"

/**
 * A kind's table: keyed within the store (`tenant/name` where the kind is named within its
 * tenant, `Kind.keyField`), indexed by tenant, by each owner field (what a removal cascades along)
 * and by each uniqueness rule (`Kind.storage.unique`, by the constraint's name).
 */
type Rows = Table.Table<Kind.AnyRecord, string>

/** A row's key in its table, from the key a change names it by within its tenant. */
const storedKey = (kind: Kind.Any, tenant: string, key: string) => kind.keyField === "name" ? `${tenant}/${key}` : key

const tenantOf = (record: Kind.AnyRecord) => record.tenant_id as string

/**
 * What the kind-specific repositories look rows up by (`vpcs.listUnapplied`, `pods.listDeleting`,
 * `tunnels.listInactive`): each an index, so a reconciler's poll costs what it finds.
 */
const LOOKUPS: { readonly [P in Kind.Part]?: Readonly<Record<string, (record: Kind.RecordOf<P>) => string | null>> } = {
  vpcs: { unapplied: (v) => v.applied ? null : "", deleting: (v) => v.lifecycle === "deleting" ? "" : null },
  pods: { unapplied: (p) => p.applied ? null : "", deleting: (p) => p.lifecycle === "deleting" ? "" : null },
  tunnels: { inactive: (t) => t.status === "active" ? null : "" }
}

const definitionOf = (part: string, kind: Kind.Any): Table.Definition<Kind.AnyRecord, string> =>
  Table.define<Kind.AnyRecord, string>({
    key: (record) => storedKey(kind, tenantOf(record), Kind.keyIn(kind, record)),
    indexes: {
      tenant: tenantOf,
      ...Object.fromEntries(
        kind.owners.map((
          field
        ) => [field, (record: Kind.AnyRecord) => (record[field] ?? null) as string | null])
      ),
      ...Object.fromEntries(kind.storage.unique.map(({ constraint, key }) => [constraint, key])),
      ...(LOOKUPS as Readonly<Record<string, Readonly<Record<string, (record: Kind.AnyRecord) => string | null>>>>)[
        part
      ]
    },
    retained: ["tenant"]
  })

/** A scope (a tenant id or `admin`) never holds a slash, so `scope/key` names one key. */
const idempotencyKeyOf = (scope: string, key: string) => `${scope}/${key}`

const IdempotencyKeys = Table.define<IdempotencyKey.IdempotencyKeyRecord, "scope">({
  key: (k) => idempotencyKeyOf(k.scope, k.key),
  indexes: { scope: (k) => k.scope }
})

/** The tenant's scope version (`TenantSnapshot.scopeVersion`). */
const scopeOf = (s: State, tenant: string): number => Option.getOrElse(HashMap.get(s.scopeVersions, tenant), () => 0)

interface State {
  readonly admins: HashMap.HashMap<string, Admin.AdminRecord>
  readonly adminByToken: HashMap.HashMap<string, string>
  readonly tenants: HashMap.HashMap<Ids.TenantId, Tenant.TenantRecord>
  readonly tenantByName: HashMap.HashMap<string, Ids.TenantId>
  readonly tenantByToken: HashMap.HashMap<string, Ids.TenantId>
  readonly providerConfig: Option.Option<ProviderConfig.ProviderConfigRecord>
  readonly serviceTunnels: HashMap.HashMap<Ids.ServiceTunnelId, ServiceTunnel.ServiceTunnelRecord>
  /** Each kind's rows, by part (the store's registry). */
  readonly rows: Readonly<Record<string, Rows>>
  readonly idempotencyKeys: Table.Table<IdempotencyKey.IdempotencyKeyRecord, "scope">
  /** The change stream's events, oldest first, with when each was appended (ms). */
  readonly events: Chunk.Chunk<ChangeEvent.StoredEvent & { readonly at: number }>
  /** The highest revision given to an event, and the highest forgotten. */
  readonly eventLatest: number
  readonly eventHorizon: number
  /** Sign-in sessions, by their token's digest. */
  readonly sessions: HashMap.HashMap<string, Session.SessionRecord>
  /** Login attempts counted, by throttling key, oldest first. */
  readonly loginAttempts: HashMap.HashMap<string, ReadonlyArray<{ readonly at: number; readonly attempt: string }>>
  /** Insertion order of every record, breaking ties between equal creation times. */
  readonly order: HashMap.HashMap<string, number>
  readonly nextOrder: number
  /** The audit trail, oldest first: its seq is its position plus one. */
  readonly audit: Chunk.Chunk<AuditLog.AuditEntry>
  /** Each VPC's version (`Change`). */
  readonly vpcVersions: HashMap.HashMap<string, number>
  /** Each tenant's scope version (`TenantSnapshot.scopeVersion`); absent: 0. */
  readonly scopeVersions: HashMap.HashMap<string, number>
}

const emptyState = (definitions: Readonly<Record<string, Table.Definition<Kind.AnyRecord, string>>>): State => ({
  admins: HashMap.empty(),
  adminByToken: HashMap.empty(),
  tenants: HashMap.empty(),
  tenantByName: HashMap.empty(),
  tenantByToken: HashMap.empty(),
  providerConfig: Option.none(),
  serviceTunnels: HashMap.empty(),
  rows: Object.fromEntries(Object.entries(definitions).map(([part, definition]) => [part, Table.empty(definition)])),
  idempotencyKeys: Table.empty(IdempotencyKeys),
  sessions: HashMap.empty(),
  loginAttempts: HashMap.empty(),
  events: Chunk.empty(),
  eventLatest: 0,
  eventHorizon: 0,
  order: HashMap.empty(),
  nextOrder: 0,
  audit: Chunk.empty(),
  vpcVersions: HashMap.empty(),
  scopeVersions: HashMap.empty()
})

/** Switches for tests: make the store fail as a database that went away would. */
export class StoreSwitches extends Context.Tag("@tenet/adapters-memory/StoreSwitches")<StoreSwitches, {
  /** While false, every call fails with `StoreUnavailable` and nothing changes. */
  readonly setAvailable: (available: boolean) => Effect.Effect<void>
}>() {}

/** Records under `key` as inserted now. */
const inserted = (s: State, key: string): State => ({
  ...s,
  order: HashMap.set(s.order, key, s.nextOrder),
  nextOrder: s.nextOrder + 1
})

const violation = (constraint: string) => new Store.UniqueViolation({ constraint })

/** What refuses a commit. */
type Refused = Store.StaleDecision | Store.KeyClaimed | Store.UniqueViolation

/** The state with an audit entry appended: its seq is its position. */
const withAudit = (s: State, entry: AuditLog.NewAuditEntry): State => ({
  ...s,
  audit: Chunk.append(s.audit, AuditLog.AuditEntry.make({ seq: Chunk.size(s.audit) + 1, ...entry }, Common.TRUSTED))
})

/** The state with events appended at `at` (ms), numbered on from the latest. */
const withEvents = (s: State, appended: ReadonlyArray<ChangeEvent.NewEvent>, at: number): State => ({
  ...s,
  events: Chunk.appendAll(
    s.events,
    Chunk.fromIterable(appended.map((event, i) => ({ ...event, revision: s.eventLatest + i + 1, at })))
  ),
  eventLatest: s.eventLatest + appended.length
})

/** The state with the key claimed, or none while a claim of it made since `liveSince` holds it. */
const claiming = (
  s: State,
  record: IdempotencyKey.IdempotencyKeyRecord,
  liveSince: DateTime.Utc
): State | undefined => {
  const held = Table.get(s.idempotencyKeys, idempotencyKeyOf(record.scope, record.key))
  return Option.isSome(held) && DateTime.greaterThanOrEqualTo(held.value.created_at, liveSince)
    ? undefined
    : { ...s, idempotencyKeys: Table.put(IdempotencyKeys, s.idempotencyKeys, record) }
}

type Created = { readonly created_at: { readonly epochMillis: number } }

/**
 * Oldest first; records created in the same millisecond keep the order they were inserted in.
 * A record's insertion number never changes, so it is looked up once per record object (in
 * `orders`) rather than hashed again at every list.
 */
const inCreationOrder = (orders: WeakMap<object, number>) =>
<A extends Created>(
  s: State,
  records: ReadonlyArray<A>,
  /** The key the record was inserted under (`inserted`). */
  keyOf: (record: A) => string
) =>
  records
    .map((record) => {
      let order = orders.get(record)
      if (order === undefined) {
        order = Option.getOrElse(HashMap.get(s.order, keyOf(record)), () => 0)
        orders.set(record, order)
      }
      return { record, at: record.created_at.epochMillis, order }
    })
    .sort((a, b) => a.at - b.at || a.order - b.order)
    .map(({ record }) => record)

/**
 * Revisions from identities: a tenant's rows live in one persistent index entry per table,
 * replaced by any change to them and by nothing else (an emptied entry stays, as a new empty
 * one: `retained`), so the entries' identities (numbered here, never reused) name the
 * tenant's state exactly, and a revision never comes back; likewise the provider configuration.
 */
const revisionsOf = () => {
  const numbers = new WeakMap<object, number>()
  let next = 1
  const numberOf = (entry: object | undefined) => {
    if (entry === undefined) return 0
    let n = numbers.get(entry)
    if (n === undefined) {
      n = next++
      numbers.set(entry, n)
    }
    return n
  }
  return {
    tenant: (s: State, id: string): Store.Revision =>
      Object.values(s.rows).map((rows) => numberOf(Table.entry(rows, "tenant", id))).join("."),
    providerConfig: (s: State): Store.Revision => String(numberOf(s.providerConfig))
  }
}

/**
 * The in-memory Store over `registry`: `Kind.KINDS`, or more kinds (a test's), each kept as its
 * entry says with no code of its own here.
 */
export const makeWith = (registry: Kind.Registry) =>
  Effect.gen(function*() {
    const definitions = Object.fromEntries(
      Object.entries(registry).map(([part, kind]) => [part, definitionOf(part, kind)])
    )
    const cascades = Kind.cascadesIn(registry)
    const ordered = inCreationOrder(new WeakMap())
    const revisions = revisionsOf()
    const committed = yield* Ref.make(emptyState(definitions))
    const writer = yield* Effect.makeSemaphore(1)
    const draft = FiberRef.unsafeMake<Option.Option<Ref.Ref<State>>>(Option.none())
    let available = true

    const unavailable = new Store.StoreUnavailable({ detail: "the in-memory store was switched off" })
    const guard = Effect.suspend(() => available ? Effect.void : Effect.fail(unavailable))

    const transaction = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Store.StoreUnavailable, R> =>
      Effect.flatMap(FiberRef.get(draft), (current) =>
        Option.isSome(current)
          ? self
          : guard.pipe(
            Effect.zipRight(
              writer.withPermits(1)(
                Effect.gen(function*() {
                  const working = yield* Ref.make(yield* Ref.get(committed))
                  const result = yield* Effect.locally(self, draft, Option.some(working))
                  yield* Ref.set(committed, yield* Ref.get(working))
                  return result
                })
              )
            )
          ))

    const read = <A>(f: (state: State) => A): Effect.Effect<A, Store.StoreUnavailable> =>
      guard.pipe(
        Effect.zipRight(FiberRef.get(draft)),
        Effect.flatMap((current) => Ref.get(Option.getOrElse(current, () => committed))),
        Effect.map(f)
      )

    /** `f` on the state in `ref`, whose next state it sets when `f` succeeds. */
    const writeOn = <A, E>(ref: Ref.Ref<State>, f: (state: State) => Effect.Effect<readonly [A, State], E>) =>
      Effect.flatMap(
        Ref.get(ref),
        (state) => Effect.flatMap(f(state), ([result, next]) => Effect.as(Ref.set(ref, next), result))
      )

    /**
     * Applies a change inside the current transaction, or as a transaction of its own: one
     * write needs no draft, as it sets the committed state only when it succeeds.
     */
    const write = <A, E = never>(
      f: (state: State) => Effect.Effect<readonly [A, State], E>
    ): Effect.Effect<A, E | Store.StoreUnavailable> =>
      Effect.zipRight(
        guard,
        Effect.flatMap(FiberRef.get(draft), (current) =>
          Option.isSome(current)
            ? writeOn(current.value, f)
            : writer.withPermits(1)(writeOn(committed, f)))
      )

    const admins: Store.AdminRepository = {
      find: (username) => read((s) => HashMap.get(s.admins, username)),
      findByTokenHash: (hash) =>
        read((s) => Option.flatMap(HashMap.get(s.adminByToken, hash), (name) => HashMap.get(s.admins, name))),
      put: (record) =>
        write((s) => {
          const previous = HashMap.get(s.admins, record.username)
          const withoutOldToken = Option.match(previous, {
            onNone: () => s.adminByToken,
            onSome: (p) => HashMap.remove(s.adminByToken, p.token_hash)
          })
          return Effect.succeed(
            [undefined, {
              ...s,
              admins: HashMap.set(s.admins, record.username, record),
              adminByToken: HashMap.set(withoutOldToken, record.token_hash, record.username)
            }] as const
          )
        })
    }

    /** A part's rows, typed by the part (the registry holds `Kind.KINDS`' parts at least). */
    const rowsOf = <P extends Kind.Part>(s: State, part: P) => s.rows[part] as Table.Table<Kind.RecordOf<P>, string>

    /** A part's rows, oldest first (ties in the order they were inserted in, under their stored key). */
    const orderedRows = <R>(s: State, part: string, rows: ReadonlyArray<R>): Array<R> =>
      ordered(
        s,
        rows as ReadonlyArray<R & Created>,
        definitions[part]!.key as (record: R & Created) => string
      )

    /** The state with one part's table replaced. */
    const withRows = (s: State, part: string, rows: Rows): State => ({ ...s, rows: { ...s.rows, [part]: rows } })

    /** The state without the row stored under `key`, and without what it owns, down (`Kind.cascadesIn`). */
    const removeRow = (s: State, part: string, key: string): State => {
      if (!Table.has(s.rows[part]!, key)) return s
      let next = withRows(s, part, Table.remove(definitions[part]!, s.rows[part]!, key))
      if (registry[part]!.versioned) next = { ...next, vpcVersions: HashMap.remove(next.vpcVersions, key) }
      for (const [child, field] of cascades[part]!) {
        const definition = definitions[child]!
        next = cascades[child]!.length === 0 && !registry[child]!.versioned
          ? withRows(next, child, Table.removeAll(definition, next.rows[child]!, field, key))
          : Table.lookup(next.rows[child]!, field, key).reduce<State>(
            (acc, row) => removeRow(acc, child, definition.key(row)),
            next
          )
      }
      return next
    }

    const removeTenant = (state: State, id: Ids.TenantId): State => {
      const tenant = Option.getOrThrow(HashMap.get(state.tenants, id))
      let s = state
      for (const [part, rows] of Object.entries(state.rows)) {
        if (registry[part]!.versioned) {
          s = {
            ...s,
            vpcVersions: HashMap.removeMany(s.vpcVersions, Table.lookup(rows, "tenant", id).map(definitions[part]!.key))
          }
        }
        s = withRows(s, part, Table.removeAll(definitions[part]!, s.rows[part]!, "tenant", id))
      }
      return {
        ...s,
        tenants: HashMap.remove(s.tenants, id),
        tenantByName: HashMap.remove(s.tenantByName, tenant.name),
        tenantByToken: HashMap.remove(s.tenantByToken, tenant.token_hash),
        idempotencyKeys: Table.removeAll(IdempotencyKeys, s.idempotencyKeys, "scope", id),
        sessions: HashMap.filter(s.sessions, (session) => session.tenant_id !== id),
        scopeVersions: HashMap.remove(s.scopeVersions, id)
      }
    }

    const tenants: Store.TenantRepository = {
      insert: (record) =>
        write((s) =>
          HashMap.has(s.tenantByName, record.name)
            ? Effect.fail(violation(Store.Constraints.tenantName))
            : Effect.succeed(
              [undefined, {
                ...inserted(s, record.id),
                tenants: HashMap.set(s.tenants, record.id, record),
                tenantByName: HashMap.set(s.tenantByName, record.name, record.id),
                tenantByToken: HashMap.set(s.tenantByToken, record.token_hash, record.id)
              }] as const
            )
        ),
      find: (id) => read((s) => HashMap.get(s.tenants, id)),
      findByName: (name) =>
        read((s) => Option.flatMap(HashMap.get(s.tenantByName, name), (id) => HashMap.get(s.tenants, id))),
      findByTokenHash: (hash) =>
        read((s) => Option.flatMap(HashMap.get(s.tenantByToken, hash), (id) => HashMap.get(s.tenants, id))),
      list: read((s) => ordered(s, Array.from(HashMap.values(s.tenants)), (t) => t.id)),
      page: (after, limit) =>
        read((s) => {
          const keyed = Array.from(HashMap.values(s.tenants), (tenant) => ({ tenant, key: Page.byCreation(tenant) }))
            .filter(({ key }) => after === undefined || Page.compare(key, after) > 0)
          keyed.sort((a, b) => Page.compare(a.key, b.key))
          return keyed.slice(0, limit + 1).map(({ tenant }) => tenant)
        }),
      setToken: (id, tokenHash, tokenCiphertext) =>
        write((s) =>
          Effect.succeed(Option.match(HashMap.get(s.tenants, id), {
            onNone: () => [false, s] as const,
            onSome: (tenant) =>
              [true, {
                ...s,
                tenants: HashMap.set(s.tenants, id, {
                  ...tenant,
                  token_hash: tokenHash,
                  token_ciphertext: tokenCiphertext
                }),
                tenantByToken: HashMap.set(HashMap.remove(s.tenantByToken, tenant.token_hash), tokenHash, id)
              }] as const
          }))
        ),
      setQuotas: (id, quotas) =>
        write((s) =>
          Effect.succeed(Option.match(HashMap.get(s.tenants, id), {
            onNone: () => [Option.none(), s] as const,
            onSome: (tenant) => {
              const record = { ...tenant, quotas }
              return [Option.some(record), { ...s, tenants: HashMap.set(s.tenants, id, record) }] as const
            }
          }))
        ),
      delete: (id) =>
        write((s) => {
          const found: Option.Option<Tenant.TenantRecord> = HashMap.get(s.tenants, id)
          return Effect.succeed([found, Option.isSome(found) ? removeTenant(s, id) : s] as const)
        }),
      // Writers are already serialized: a commit decided on the scope compares its version alone.
      lockScope: () => Effect.void
    }

    const domains: Store.DomainRepository = {
      listByTenant: (tenantId) =>
        read((s) => orderedRows(s, "domains", Table.lookup(rowsOf(s, "domains"), "tenant", tenantId))),
      findByDomain: (domain) =>
        read((s) => Option.fromNullable(Table.lookup(rowsOf(s, "domains"), Store.Constraints.domainName, domain)[0]))
    }

    const providerConfig: Store.ProviderConfigRepository = {
      get: read((s) => s.providerConfig),
      put: (record) => write((s) => Effect.succeed([undefined, { ...s, providerConfig: Option.some(record) }] as const))
    }

    /** The one index of routed hostnames: the tunnels' hostname index and the service tunnels. */
    const holderOf = (s: State, hostname: string): Option.Option<Hostname.Holder> => {
      const tunnel = Table.lookup(rowsOf(s, "tunnels"), Store.Constraints.routedHostname, hostname)[0]
      if (tunnel !== undefined) {
        return Option.some({
          kind: "tunnel",
          tenant_id: tunnel.tenant_id,
          tunnel_id: tunnel.id,
          tunnel_name: tunnel.tunnel_name
        })
      }
      const service = Array.from(HashMap.values(s.serviceTunnels)).find((t) => t.hostname === hostname)
      return service === undefined
        ? Option.none()
        : Option.some({ kind: "service", service_tunnel_id: service.id, service: service.service })
    }

    const hostnames: Store.HostnameRepository = {
      holder: (hostname) => read((s) => holderOf(s, hostname))
    }

    const serviceTunnels: Store.ServiceTunnelRepository = {
      insert: (record) =>
        write((s) => {
          const existing = Array.from(HashMap.values(s.serviceTunnels))
          if (existing.some((t) => t.service === record.service)) {
            return Effect.fail(violation(Store.Constraints.serviceTunnelService))
          }
          if (Option.isSome(holderOf(s, record.hostname))) {
            return Effect.fail(violation(Store.Constraints.routedHostname))
          }
          return Effect.succeed(
            [undefined, {
              ...inserted(s, record.id),
              serviceTunnels: HashMap.set(s.serviceTunnels, record.id, record)
            }] as const
          )
        }),
      list: read((s) => ordered(s, Array.from(HashMap.values(s.serviceTunnels)), (t) => t.id)),
      find: (id) => read((s) => HashMap.get(s.serviceTunnels, id)),
      update: (record) =>
        write((s) =>
          Effect.succeed(Option.match(HashMap.get(s.serviceTunnels, record.id), {
            onNone: () => [false, s] as const,
            onSome: (held) =>
              [true, {
                ...s,
                serviceTunnels: HashMap.set(s.serviceTunnels, record.id, { ...record, hostname: held.hostname })
              }] as const
          }))
        ),
      delete: (id) =>
        write((s) =>
          Effect.succeed(
            HashMap.has(s.serviceTunnels, id)
              ? [true, { ...s, serviceTunnels: HashMap.remove(s.serviceTunnels, id) }] as const
              : [false, s] as const
          )
        )
    }

    const vpcs: Store.VpcRepository = {
      listUnapplied: read((s) => orderedRows(s, "vpcs", Table.lookup(rowsOf(s, "vpcs"), "unapplied", ""))),
      listDeleting: read((s) => orderedRows(s, "vpcs", Table.lookup(rowsOf(s, "vpcs"), "deleting", ""))),
      // Writers are already serialized, so holding a VPC is only a matter of it existing.
      lock: (id) =>
        transaction(
          read((s) => Option.map(Table.get(rowsOf(s, "vpcs"), id), (vpc) => revisions.tenant(s, vpc.tenant_id)))
        )
    }

    const pods: Store.PodRepository = {
      listUnapplied: read((s) => orderedRows(s, "pods", Table.lookup(rowsOf(s, "pods"), "unapplied", ""))),
      listDeleting: read((s) => orderedRows(s, "pods", Table.lookup(rowsOf(s, "pods"), "deleting", "")))
    }

    const tunnels: Store.TunnelRepository = {
      listInactive: read((s) => orderedRows(s, "tunnels", Table.lookup(rowsOf(s, "tunnels"), "inactive", ""))),
      countByStatus: read((s) => {
        const counts = { active: 0, pending: 0, error: 0 }
        for (const t of Table.values(rowsOf(s, "tunnels"))) counts[t.status]++
        return counts
      })
    }

    const idempotencyKeys: Store.IdempotencyKeyRepository = {
      find: (scope, key) => read((s) => Table.get(s.idempotencyKeys, idempotencyKeyOf(scope, key))),
      claim: (record, liveSince) =>
        write((s) => {
          const claimed = claiming(s, record, liveSince)
          return Effect.succeed(claimed === undefined ? [false, s] as const : [true, claimed] as const)
        }),
      purge: (liveSince) =>
        write((s) => {
          let kept = s.idempotencyKeys
          let purged = 0
          for (const record of Table.values(s.idempotencyKeys)) {
            if (DateTime.lessThan(record.created_at, liveSince)) {
              kept = Table.remove(IdempotencyKeys, kept, IdempotencyKeys.key(record))
              purged++
            }
          }
          return Effect.succeed([purged, { ...s, idempotencyKeys: kept }] as const)
        })
    }

    const loginAttempts: Store.LoginAttemptRepository = {
      begin: (attempt, keys, now) =>
        write<LoginThrottle.Begun>((s) => {
          const times = (key: string) =>
            Option.match(HashMap.get(s.loginAttempts, key), { onNone: () => [], onSome: (a) => a.map((x) => x.at) })
          const begun = LoginThrottle.begin(times, keys, now)
          if (begun._tag === "Throttled") return Effect.succeed([begun, s] as const)
          const counted = keys.reduce((all, { key, policy }) =>
            HashMap.modifyAt(all, key, (held) =>
              Option.some([
                ...Option.getOrElse(held, () => []).filter((a) => now - a.at < policy.windowMillis),
                { at: now, attempt }
              ])), s.loginAttempts)
          return Effect.succeed([begun, { ...s, loginAttempts: counted }] as const)
        }),
      succeeded: (attempt, clear) =>
        write((s) => {
          const kept = HashMap.map(s.loginAttempts, (attempts) => attempts.filter((a) => a.attempt !== attempt))
          return Effect.succeed([undefined, { ...s, loginAttempts: HashMap.removeMany(kept, clear) }] as const)
        }),
      purge: (before) =>
        write((s) => {
          let purged = 0
          const kept = HashMap.filter(
            HashMap.map(s.loginAttempts, (attempts) => {
              const recent = attempts.filter((a) => a.at >= before)
              purged += attempts.length - recent.length
              return recent
            }),
            (attempts) => attempts.length > 0
          )
          return Effect.succeed([purged, { ...s, loginAttempts: kept }] as const)
        })
    }

    const ownedBy = (owner: Session.Owner) => (session: Session.SessionRecord) =>
      "tenant_id" in owner ? session.tenant_id === owner.tenant_id : session.admin_username === owner.admin_username

    const sessions: Store.SessionRepository = {
      insert: (record) =>
        write((s) =>
          Effect.succeed([undefined, { ...s, sessions: HashMap.set(s.sessions, record.token_hash, record) }] as const)
        ),
      find: (hash, now) =>
        read((s) =>
          Option.flatMap(
            Option.filter(HashMap.get(s.sessions, hash), (session) => session.expires_at.epochMillis > now),
            (session) =>
              Option.map(
                session.tenant_id !== null
                  ? Option.map(HashMap.get(s.tenants, session.tenant_id), (t) => t.token_hash)
                  : Option.map(HashMap.get(s.admins, session.admin_username ?? ""), (a) => a.token_hash),
                (principalTokenHash) => ({ session, principalTokenHash })
              )
          )
        ),
      delete: (hash) =>
        write((s) =>
          Effect.succeed([HashMap.has(s.sessions, hash), { ...s, sessions: HashMap.remove(s.sessions, hash) }] as const)
        ),
      deleteOf: (owner) =>
        write((s) => {
          const kept = HashMap.filter(s.sessions, (session) => !ownedBy(owner)(session))
          return Effect.succeed([HashMap.size(s.sessions) - HashMap.size(kept), { ...s, sessions: kept }] as const)
        }),
      purge: (now) =>
        write((s) => {
          const kept = HashMap.filter(s.sessions, (session) => session.expires_at.epochMillis > now)
          return Effect.succeed([HashMap.size(s.sessions) - HashMap.size(kept), { ...s, sessions: kept }] as const)
        })
    }

    const bySeq = (a: Kind.AnyRecord, b: Kind.AnyRecord) => (a.seq as number) - (b.seq as number)

    const snapshots: Store.SnapshotRepository = {
      authenticate: (hash) =>
        read((s) =>
          Option.flatMap(HashMap.get(s.tenantByToken, hash), (id) => HashMap.get(s.tenants, id)).pipe(
            Option.map((tenant) => ({
              tenant,
              revision: revisions.tenant(s, tenant.id),
              providerConfigRevision: revisions.providerConfig(s)
            }))
          )
        ),
      tenant: (id) =>
        read((s) =>
          HashMap.has(s.tenants, id)
            ? Option.some({
              revision: revisions.tenant(s, id),
              rows: Kind.rowsIn(registry, (part) => {
                const owned = Table.lookup(s.rows[part]!, "tenant", id)
                return registry[part]!.order === "seq"
                  ? owned.sort(bySeq)
                  : orderedRows(s, part, owned)
              }),
              vpcVersions: Object.fromEntries(
                Table.lookup(rowsOf(s, "vpcs"), "tenant", id).map((
                  v
                ) => [v.id, Option.getOrElse(HashMap.get(s.vpcVersions, v.id), () => 0)])
              ),
              scopeVersion: scopeOf(s, id)
            })
            : Option.none()
        ),
      revisions: (id) =>
        read((s) => ({
          tenant: HashMap.has(s.tenants, id) ? Option.some(revisions.tenant(s, id)) : Option.none(),
          providerConfig: revisions.providerConfig(s)
        })),
      providerConfig: read((s) => ({ revision: revisions.providerConfig(s), config: s.providerConfig }))
    }

    const audit: Store.AuditRepository = {
      append: (entry) => write((s) => Effect.succeed([undefined, withAudit(s, entry)] as const)),
      page: (filter) =>
        read((s) => {
          const passes = AuditLog.matches(filter)
          // The newest `limit + 1` that pass: the extra one says whether a next page exists.
          const found: Array<AuditLog.AuditEntry> = []
          for (
            let i = Math.min(Chunk.size(s.audit), (filter.before ?? Number.MAX_SAFE_INTEGER) - 1) - 1;
            i >= 0 && found.length <= filter.limit;
            i--
          ) {
            const entry = Chunk.unsafeGet(s.audit, i)
            if (passes(entry)) found.push(entry)
          }
          const entries = found.slice(0, filter.limit)
          return { entries, next_before: found.length > filter.limit ? entries[entries.length - 1]!.seq : null }
        })
    }

    /** Whether the state holds the row a removal names. */
    const holds = (s: State, tenant: string, part: string, key: string): boolean =>
      Table.has(s.rows[part]!, storedKey(registry[part]!, tenant, key))

    /** The uniqueness rule `record` would break in `part`, if any (a routed hostname is a service tunnel's too). */
    const brokenRule = (
      s: State,
      part: string,
      record: Kind.AnyRecord,
      replacing: boolean
    ): Store.UniqueViolation | undefined => {
      const self = definitions[part]!.key(record)
      for (const { constraint, key } of registry[part]!.storage.unique) {
        const value = key(record)
        if (value === null) continue
        // A row replaced holds its own value; an insert's key held already is a row of that name.
        const holders = Table.lookup(s.rows[part]!, constraint, value)
        if (holders.some((held) => !replacing || definitions[part]!.key(held) !== self)) return violation(constraint)
        // A routed hostname is one index with the service tunnels' (`HostnameRepository`).
        if (
          constraint === Store.Constraints.routedHostname && holders.length === 0 &&
          Option.isSome(holderOf(s, value))
        ) return violation(constraint)
      }
      return undefined
    }

    /** The state with a row inserted, or the uniqueness rule it would break. */
    const insertRow = (s: State, part: string, record: Kind.AnyRecord): State | Store.UniqueViolation => {
      const broken = brokenRule(s, part, record, false)
      if (broken !== undefined) return broken
      const definition = definitions[part]!
      const key = definition.key(record)
      const next = withRows(inserted(s, key), part, Table.put(definition, s.rows[part]!, record))
      return registry[part]!.versioned ? { ...next, vpcVersions: HashMap.set(next.vpcVersions, key, 0) } : next
    }

    /** The state with a row replaced where it holds it, or the uniqueness rule its new values would break. */
    const updateRow = (s: State, part: string, record: Kind.AnyRecord): State | Store.UniqueViolation => {
      const definition = definitions[part]!
      if (!Table.has(s.rows[part]!, definition.key(record))) return s
      return brokenRule(s, part, record, true) ?? withRows(s, part, Table.put(definition, s.rows[part]!, record))
    }

    const events: Store.EventRepository = {
      after: (revision, tenant, limit) =>
        read((s) => {
          const found: Array<ChangeEvent.StoredEvent> = []
          // Revisions here have no gaps: the first after `revision` is at a known index.
          const first = Option.match(Chunk.head(s.events), { onNone: () => 0, onSome: (e) => e.revision })
          for (let i = Math.max(0, revision + 1 - first); i < Chunk.size(s.events) && found.length < limit; i++) {
            const { at: _at, ...event } = Chunk.unsafeGet(s.events, i)
            if (tenant === null || event.tenant_id === tenant) found.push(event)
          }
          return { events: found, horizon: s.eventHorizon, latest: s.eventLatest }
        }),
      append: (appended) =>
        write((s) => Effect.map(Clock.currentTimeMillis, (at) => [undefined, withEvents(s, appended, at)] as const)),
      compact: (before) =>
        write((s) => {
          const [gone, kept] = Chunk.splitWhere(s.events, (event) => event.at >= before)
          const horizon = Chunk.reduce(gone, s.eventHorizon, (h, event) => Math.max(h, event.revision))
          return Effect.succeed([Chunk.size(gone), { ...s, events: kept, eventHorizon: horizon }] as const)
        })
    }

    /**
     * The state a change makes of `s`, or why it is refused: straight code over the state, with
     * no effect per row, so that a commit costs what its writes cost.
     */
    const committing = (s: State, change: Store.Commit, at: number): Either.Either<State, Refused> => {
      const scope = scopeOf(s, change.tenant)
      // A removal of a row already gone was decided on a state before its delete.
      const gone = change.writes.some((w) => w._tag === "Remove" && !holds(s, change.tenant, w.part, w.key))
      if ((change.scope !== undefined && change.scope !== scope) || gone) {
        return Either.left(new Store.StaleDecision({ vpc_id: null }))
      }
      for (const { version, vpc } of change.decidedOn) {
        if (Option.getOrUndefined(HashMap.get(s.vpcVersions, vpc)) !== version) {
          return Either.left(new Store.StaleDecision({ vpc_id: vpc }))
        }
      }
      let next = s
      for (const claim of change.claims) {
        const claimed = claiming(next, claim.record, claim.liveSince)
        if (claimed === undefined) return Either.left(new Store.KeyClaimed())
        next = claimed
      }
      for (const w of change.writes) {
        if (w._tag === "Touch") continue
        if (w._tag === "Remove") next = removeRow(next, w.part, storedKey(registry[w.part]!, change.tenant, w.key))
        else {
          const written = w._tag === "Update" ? updateRow(next, w.part, w.record) : insertRow(next, w.part, w.record)
          if (written instanceof Store.UniqueViolation) return Either.left(written)
          next = written
        }
      }
      let versions = next.vpcVersions
      for (const vpc of Change.touchedVpcs(change.writes, registry)) {
        const version = HashMap.get(versions, vpc)
        if (Option.isSome(version)) versions = HashMap.set(versions, vpc, version.value + 1)
      }
      next = {
        ...next,
        vpcVersions: versions,
        scopeVersions: Change.movesScope(change.writes, registry)
          ? HashMap.set(next.scopeVersions, change.tenant, scope + 1)
          : next.scopeVersions
      }
      for (const entry of change.audit) next = withAudit(next, entry)
      return Either.right(change.events.length > 0 ? withEvents(next, change.events, at) : next)
    }

    const commit: Store.StoreShape["commit"] = (change) =>
      // The clock is read holding the writer, so events are appended in the order of their times.
      write((s) =>
        Effect.flatMap(Clock.currentTimeMillis, (at) =>
          Either.match(committing(s, change, at), {
            onLeft: (refused): Effect.Effect<never, Refused> => Effect.fail(refused),
            onRight: (next) =>
              Effect.succeed(
                [
                  { before: revisions.tenant(s, change.tenant), after: revisions.tenant(next, change.tenant) },
                  next
                ] as const
              )
          }))
      )

    const store = Store.Store.of({
      backend: "memory",
      commit,
      soleWriter: true,
      transaction,
      exclusive: Store.inProcessExclusive(),
      ping: guard,
      admins,
      tenants,
      domains,
      providerConfig,
      serviceTunnels,
      hostnames,
      vpcs,
      pods,
      tunnels,
      idempotencyKeys,
      loginAttempts,
      sessions,
      events,
      audit,
      snapshots
    })
    const switches = StoreSwitches.of({ setAvailable: (value) => Effect.sync(() => void (available = value)) })
    return { store, switches }
  })

/** The in-memory Store over `Kind.KINDS`. */
export const make = makeWith(Kind.KINDS)

/** The in-memory Store and its test switches. */
export const layer: Layer.Layer<Store.Store | StoreSwitches> = Layer.effectContext(
  Effect.map(make, ({ store, switches }) => Context.make(Store.Store, store).pipe(Context.add(StoreSwitches, switches)))
)
