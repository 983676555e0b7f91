/**
 * The read model: a tenant's requests are served from an in-memory snapshot of everything the
 * tenant owns, proven current before it is used, on every store.
 *
 * The proof is the tenant's revision (see the Store port's `snapshots`), which changes with
 * every committed change to the tenant's rows. Authenticating a request reads it with the
 * tenant, in the same statement; the request then reads from the snapshot cached at that
 * revision, loading it (one statement on PostgreSQL) when the cache holds another. A write
 * acknowledged before the request began is therefore always in what it reads, whichever process
 * made it, as kube-apiserver's consistent reads from cache (KEP-2340) wait for the revision
 * etcd reports. Where this process is the store's only writer (memory, embedded), even that
 * read is skipped while nothing was written since the last one, so reads need no round trip.
 *
 * `layer` puts the read model in front of the Store: the Store use-cases see answers reads of
 * the caller's own rows from the request's snapshot, and everything else (writes, reads inside
 * a transaction, where a use-case decides under locks, reads of a kind of row the request has
 * written, so it reads its own writes, the admin's and the reconciler's calls) goes to the
 * store as before. Values derived from a snapshot (a VPC's context, its compiled matcher) are
 * kept with it (`derived`), so they are built once per revision.
 */
import { Context, Deferred, Effect, FiberId, FiberRef, Layer, Option } from "effect"
import type { TenantId } from "../domain/Ids.js"
import type { PodRecord } from "../domain/Pod.js"
import type { SecurityRuleRecord } from "../domain/SecurityRule.js"
import type { SubnetRecord } from "../domain/Subnet.js"
import type { TenantRecord } from "../domain/Tenant.js"
import type { TunnelRecord } from "../domain/Tunnel.js"
import type { VpcRecord } from "../domain/Vpc.js"
import type { ProviderConfigSnapshot, Revision, StoreShape, StoreUnavailable, TenantSnapshot } from "../ports/Store.js"
import { Store } from "../ports/Store.js"
import { CurrentTenant } from "./Principal.js"

/** A tenant's snapshot, indexed for the reads use-cases make, with what was derived from it. */
export class TenantView {
  readonly vpcById: ReadonlyMap<string, VpcRecord>
  readonly subnetById: ReadonlyMap<string, SubnetRecord>
  readonly ruleById: ReadonlyMap<string, SecurityRuleRecord>
  readonly podById: ReadonlyMap<string, PodRecord>
  readonly tunnelById: ReadonlyMap<string, TunnelRecord>
  private readonly groups = new Map<string, ReadonlyArray<unknown>>()
  readonly derived = new Map<string, unknown>()

  constructor(readonly tenantId: TenantId, readonly snapshot: TenantSnapshot) {
    this.vpcById = new Map(snapshot.vpcs.map((r) => [r.id, r]))
    this.subnetById = new Map(snapshot.subnets.map((r) => [r.id, r]))
    this.ruleById = new Map(snapshot.securityRules.map((r) => [r.id, r]))
    this.podById = new Map(snapshot.pods.map((r) => [r.id, r]))
    this.tunnelById = new Map(snapshot.tunnels.map((r) => [r.id, r]))
  }

  /** The rows of `list` for which `keyOf` is `key`, in the list's order; computed once per key. */
  group<A>(name: string, list: ReadonlyArray<A>, keyOf: (a: A) => string | null, key: string): ReadonlyArray<A> {
    const id = `${name}:${key}`
    let rows = this.groups.get(id) as ReadonlyArray<A> | undefined
    if (rows === undefined) {
      rows = list.filter((a) => keyOf(a) === key)
      this.groups.set(id, rows)
    }
    return rows
  }
}

/** The kinds of rows a snapshot holds (and the provider configuration), as a request writes them. */
export type Part = "domains" | "config" | "vpcs" | "subnets" | "rules" | "pods" | "tunnels" | "credentials"

const EVERY_PART: ReadonlyArray<Part> = [
  "domains",
  "config",
  "vpcs",
  "subnets",
  "rules",
  "pods",
  "tunnels",
  "credentials"
]
/** What deleting a VPC takes with it. */
const VPC_AND_CONTENTS: ReadonlyArray<Part> = ["vpcs", "subnets", "rules", "pods", "tunnels"]

/**
 * What one request reads through: the view its authentication proved current. Once the request
 * writes a kind of row, it reads that kind from the store (its own writes are there).
 */
export class ReadSession {
  readonly wrote = new Set<Part>()
  constructor(readonly view: TenantView, readonly providerConfigRevision: Revision) {}
}

export interface Options {
  /** How many tenants' snapshots are kept (least recently used go first). */
  readonly capacity?: number
}

export const DEFAULT_CAPACITY = 1000

export interface ReadModelShape {
  /**
   * The tenant behind a token hash and a session for its request; none for an unknown token.
   * Where the store is shared, one store read; where this process is its only writer, none
   * while nothing was written since the last.
   */
  readonly authenticate: (
    tokenHash: string
  ) => Effect.Effect<Option.Option<{ readonly tenant: TenantRecord; readonly session: ReadSession }>, StoreUnavailable>
  /**
   * `compute`, kept with the request's snapshot under `key` when the request reads from one,
   * so that it runs once per revision; run every time otherwise.
   */
  readonly derived: <A, E, R>(key: string, compute: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** How many tenants' snapshots are held now, and how many may be. */
  readonly size: Effect.Effect<{ readonly tenants: number; readonly capacity: number }>
}

export class ReadModel extends Context.Tag("@tenet/core/ReadModel")<ReadModel, ReadModelShape>() {}

/** True inside `Store.transaction`: a use-case deciding there reads the store, under its locks. */
const inTransaction = FiberRef.unsafeMake(false)

/** A map that forgets its least recently used entries beyond `capacity`. */
class Lru<K, V> {
  private readonly entries = new Map<K, V>()
  constructor(readonly capacity: number) {}
  get size() {
    return this.entries.size
  }
  get(key: K): V | undefined {
    const value = this.entries.get(key)
    if (value !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, value)
    }
    return value
  }
  set(key: K, value: V) {
    this.entries.delete(key)
    this.entries.set(key, value)
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as K)
  }
  clear() {
    this.entries.clear()
  }
}

type Authenticated = { readonly tenant: TenantRecord; readonly revision: Revision; readonly configRevision: Revision }

export const make = (store: StoreShape, options: Options = {}) => {
  const capacity = options.capacity ?? DEFAULT_CAPACITY
  const views = new Lru<TenantId, TenantView>(capacity)
  const loading = new Map<string, Deferred.Deferred<Option.Option<TenantView>, StoreUnavailable>>()
  let config: ProviderConfigSnapshot | undefined
  // Sole writer only: bumped after every write this process finishes, which (nothing else
  // writing) is every write. A token's tenant and revisions, read at generation g, hold while
  // the generation is still g.
  let generation = 0
  const tokens = new Lru<string, { readonly generation: number; readonly found: Option.Option<Authenticated> }>(
    capacity
  )

  const readAuthenticated = (hash: string) =>
    Effect.map(
      store.snapshots.authenticate(hash),
      Option.map((a): Authenticated => ({
        tenant: a.tenant,
        revision: a.revision,
        configRevision: a.providerConfigRevision
      }))
    )

  const authenticated = (hash: string): Effect.Effect<Option.Option<Authenticated>, StoreUnavailable> => {
    if (!store.soleWriter) return readAuthenticated(hash)
    return Effect.suspend(() => {
      const cached = tokens.get(hash)
      if (cached !== undefined && cached.generation === generation) return Effect.succeed(cached.found)
      const at = generation
      return Effect.tap(
        readAuthenticated(hash),
        (found) => Effect.sync(() => tokens.set(hash, { generation: at, found }))
      )
    })
  }

  /** The tenant's view at `revision` or later; loads it (once, however many ask) when not cached. */
  const viewOf = (tenantId: TenantId, revision: Revision): Effect.Effect<Option.Option<TenantView>, StoreUnavailable> =>
    Effect.suspend(() => {
      const cached = views.get(tenantId)
      if (cached !== undefined && cached.snapshot.revision === revision) return Effect.succeed(Option.some(cached))
      const key = `${tenantId}@${revision}`
      const pending = loading.get(key)
      if (pending !== undefined) return Deferred.await(pending)
      const deferred = Deferred.unsafeMake<Option.Option<TenantView>, StoreUnavailable>(FiberId.none)
      loading.set(key, deferred)
      // Not interrupted with the request that started it: the others waiting need its answer.
      return store.snapshots.tenant(tenantId).pipe(
        Effect.map(Option.map((snapshot) => {
          const view = new TenantView(tenantId, snapshot)
          views.set(tenantId, view)
          return view
        })),
        Effect.onExit((exit) => Effect.zipRight(Effect.sync(() => loading.delete(key)), Deferred.done(deferred, exit))),
        Effect.uninterruptible
      )
    })

  const authenticate: ReadModelShape["authenticate"] = (hash) =>
    Effect.flatMap(authenticated(hash), (found) => {
      if (Option.isNone(found)) return Effect.succeed(Option.none())
      const { configRevision, revision, tenant } = found.value
      return Effect.map(
        viewOf(tenant.id, revision),
        Option.map((view) => ({ tenant, session: new ReadSession(view, configRevision) }))
      )
    })

  /** The request's session, when it may read from its view: a tenant's request, outside a transaction. */
  const current: Effect.Effect<ReadSession | undefined> = Effect.flatMap(
    FiberRef.get(inTransaction),
    (inside) =>
      inside ?
        Effect.succeed(undefined) :
        Effect.map(Effect.serviceOption(CurrentTenant), (caller) =>
          Option.isSome(caller) ? caller.value.session : undefined)
  )

  const derived = <A, E, R>(key: string, compute: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(current, (session) => {
      // What is derived reads several kinds of rows: only from a view the request has not written.
      if (session === undefined || session.wrote.size > 0) return compute
      const memo = session.view.derived
      if (memo.has(key)) return Effect.succeed(memo.get(key) as A)
      return Effect.tap(compute, (value) => Effect.sync(() => memo.set(key, value)))
    })

  /**
   * Answers from the request's view when the request has not written `part` and the view has
   * the answer (`pick` not undefined), else from the store.
   */
  const fromView = <A>(
    part: Part,
    pick: (view: TenantView) => A | undefined,
    fallback: Effect.Effect<A, StoreUnavailable>
  ): Effect.Effect<A, StoreUnavailable> =>
    Effect.flatMap(current, (session) => {
      const answer = session === undefined || session.wrote.has(part) ? undefined : pick(session.view)
      return answer === undefined ? fallback : Effect.succeed(answer)
    })

  const found = <A>(value: A | undefined) => value === undefined ? undefined : Option.some(value)

  const own = <A>(view: TenantView, tenantId: string, list: ReadonlyArray<A>) =>
    view.tenantId === tenantId ? list : undefined

  /**
   * A write of `parts`: the request reads them from the store from now on; a sole writer's
   * cached tokens expire once it is done.
   */
  const writes = <Args extends ReadonlyArray<unknown>, A, E>(
    parts: ReadonlyArray<Part>,
    f: (...args: Args) => Effect.Effect<A, E>
  ) =>
  (...args: Args): Effect.Effect<A, E> =>
    Effect.flatMap(Effect.serviceOption(CurrentTenant), (caller) => {
      const session = Option.isSome(caller) ? caller.value.session : undefined
      if (session !== undefined) { for (const part of parts) session.wrote.add(part) }
      return Effect.ensuring(f(...args), Effect.sync(() => void generation++))
    })

  const providerConfigGet = Effect.flatMap(current, (session) => {
    if (session === undefined || session.wrote.has("config")) return store.providerConfig.get
    if (config !== undefined && config.revision === session.providerConfigRevision) {
      return Effect.succeed(config.config)
    }
    return Effect.map(store.snapshots.providerConfig, (loaded) => {
      config = loaded
      return loaded.config
    })
  })

  const s = store
  const cached: StoreShape = {
    ...s,
    transaction: (self) =>
      Effect.locally(s.transaction(self), inTransaction, true).pipe(
        Effect.ensuring(Effect.sync(() => void generation++))
      ),
    admins: { ...s.admins, put: writes([], s.admins.put) },
    tenants: {
      ...s.tenants,
      insert: writes(EVERY_PART, s.tenants.insert),
      setToken: writes(EVERY_PART, s.tenants.setToken),
      delete: writes(EVERY_PART, s.tenants.delete)
    },
    domains: {
      ...s.domains,
      insert: writes(["domains"], s.domains.insert),
      delete: writes(["domains"], s.domains.delete),
      listByTenant: (id) => fromView("domains", (v) => own(v, id, v.snapshot.domains), s.domains.listByTenant(id))
    },
    providerConfig: { get: providerConfigGet, put: writes(["config"], s.providerConfig.put) },
    serviceTunnels: {
      ...s.serviceTunnels,
      insert: writes([], s.serviceTunnels.insert),
      update: writes([], s.serviceTunnels.update),
      delete: writes([], s.serviceTunnels.delete)
    },
    vpcs: {
      ...s.vpcs,
      insert: writes(["vpcs"], s.vpcs.insert),
      lock: writes([], s.vpcs.lock),
      setApplyState: writes(["vpcs"], s.vpcs.setApplyState),
      delete: writes(VPC_AND_CONTENTS, s.vpcs.delete),
      find: (id) => fromView("vpcs", (v) => found(v.vpcById.get(id)), s.vpcs.find(id)),
      listByTenant: (id) => fromView("vpcs", (v) => own(v, id, v.snapshot.vpcs), s.vpcs.listByTenant(id))
    },
    subnets: {
      ...s.subnets,
      insert: writes(["subnets"], s.subnets.insert),
      find: (id) => fromView("subnets", (v) => found(v.subnetById.get(id)), s.subnets.find(id)),
      listByTenant: (id) => fromView("subnets", (v) => own(v, id, v.snapshot.subnets), s.subnets.listByTenant(id)),
      listByVpc: (id) =>
        fromView(
          "subnets",
          (v) => v.vpcById.has(id) ? v.group("subnets.vpc", v.snapshot.subnets, (r) => r.vpc_id, id) : undefined,
          s.subnets.listByVpc(id)
        )
    },
    securityRules: {
      ...s.securityRules,
      insert: writes(["rules"], s.securityRules.insert),
      update: writes(["rules"], s.securityRules.update),
      delete: writes(["rules"], s.securityRules.delete),
      find: (id) => fromView("rules", (v) => found(v.ruleById.get(id)), s.securityRules.find(id)),
      listByVpc: (id) =>
        fromView(
          "rules",
          (v) => v.vpcById.has(id) ? v.group("rules.vpc", v.snapshot.securityRules, (r) => r.vpc_id, id) : undefined,
          s.securityRules.listByVpc(id)
        ),
      // A rule's remote VPC is one of its own tenant's, so the tenant's rules are all there are.
      listByRemoteVpc: (id) =>
        fromView(
          "rules",
          (v) =>
            v.vpcById.has(id)
              ? v.group("rules.remote", v.snapshot.securityRules, (r) => r.vpc_id === id ? null : r.remote_vpc_id, id)
              : undefined,
          s.securityRules.listByRemoteVpc(id)
        )
    },
    pods: {
      ...s.pods,
      insert: writes(["pods"], s.pods.insert),
      update: writes(["pods"], s.pods.update),
      delete: writes(["pods", "tunnels"], s.pods.delete),
      find: (id) => fromView("pods", (v) => found(v.podById.get(id)), s.pods.find(id)),
      listByTenant: (id) => fromView("pods", (v) => own(v, id, v.snapshot.pods), s.pods.listByTenant(id)),
      listByVpc: (id) =>
        fromView(
          "pods",
          (v) => v.vpcById.has(id) ? v.group("pods.vpc", v.snapshot.pods, (r) => r.vpc_id, id) : undefined,
          s.pods.listByVpc(id)
        )
    },
    tunnels: {
      ...s.tunnels,
      insert: writes(["tunnels"], s.tunnels.insert),
      update: writes(["tunnels"], s.tunnels.update),
      delete: writes(["tunnels"], s.tunnels.delete),
      find: (id) => fromView("tunnels", (v) => found(v.tunnelById.get(id)), s.tunnels.find(id)),
      listByTenant: (id) => fromView("tunnels", (v) => own(v, id, v.snapshot.tunnels), s.tunnels.listByTenant(id)),
      listByPod: (id) =>
        fromView(
          "tunnels",
          (v) => v.podById.has(id) ? v.group("tunnels.pod", v.snapshot.tunnels, (r) => r.pod_id, id) : undefined,
          s.tunnels.listByPod(id)
        )
    },
    registryCredentials: {
      ...s.registryCredentials,
      insert: writes(["credentials"], s.registryCredentials.insert),
      delete: writes(["credentials"], s.registryCredentials.delete),
      listByTenant: (id) =>
        fromView(
          "credentials",
          (v) => own(v, id, v.snapshot.registryCredentials),
          s.registryCredentials.listByTenant(id)
        ),
      find: (tenantId, name) =>
        fromView(
          "credentials",
          (v) =>
            v.tenantId === tenantId
              ? Option.fromNullable(v.snapshot.registryCredentials.find((c) => c.name === name))
              : undefined,
          s.registryCredentials.find(tenantId, name)
        )
    },
    idempotencyKeys: {
      ...s.idempotencyKeys,
      claim: writes([], s.idempotencyKeys.claim),
      purge: writes([], s.idempotencyKeys.purge)
    }
  }

  const model = ReadModel.of({
    authenticate,
    derived,
    size: Effect.sync(() => ({ tenants: views.size, capacity }))
  })
  return { store: cached, model }
}

/**
 * The read model in front of the Store in context: provides the ReadModel and the Store that
 * reads through it.
 */
export const layer = (options: Options = {}): Layer.Layer<ReadModel | Store, never, Store> =>
  Layer.effectContext(Effect.map(Store, (store) => {
    const { model, store: cached } = make(store, options)
    return Context.make(ReadModel, model).pipe(Context.add(Store, cached))
  }))
