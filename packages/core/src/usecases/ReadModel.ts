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
 * `layer` puts the read model in front of the Store: the Store the use-cases see answers reads
 * of the caller's own rows from the request's snapshot, and everything else (writes, reads inside
 * a transaction, where a use-case decides under locks, reads of a kind of row the request has
 * written, so it reads its own writes, the admin's and the reconciler's calls) goes to the
 * store as before. Values derived from a snapshot (a VPC's context, its compiled matcher) are
 * kept with it (`derived`), so they are built once per revision.
 */
import { Context, Deferred, Effect, FiberId, FiberRef, Layer, Option } from "effect"
import type { TenantId, VpcId } from "../domain/Ids.js"
import type { PodRecord } from "../domain/Pod.js"
import type { SecurityRuleRecord } from "../domain/SecurityRule.js"
import type { SubnetRecord } from "../domain/Subnet.js"
import type { TenantRecord } from "../domain/Tenant.js"
import type { TunnelRecord } from "../domain/Tunnel.js"
import type { VpcRecord } from "../domain/Vpc.js"
import type {
  Authenticated,
  ProviderConfigSnapshot,
  Revision,
  StoreShape,
  StoreUnavailable,
  TenantSnapshot
} from "../ports/Store.js"
import { Store } from "../ports/Store.js"

/** A tenant's snapshot, indexed for the reads use-cases make, with what was derived from it. */
export class TenantView {
  private readonly groups = new Map<string, ReadonlyArray<unknown>>()
  private readonly indexes = new Map<ReadonlyArray<unknown>, ReadonlyMap<string, unknown>>()
  readonly derived = new Map<string, unknown>()

  constructor(readonly tenantId: TenantId, readonly snapshot: TenantSnapshot) {}

  /** `list` by id, built the first time it is asked for: a writer's next view may never need it. */
  private byId<A extends { readonly id: string }>(list: ReadonlyArray<A>): ReadonlyMap<string, A> {
    let index = this.indexes.get(list) as ReadonlyMap<string, A> | undefined
    if (index === undefined) {
      index = new Map(list.map((r) => [r.id, r]))
      this.indexes.set(list, index)
    }
    return index
  }
  get vpcById(): ReadonlyMap<string, VpcRecord> {
    return this.byId(this.snapshot.vpcs)
  }
  get subnetById(): ReadonlyMap<string, SubnetRecord> {
    return this.byId(this.snapshot.subnets)
  }
  get ruleById(): ReadonlyMap<string, SecurityRuleRecord> {
    return this.byId(this.snapshot.securityRules)
  }
  get podById(): ReadonlyMap<string, PodRecord> {
    return this.byId(this.snapshot.pods)
  }
  get tunnelById(): ReadonlyMap<string, TunnelRecord> {
    return this.byId(this.snapshot.tunnels)
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
  constructor(public view: TenantView, readonly providerConfigRevision: Revision) {}
  /** The request's own transaction committed onto its view: it reads the result from memory. */
  advance(view: TenantView) {
    this.view = view
    this.wrote.clear()
  }
}

/** The request's session: set by its authentication, so that every read of the request sees it. */
const currentSession = FiberRef.unsafeMake<ReadSession | undefined>(undefined)

/**
 * The rest of the calling request (its fiber, and fibers it forks) reads through `session`.
 * Authentication calls it: a request's fiber is its own, so no other request sees it.
 */
export const readThrough = (session: ReadSession): Effect.Effect<void> => FiberRef.set(currentSession, session)

/** A change a transaction made, as it applies to a snapshot (cascades as the store's). */
export type Change =
  | { readonly _tag: "Put"; readonly part: Exclude<Part, "config">; readonly record: object }
  | { readonly _tag: "Remove"; readonly part: Exclude<Part, "config">; readonly key: string }
  | {
    readonly _tag: "ApplyState"
    readonly id: string
    readonly applied: boolean
    readonly apply_error: string | null
  }

const LISTS = {
  domains: "domains",
  vpcs: "vpcs",
  subnets: "subnets",
  rules: "securityRules",
  pods: "pods",
  tunnels: "tunnels",
  credentials: "registryCredentials"
} as const satisfies Record<Exclude<Part, "config">, keyof TenantSnapshot>

/** A registry credential is named within its tenant; everything else has an id. */
const keyOf = (record: object): string => (record as { id?: string }).id ?? (record as { name: string }).name

/** `snapshot` with `changes` made, in order, at `revision`: what the store holds after them. */
export const applyChanges = (
  snapshot: TenantSnapshot,
  changes: ReadonlyArray<Change>,
  revision: Revision
): TenantSnapshot => {
  // Only the lists a change touches are copied; the others are shared with `snapshot`.
  const lists: Record<string, ReadonlyArray<object>> = {}
  for (const name of Object.values(LISTS)) lists[name] = snapshot[name] as ReadonlyArray<object>
  const copied = new Set<string>()
  const writable = (name: string): Array<object> => {
    if (!copied.has(name)) {
      lists[name] = [...lists[name]!]
      copied.add(name)
    }
    return lists[name] as Array<object>
  }
  const without = (name: string, drop: (record: any) => boolean) => { // eslint-disable-line @typescript-eslint/no-explicit-any -- a row of any list
    if (lists[name]!.some(drop)) {
      lists[name] = lists[name]!.filter((r) => !drop(r))
      copied.add(name)
    }
  }
  for (const change of changes) {
    switch (change._tag) {
      case "Put": {
        const list = writable(LISTS[change.part])
        const key = keyOf(change.record)
        const at = list.findIndex((r) => keyOf(r) === key)
        if (at === -1) list.push(change.record)
        else list[at] = change.record
        break
      }
      case "Remove": {
        const key = change.key
        without(LISTS[change.part], (r) => keyOf(r) === key)
        if (change.part === "vpcs") {
          for (const name of ["subnets", "securityRules", "pods", "tunnels"]) without(name, (r) => r.vpc_id === key)
        }
        if (change.part === "pods") without("tunnels", (r) => r.pod_id === key)
        break
      }
      case "ApplyState": {
        const list = writable("vpcs")
        const at = list.findIndex((r) => keyOf(r) === change.id)
        if (at !== -1) list[at] = { ...list[at], applied: change.applied, apply_error: change.apply_error }
        break
      }
    }
  }
  return { ...(lists as unknown as Omit<TenantSnapshot, "revision">), revision }
}

/**
 * A tenant's request's transaction: what it wrote, whether the lock it took proved its view
 * current (so it may read from it), and the changes to apply to the view once it commits.
 */
interface Draft {
  readonly session: ReadSession
  current: boolean
  readonly wrote: Set<Part>
  readonly changes: Array<Change>
  /** A change that cannot be applied to a snapshot (the tenant itself): reload instead. */
  opaque: boolean
  /** Whether it read from the view: its commit must then prove the view was still current. */
  readView: boolean
}

const currentDraft = FiberRef.unsafeMake<Draft | undefined>(undefined)

/** What an optimistic transaction read was changed by a commit of someone else's: run it again. */
class Stale {}

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
}

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

  const authenticated = (hash: string): Effect.Effect<Option.Option<Authenticated>, StoreUnavailable> => {
    if (!store.soleWriter) return store.snapshots.authenticate(hash)
    return Effect.suspend(() => {
      const cached = tokens.get(hash)
      if (cached !== undefined && cached.generation === generation) return Effect.succeed(cached.found)
      const at = generation
      return Effect.tap(
        store.snapshots.authenticate(hash),
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
      const { providerConfigRevision, revision, tenant } = found.value
      return Effect.map(
        viewOf(tenant.id, revision),
        Option.map((view) => ({ tenant, session: new ReadSession(view, providerConfigRevision) }))
      )
    })

  const sessionOf = FiberRef.get(currentSession)

  /** The request's session, when it may read from its view: a tenant's request, outside a transaction. */
  const current: Effect.Effect<ReadSession | undefined> = Effect.flatMap(
    FiberRef.get(inTransaction),
    (inside) => inside ? Effect.succeed(undefined) : sessionOf
  )

  /** The view a read of `part` may be answered from, here and now; undefined for the store. */
  const readable = (part: Part): Effect.Effect<TenantView | undefined> =>
    Effect.flatMap(FiberRef.get(inTransaction), (inside) => {
      if (!inside) {
        return Effect.map(
          sessionOf,
          (session) => session === undefined || session.wrote.has(part) ? undefined : session.view
        )
      }
      return Effect.map(FiberRef.get(currentDraft), (draft) => {
        if (draft === undefined || !draft.current || draft.wrote.has(part) || draft.session.wrote.has(part)) {
          return undefined
        }
        draft.readView = true
        return draft.session.view
      })
    })

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
    Effect.flatMap(readable(part), (view) => {
      const answer = view === undefined ? undefined : pick(view)
      return answer === undefined ? fallback : Effect.succeed(answer)
    })

  const found = <A>(value: A | undefined) => value === undefined ? undefined : Option.some(value)

  const own = <A>(view: TenantView, tenantId: string, list: ReadonlyArray<A>) =>
    view.tenantId === tenantId ? list : undefined

  type Row = Exclude<Part, "config">

  /** `find` by id and `listByTenant` of a kind of row, from the view where it may answer. */
  const lookups = <A, Id extends string>(
    part: Row,
    byId: (view: TenantView) => ReadonlyMap<string, A>,
    list: (view: TenantView) => ReadonlyArray<A>,
    repository: {
      readonly find: (id: Id) => Effect.Effect<Option.Option<A>, StoreUnavailable>
      readonly listByTenant: (id: TenantId) => Effect.Effect<ReadonlyArray<A>, StoreUnavailable>
    }
  ) => ({
    find: (id: Id) => fromView(part, (v) => found(byId(v).get(id)), repository.find(id)),
    listByTenant: (id: TenantId) => fromView(part, (v) => own(v, id, list(v)), repository.listByTenant(id))
  })

  /**
   * The rows of a kind whose `field` is `id`, from the view when it holds the parent `id`
   * names; `name` names the grouping (kept with the view, per `id`).
   */
  const listBy = <A, Id extends string>(
    part: Row,
    name: string,
    field: (row: A) => string | null,
    list: (view: TenantView) => ReadonlyArray<A>,
    holdsParent: (view: TenantView, id: string) => boolean,
    fallback: (id: Id) => Effect.Effect<ReadonlyArray<A>, StoreUnavailable>
  ) =>
  (id: Id) =>
    fromView(
      part,
      (v) => holdsParent(v, id) ? v.group(name, list(v), field, id) : undefined,
      fallback(id)
    )

  const inVpc = (v: TenantView, id: string) => v.vpcById.has(id)

  /** A VPC's rows of a kind (`listByVpc`), grouped by `vpc_id` in the view. */
  const byVpc = <A extends { readonly vpc_id: string }>(
    part: Row,
    list: (view: TenantView) => ReadonlyArray<A>,
    fallback: (id: VpcId) => Effect.Effect<ReadonlyArray<A>, StoreUnavailable>
  ) => listBy(part, `${part}.vpc`, (r: A) => r.vpc_id, list, inVpc, fallback)

  /**
   * A write of `parts`: the request reads them from the store from now on (in its transaction,
   * `change` records it for the view; none, where it cannot be applied to one); a sole
   * writer's cached tokens expire once it is done.
   */
  const writes = <Args extends ReadonlyArray<unknown>, A, E>(
    parts: ReadonlyArray<Part>,
    f: (...args: Args) => Effect.Effect<A, E>,
    change?: (...args: Args) => Change
  ) =>
  (...args: Args): Effect.Effect<A, E> =>
    Effect.flatMap(Effect.all([sessionOf, FiberRef.get(currentDraft)]), ([session, draft]) => {
      if (session !== undefined) { for (const part of parts) session.wrote.add(part) }
      if (draft !== undefined) { for (const part of parts) draft.wrote.add(part) }
      const recorded = draft === undefined || parts.length === 0 ?
        f(...args) :
        Effect.tap(f(...args), () =>
          Effect.sync(() => {
            if (change === undefined) draft.opaque = true
            else draft.changes.push(change(...args))
          }))
      return Effect.ensuring(recorded, Effect.sync(() => void generation++))
    })

  const put = (part: Exclude<Part, "config">) => (record: object): Change => ({
    _tag: "Put",
    part,
    record
  })
  const remove = (part: Exclude<Part, "config">) => (key: string): Change => ({ _tag: "Remove", part, key })

  /**
   * A tenant's request's transaction, run optimistically on its view: it reads from the view
   * (as the store stood when the request began) and, having changed anything, takes the
   * tenant's revision step last. The step answers the revision before it: when that is still
   * the view's, nothing was committed since, so what it read was what the store held, and the
   * view with its changes made is the tenant at the step's revision, kept for the request and
   * the next ones. When it is not, the transaction is rolled back and run again reading the
   * store, as without a view.
   */
  const transaction = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreUnavailable, R> =>
    Effect.flatMap(
      Effect.all([FiberRef.get(currentDraft), FiberRef.get(inTransaction), sessionOf]),
      ([outer, inside, session]) => {
        const plain = Effect.locally(s.transaction(self), inTransaction, true)
        if (outer !== undefined || inside || session === undefined) return plain
        const attempt = (optimistic: boolean) => {
          const clean = session.wrote.size === 0
          const view = session.view
          const draft: Draft = {
            session,
            current: optimistic && clean,
            wrote: new Set(),
            changes: [],
            opaque: false,
            readView: false
          }
          let step: { readonly before: Revision; readonly after: Revision } | undefined
          const body = Effect.flatMap(self, (result) =>
            draft.changes.length === 0 && !draft.opaque || !clean
              ? Effect.succeed(result)
              : Effect.flatMap(s.snapshots.step(view.tenantId), (taken): Effect.Effect<A, E | Stale> => {
                step = taken
                return draft.readView && taken.before !== view.snapshot.revision
                  ? Effect.fail(new Stale())
                  : Effect.succeed(result)
              }))
          return s.transaction(body).pipe(
            Effect.locally(currentDraft, draft),
            Effect.locally(inTransaction, true),
            Effect.tap(() =>
              Effect.sync(() => {
                if (step === undefined || draft.opaque || step.before !== view.snapshot.revision) return
                const next = new TenantView(view.tenantId, applyChanges(view.snapshot, draft.changes, step.after))
                views.set(next.tenantId, next)
                session.advance(next)
              })
            )
          )
        }
        return attempt(true).pipe(
          Effect.catchIf((e): e is Stale => e instanceof Stale, () => attempt(false))
        ) as Effect.Effect<A, E | StoreUnavailable, R>
      }
    )

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
    transaction: (self) => Effect.ensuring(transaction(self), Effect.sync(() => void generation++)),
    admins: { ...s.admins, put: writes([], s.admins.put) },
    tenants: {
      ...s.tenants,
      insert: writes(EVERY_PART, s.tenants.insert),
      setToken: writes(EVERY_PART, s.tenants.setToken),
      delete: writes(EVERY_PART, s.tenants.delete)
    },
    domains: {
      ...s.domains,
      insert: writes(["domains"], s.domains.insert, put("domains")),
      delete: writes(["domains"], s.domains.delete, remove("domains")),
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
      insert: writes(["vpcs"], s.vpcs.insert, put("vpcs")),
      // A lock showing a revision other than the view's means a commit came since: read the store.
      lock: (id) =>
        Effect.tap(
          s.vpcs.lock(id),
          (revision) =>
            Effect.flatMap(FiberRef.get(currentDraft), (draft) =>
              Effect.sync(() => {
                if (
                  draft !== undefined && Option.isSome(revision) &&
                  revision.value !== draft.session.view.snapshot.revision
                ) draft.current = false
              }))
        ),
      setApplyState: writes(["vpcs"], s.vpcs.setApplyState, (id, applied, apply_error) => ({
        _tag: "ApplyState",
        id,
        applied,
        apply_error
      })),
      delete: writes(VPC_AND_CONTENTS, s.vpcs.delete, remove("vpcs")),
      ...lookups("vpcs", (v) => v.vpcById, (v) => v.snapshot.vpcs, s.vpcs)
    },
    subnets: {
      ...s.subnets,
      insert: writes(["subnets"], s.subnets.insert, put("subnets")),
      ...lookups("subnets", (v) => v.subnetById, (v) => v.snapshot.subnets, s.subnets),
      listByVpc: byVpc("subnets", (v) => v.snapshot.subnets, s.subnets.listByVpc)
    },
    securityRules: {
      ...s.securityRules,
      insert: writes(["rules"], s.securityRules.insert, put("rules")),
      update: writes(["rules"], s.securityRules.update, put("rules")),
      delete: writes(["rules"], s.securityRules.delete, remove("rules")),
      find: (id) => fromView("rules", (v) => found(v.ruleById.get(id)), s.securityRules.find(id)),
      listByVpc: byVpc("rules", (v) => v.snapshot.securityRules, s.securityRules.listByVpc),
      // A rule's remote VPC is one of its own tenant's, so the tenant's rules are all there are.
      listByRemoteVpc: (id) =>
        listBy(
          "rules",
          "rules.remote",
          (r) => r.vpc_id === id ? null : r.remote_vpc_id,
          (v) => v.snapshot.securityRules,
          inVpc,
          s.securityRules.listByRemoteVpc
        )(id)
    },
    pods: {
      ...s.pods,
      insert: writes(["pods"], s.pods.insert, put("pods")),
      update: writes(["pods"], s.pods.update, put("pods")),
      delete: writes(["pods", "tunnels"], s.pods.delete, remove("pods")),
      ...lookups("pods", (v) => v.podById, (v) => v.snapshot.pods, s.pods),
      listByVpc: byVpc("pods", (v) => v.snapshot.pods, s.pods.listByVpc)
    },
    tunnels: {
      ...s.tunnels,
      insert: writes(["tunnels"], s.tunnels.insert, put("tunnels")),
      update: writes(["tunnels"], s.tunnels.update, put("tunnels")),
      delete: writes(["tunnels"], s.tunnels.delete, remove("tunnels")),
      ...lookups("tunnels", (v) => v.tunnelById, (v) => v.snapshot.tunnels, s.tunnels),
      listByPod: listBy(
        "tunnels",
        "tunnels.pod",
        (r) => r.pod_id,
        (v) => v.snapshot.tunnels,
        (v, id) => v.podById.has(id),
        s.tunnels.listByPod
      )
    },
    registryCredentials: {
      ...s.registryCredentials,
      insert: writes(["credentials"], s.registryCredentials.insert, put("credentials")),
      delete: writes(["credentials"], s.registryCredentials.delete, (_tenant, name) => remove("credentials")(name)),
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
