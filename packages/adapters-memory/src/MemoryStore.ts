/**
 * The Store in memory. State is one immutable value of persistent maps, so a transaction
 * works on a private draft and commits by swapping it in: readers never see half a
 * transaction, and a failed one leaves nothing behind. Writers are serialized, which is what
 * makes the uniqueness checks below hold under concurrent requests.
 */
import type {
  AddressSet,
  Admin,
  ChangeEvent,
  Domain,
  Guardrail,
  Hostname,
  IdempotencyKey,
  Ids,
  Pod,
  ProviderConfig,
  RegistryCredential,
  SecurityRule,
  ServiceTunnel,
  Session,
  Subnet,
  Tenant,
  Tunnel,
  Vpc
} from "@tenet/core"
import { AuditLog, Change, Common, Kind, LoginThrottle, Page, Store, Table } from "@tenet/core"
import { Chunk, Clock, Context, DateTime, Effect, Either, FiberRef, HashMap, Layer, Option, Ref } from "effect"

/**
 * How a commit writes one kind of a tenant's rows (the port writes them only through `commit`):
 * pure functions of the state, so a commit is straight code over it rather than an effect per row.
 */
interface Storage<R> {
  readonly table: (s: State) => Table.Table<R, string>
  /** The state with the row, or the uniqueness rule the row would break. */
  readonly insert: (s: State, record: R) => State | Store.UniqueViolation
  /** The state with the row replaced, where it holds it. */
  readonly update: (s: State, record: R) => State
  /** The state without the row, and without what goes with it. */
  readonly remove: (s: State, key: string, tenant: Ids.TenantId) => State
}

const Domains = Table.define<Domain.DomainRecord, "tenant" | "name">({
  key: (d) => d.id,
  indexes: { tenant: (d) => d.tenant_id, name: (d) => d.domain },
  retained: ["tenant"]
})
const Vpcs = Table.define<Vpc.VpcRecord, "tenant" | "name" | "unapplied" | "deleting">({
  key: (v) => v.id,
  indexes: {
    tenant: (v) => v.tenant_id,
    name: (v) => `${v.tenant_id}/${v.name}`,
    unapplied: (v) => v.applied ? null : "",
    deleting: (v) => v.lifecycle === "deleting" ? "" : null
  },
  retained: ["tenant"]
})
const Subnets = Table.define<Subnet.SubnetRecord, "tenant" | "vpc" | "name">({
  key: (n) => n.id,
  indexes: { tenant: (n) => n.tenant_id, vpc: (n) => n.vpc_id, name: (n) => `${n.vpc_id}/${n.name}` },
  retained: ["tenant"]
})
const Rules = Table.define<SecurityRule.SecurityRuleRecord, "tenant" | "vpc">({
  key: (r) => r.id,
  indexes: { tenant: (r) => r.tenant_id, vpc: (r) => r.vpc_id },
  retained: ["tenant"]
})
const Pods = Table.define<Pod.PodRecord, "tenant" | "vpc" | "name" | "unapplied" | "deleting">({
  key: (p) => p.id,
  indexes: {
    tenant: (p) => p.tenant_id,
    vpc: (p) => p.vpc_id,
    name: (p) => `${p.vpc_id}/${p.name}`,
    unapplied: (p) => p.applied ? null : "",
    deleting: (p) => p.lifecycle === "deleting" ? "" : null
  },
  retained: ["tenant"]
})
const Tunnels = Table.define<Tunnel.TunnelRecord, "tenant" | "vpc" | "pod" | "name" | "hostname" | "inactive">({
  key: (t) => t.id,
  indexes: {
    tenant: (t) => t.tenant_id,
    vpc: (t) => t.vpc_id,
    pod: (t) => t.pod_id,
    name: (t) => `${t.tenant_id}/${t.tunnel_name}`,
    hostname: (t) => t.hostname,
    inactive: (t) => t.status === "active" ? null : ""
  },
  retained: ["tenant"]
})
const Credentials = Table.define<RegistryCredential.RegistryCredentialRecord, "tenant">({
  key: (c) => `${c.tenant_id}/${c.name}`,
  indexes: { tenant: (c) => c.tenant_id },
  retained: ["tenant"]
})

/** A tenant-wide guardrail (no VPC) is in no VPC's index entry. */
const Guardrails = Table.define<Guardrail.GuardrailRecord, "tenant" | "vpc">({
  key: (g) => g.id,
  indexes: { tenant: (g) => g.tenant_id, vpc: (g) => g.vpc_id },
  retained: ["tenant"]
})

const AddressSets = Table.define<AddressSet.AddressSetRecord, "tenant" | "name">({
  key: (a) => a.id,
  indexes: { tenant: (a) => a.tenant_id, name: (a) => `${a.tenant_id}/${a.name}` },
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
  readonly domains: Table.Table<Domain.DomainRecord, "tenant" | "name">
  readonly providerConfig: Option.Option<ProviderConfig.ProviderConfigRecord>
  readonly serviceTunnels: HashMap.HashMap<Ids.ServiceTunnelId, ServiceTunnel.ServiceTunnelRecord>
  readonly vpcs: Table.Table<Vpc.VpcRecord, "tenant" | "name" | "unapplied" | "deleting">
  readonly subnets: Table.Table<Subnet.SubnetRecord, "tenant" | "vpc" | "name">
  readonly rules: Table.Table<SecurityRule.SecurityRuleRecord, "tenant" | "vpc">
  readonly pods: Table.Table<Pod.PodRecord, "tenant" | "vpc" | "name" | "unapplied" | "deleting">
  readonly tunnels: Table.Table<Tunnel.TunnelRecord, "tenant" | "vpc" | "pod" | "name" | "hostname" | "inactive">
  /** Keyed by `tenant_id/name`. */
  readonly credentials: Table.Table<RegistryCredential.RegistryCredentialRecord, "tenant">
  readonly guardrails: Table.Table<Guardrail.GuardrailRecord, "tenant" | "vpc">
  readonly addressSets: Table.Table<AddressSet.AddressSetRecord, "tenant" | "name">
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

const emptyState: State = {
  admins: HashMap.empty(),
  adminByToken: HashMap.empty(),
  tenants: HashMap.empty(),
  tenantByName: HashMap.empty(),
  tenantByToken: HashMap.empty(),
  domains: Table.empty(Domains),
  providerConfig: Option.none(),
  serviceTunnels: HashMap.empty(),
  vpcs: Table.empty(Vpcs),
  subnets: Table.empty(Subnets),
  rules: Table.empty(Rules),
  pods: Table.empty(Pods),
  tunnels: Table.empty(Tunnels),
  credentials: Table.empty(Credentials),
  guardrails: Table.empty(Guardrails),
  addressSets: Table.empty(AddressSets),
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
}

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

/** A row replaced where the table holds it. */
const replacing = <R, I extends string>(
  definition: Table.Definition<R, I>,
  table: (s: State) => Table.Table<R, I>,
  set: (s: State, table: Table.Table<R, I>) => State
) =>
(s: State, record: R): State =>
  Table.has(table(s), definition.key(record)) ? set(s, Table.put(definition, table(s), record)) : s

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
const keyOf = (record: Created & { readonly id?: string; readonly tenant_id?: string; readonly name?: string }) =>
  record.id ?? `${record.tenant_id}/${record.name}`

/**
 * Oldest first; records created in the same millisecond keep the order they were inserted in.
 * A record's insertion number never changes, so it is looked up once per record object (in
 * `orders`) rather than hashed again at every list.
 */
const inCreationOrder = (orders: WeakMap<object, number>) => <A extends Created>(s: State, records: ReadonlyArray<A>) =>
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
      [
        Table.entry(s.vpcs, "tenant", id),
        Table.entry(s.subnets, "tenant", id),
        Table.entry(s.rules, "tenant", id),
        Table.entry(s.pods, "tenant", id),
        Table.entry(s.tunnels, "tenant", id),
        Table.entry(s.credentials, "tenant", id),
        Table.entry(s.domains, "tenant", id),
        Table.entry(s.guardrails, "tenant", id),
        Table.entry(s.addressSets, "tenant", id)
      ].map(numberOf).join("."),
    providerConfig: (s: State): Store.Revision => String(numberOf(s.providerConfig))
  }
}

export const make = Effect.gen(function*() {
  const ordered = inCreationOrder(new WeakMap())
  const revisions = revisionsOf()
  const committed = yield* Ref.make(emptyState)
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

  /** A VPC goes with its subnets, rules, pods, tunnels and guardrails. */
  const removeVpc = (s: State, id: Ids.VpcId): State => ({
    ...s,
    vpcs: Table.remove(Vpcs, s.vpcs, id),
    vpcVersions: HashMap.remove(s.vpcVersions, id),
    subnets: Table.removeAll(Subnets, s.subnets, "vpc", id),
    rules: Table.removeAll(Rules, s.rules, "vpc", id),
    pods: Table.removeAll(Pods, s.pods, "vpc", id),
    tunnels: Table.removeAll(Tunnels, s.tunnels, "vpc", id),
    guardrails: Table.removeAll(Guardrails, s.guardrails, "vpc", id)
  })

  const removeTenant = (state: State, id: Ids.TenantId): State => {
    const tenant = Option.getOrThrow(HashMap.get(state.tenants, id))
    const s = Table.lookup(state.vpcs, "tenant", id).reduce((acc, vpc) => removeVpc(acc, vpc.id), state)
    return {
      ...s,
      tenants: HashMap.remove(s.tenants, id),
      tenantByName: HashMap.remove(s.tenantByName, tenant.name),
      tenantByToken: HashMap.remove(s.tenantByToken, tenant.token_hash),
      domains: Table.removeAll(Domains, s.domains, "tenant", id),
      credentials: Table.removeAll(Credentials, s.credentials, "tenant", id),
      guardrails: Table.removeAll(Guardrails, s.guardrails, "tenant", id),
      addressSets: Table.removeAll(AddressSets, s.addressSets, "tenant", id),
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
    list: read((s) => ordered(s, Array.from(HashMap.values(s.tenants)))),
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
    listByTenant: (tenantId) => read((s) => ordered(s, Table.lookup(s.domains, "tenant", tenantId))),
    findByDomain: (domain) => read((s) => Option.fromNullable(Table.lookup(s.domains, "name", domain)[0]))
  }

  const providerConfig: Store.ProviderConfigRepository = {
    get: read((s) => s.providerConfig),
    put: (record) => write((s) => Effect.succeed([undefined, { ...s, providerConfig: Option.some(record) }] as const))
  }

  /** The one index of routed hostnames: the tunnels' hostname index and the service tunnels. */
  const holderOf = (s: State, hostname: string): Option.Option<Hostname.Holder> => {
    const tunnel = Table.lookup(s.tunnels, "hostname", hostname)[0]
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
        if (Option.isSome(holderOf(s, record.hostname))) return Effect.fail(violation(Store.Constraints.routedHostname))
        return Effect.succeed(
          [undefined, {
            ...inserted(s, record.id),
            serviceTunnels: HashMap.set(s.serviceTunnels, record.id, record)
          }] as const
        )
      }),
    list: read((s) => ordered(s, Array.from(HashMap.values(s.serviceTunnels)))),
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
    listUnapplied: read((s) => ordered(s, Table.lookup(s.vpcs, "unapplied", ""))),
    listDeleting: read((s) => ordered(s, Table.lookup(s.vpcs, "deleting", ""))),
    // Writers are already serialized, so holding a VPC is only a matter of it existing.
    lock: (id) =>
      transaction(read((s) => Option.map(Table.get(s.vpcs, id), (vpc) => revisions.tenant(s, vpc.tenant_id))))
  }

  const pods: Store.PodRepository = {
    listUnapplied: read((s) => ordered(s, Table.lookup(s.pods, "unapplied", ""))),
    listDeleting: read((s) => ordered(s, Table.lookup(s.pods, "deleting", "")))
  }

  const tunnels: Store.TunnelRepository = {
    listInactive: read((s) => ordered(s, Table.lookup(s.tunnels, "inactive", ""))),
    countByStatus: read((s) => {
      const counts = { active: 0, pending: 0, error: 0 }
      for (const t of Table.values(s.tunnels)) counts[t.status]++
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

  const bySeq = (a: SecurityRule.SecurityRuleRecord, b: SecurityRule.SecurityRuleRecord) => a.seq - b.seq
  const bySeqOf = (rules: Array<SecurityRule.SecurityRuleRecord>) => rules.sort(bySeq)

  const credentialKey = (tenantId: string, name: string) => `${tenantId}/${name}`

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
            vpcs: ordered(s, Table.lookup(s.vpcs, "tenant", id)),
            subnets: ordered(s, Table.lookup(s.subnets, "tenant", id)),
            securityRules: bySeqOf(Table.lookup(s.rules, "tenant", id)),
            pods: ordered(s, Table.lookup(s.pods, "tenant", id)),
            tunnels: ordered(s, Table.lookup(s.tunnels, "tenant", id)),
            registryCredentials: ordered(s, Table.lookup(s.credentials, "tenant", id)),
            domains: ordered(s, Table.lookup(s.domains, "tenant", id)),
            guardrails: ordered(s, Table.lookup(s.guardrails, "tenant", id)),
            addressSets: ordered(s, Table.lookup(s.addressSets, "tenant", id)),
            vpcVersions: Object.fromEntries(
              Table.lookup(s.vpcs, "tenant", id).map((
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

  /**
   * Each kind of a tenant's rows as this store keeps it: its table (a credential keyed by
   * `tenant/name`, `Kind.keyField`) and how a commit writes it, keeping the uniqueness rules.
   */
  const storage: { readonly [P in Change.Part]: Storage<Kind.RecordOf<P>> } = {
    vpcs: {
      table: (s) => s.vpcs,
      insert: (s, record) =>
        Table.lookup(s.vpcs, "name", `${record.tenant_id}/${record.name}`).length > 0
          ? violation(Store.Constraints.vpcName)
          : {
            ...inserted(s, record.id),
            vpcs: Table.put(Vpcs, s.vpcs, record),
            vpcVersions: HashMap.set(s.vpcVersions, record.id, 0)
          },
      update: replacing(Vpcs, (s) => s.vpcs, (s, vpcs) => ({ ...s, vpcs })),
      remove: (s, key) => removeVpc(s, key as Ids.VpcId)
    },
    subnets: {
      table: (s) => s.subnets,
      insert: (s, record) =>
        Table.lookup(s.subnets, "name", `${record.vpc_id}/${record.name}`).length > 0
          ? violation(Store.Constraints.subnetName)
          : { ...inserted(s, record.id), subnets: Table.put(Subnets, s.subnets, record) },
      update: replacing(Subnets, (s) => s.subnets, (s, subnets) => ({ ...s, subnets })),
      remove: (s, key) => ({ ...s, subnets: Table.remove(Subnets, s.subnets, key) })
    },
    rules: {
      table: (s) => s.rules,
      insert: (s, record) => ({ ...s, rules: Table.put(Rules, s.rules, record) }),
      update: replacing(Rules, (s) => s.rules, (s, rules) => ({ ...s, rules })),
      remove: (s, key) => ({ ...s, rules: Table.remove(Rules, s.rules, key) })
    },
    pods: {
      table: (s) => s.pods,
      insert: (s, record) =>
        Table.lookup(s.pods, "name", `${record.vpc_id}/${record.name}`).length > 0
          ? violation(Store.Constraints.podName)
          : { ...inserted(s, record.id), pods: Table.put(Pods, s.pods, record) },
      update: replacing(Pods, (s) => s.pods, (s, pods) => ({ ...s, pods })),
      remove: (s, key) => ({
        ...s,
        pods: Table.remove(Pods, s.pods, key),
        tunnels: Table.removeAll(Tunnels, s.tunnels, "pod", key)
      })
    },
    tunnels: {
      table: (s) => s.tunnels,
      insert: (s, record) => {
        if (Table.lookup(s.tunnels, "name", `${record.tenant_id}/${record.tunnel_name}`).length > 0) {
          return violation(Store.Constraints.tunnelName)
        }
        if (Option.isSome(holderOf(s, record.hostname))) return violation(Store.Constraints.routedHostname)
        return { ...inserted(s, record.id), tunnels: Table.put(Tunnels, s.tunnels, record) }
      },
      update: replacing(Tunnels, (s) => s.tunnels, (s, tunnels) => ({ ...s, tunnels })),
      remove: (s, key) => ({ ...s, tunnels: Table.remove(Tunnels, s.tunnels, key) })
    },
    credentials: {
      table: (s) => s.credentials,
      insert: (s, record) => {
        const key = credentialKey(record.tenant_id, record.name)
        return Table.has(s.credentials, key)
          ? violation(Store.Constraints.registryCredentialName)
          : { ...inserted(s, key), credentials: Table.put(Credentials, s.credentials, record) }
      },
      update: replacing(Credentials, (s) => s.credentials, (s, credentials) => ({ ...s, credentials })),
      remove: (s, key, tenant) => ({
        ...s,
        credentials: Table.remove(Credentials, s.credentials, credentialKey(tenant, key))
      })
    },
    domains: {
      table: (s) => s.domains,
      insert: (s, record) =>
        Table.lookup(s.domains, "name", record.domain).length > 0
          ? violation(Store.Constraints.domainName)
          : { ...inserted(s, record.id), domains: Table.put(Domains, s.domains, record) },
      update: replacing(Domains, (s) => s.domains, (s, domains) => ({ ...s, domains })),
      remove: (s, key) => ({ ...s, domains: Table.remove(Domains, s.domains, key) })
    },
    guardrails: {
      table: (s) => s.guardrails,
      insert: (s, record) => ({
        ...inserted(s, record.id),
        guardrails: Table.put(Guardrails, s.guardrails, record)
      }),
      update: replacing(Guardrails, (s) => s.guardrails, (s, guardrails) => ({ ...s, guardrails })),
      remove: (s, key) => ({ ...s, guardrails: Table.remove(Guardrails, s.guardrails, key) })
    },
    addressSets: {
      table: (s) => s.addressSets,
      insert: (s, record) =>
        Table.lookup(s.addressSets, "name", `${record.tenant_id}/${record.name}`).length > 0
          ? violation(Store.Constraints.addressSetName)
          : { ...inserted(s, record.id), addressSets: Table.put(AddressSets, s.addressSets, record) },
      update: replacing(AddressSets, (s) => s.addressSets, (s, addressSets) => ({ ...s, addressSets })),
      remove: (s, key) => ({ ...s, addressSets: Table.remove(AddressSets, s.addressSets, key) })
    }
  }

  /** A row's key in its table: a tenant's key, within the tenant where the kind is named (`Kind.keyField`). */
  const storedKey = (tenant: string, part: Change.Part, key: string) =>
    Kind.KINDS[part].keyField === "name" ? `${tenant}/${key}` : key

  /** Whether the state holds the row a removal names. */
  const holds = (s: State, tenant: string, part: Change.Part, key: string): boolean =>
    Table.has(storage[part].table(s) as Table.Table<unknown, string>, storedKey(tenant, part, key))

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
    if (change.claim !== null) {
      const claimed = claiming(next, change.claim.record, change.claim.liveSince)
      if (claimed === undefined) return Either.left(new Store.KeyClaimed())
      next = claimed
    }
    for (const w of change.writes) {
      if (w._tag === "Touch") continue
      // The part's storage is of the part's record; TypeScript cannot relate them through `w.part`.
      const rows = storage[w.part] as Storage<object>
      if (w._tag === "Remove") next = rows.remove(next, w.key, change.tenant)
      else if (w._tag === "Update") next = rows.update(next, w.record)
      else {
        const written = rows.insert(next, w.record)
        if (written instanceof Store.UniqueViolation) return Either.left(written)
        next = written
      }
    }
    let versions = next.vpcVersions
    for (const vpc of Change.touchedVpcs(change.writes)) {
      const version = HashMap.get(versions, vpc)
      if (Option.isSome(version)) versions = HashMap.set(versions, vpc, version.value + 1)
    }
    next = {
      ...next,
      vpcVersions: versions,
      scopeVersions: Change.movesScope(change.writes)
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

/** The in-memory Store and its test switches. */
export const layer: Layer.Layer<Store.Store | StoreSwitches> = Layer.effectContext(
  Effect.map(make, ({ store, switches }) => Context.make(Store.Store, store).pipe(Context.add(StoreSwitches, switches)))
)
