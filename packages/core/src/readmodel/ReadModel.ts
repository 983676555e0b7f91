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
import type * as Change from "../changes/Change.js"
import type { TenantId, VpcId } from "../domain/Ids.js"
import type { TenantRecord } from "../domain/Tenant.js"
import type {
  Authenticated,
  ProviderConfigSnapshot,
  Revision,
  StoreShape,
  StoreUnavailable,
  TenantSnapshot
} from "../ports/Store.js"
import { Store } from "../ports/Store.js"
import * as RuleSet from "../rules/RuleSet.js"
import type { Derivation, Part as Rows } from "./TenantState.js"
import { TenantState } from "./TenantState.js"

/** The kinds of rows a snapshot holds (and the provider configuration), as a request writes them. */
export type Part = Rows | "config"

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
  constructor(public view: TenantState, readonly providerConfigRevision: Revision) {}
  /** The request's own transaction committed onto its view: it reads the result from memory. */
  advance(view: TenantState) {
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
  /**
   * The VPC's context from the request's state (built once while the tenant's VPCs and
   * subnets, the VPC's pods and the peering block stay as they are); undefined when the
   * request does not read from a state.
   */
  readonly vpcContext: (vpcId: VpcId, peeringCidr: string | null) => Effect.Effect<RuleSet.VpcContext | undefined>
  /**
   * The tenant's state a change is decided on: the request's own when it reads through one of
   * this tenant (its own commits included), else the store's, loaded.
   */
  readonly stateOf: (tenantId: TenantId) => Effect.Effect<TenantState, StoreUnavailable>
  /** The tenant's state as the store holds it now: for a decision the store found stale. */
  readonly refresh: (tenantId: TenantId) => Effect.Effect<TenantState, StoreUnavailable>
  /**
   * A commit of `writes` decided on `decidedOn` took the tenant from `step.before` to
   * `step.after`: the state at `after` is made from the one at `before` (the cached state, or
   * the one decided on), and the request reads it from now on. A commit whose predecessor has
   * not been seen yet (commits of one process may finish out of order) waits for it; the
   * request reads the store meanwhile. Answers the state made, if one was.
   */
  readonly committed: (
    tenantId: TenantId,
    decidedOn: TenantState,
    writes: ReadonlyArray<Change.Write>,
    step: { readonly before: Revision; readonly after: Revision }
  ) => Effect.Effect<TenantState | undefined>
  /**
   * Runs `self`, a commit of the tenant's and its hand-over (`committed`): a request that meets
   * a revision this process is still handing over waits for it instead of loading the tenant.
   */
  readonly writing: <A, E, R>(tenantId: TenantId, self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * A change to what no tenant's state holds ended (committed or not): where this process is
   * the only writer, tokens are looked up again (a tenant's record or the provider
   * configuration may have changed).
   */
  readonly committedGlobal: Effect.Effect<void>
  /** How many tenants' snapshots are held now, and how many may be. */
  readonly size: Effect.Effect<{ readonly tenants: number; readonly capacity: number }>
}

export class ReadModel extends Context.Tag("@tenet/core/ReadModel")<ReadModel, ReadModelShape>() {}

/** A VPC's context: its inputs are the tenant's VPCs and subnets, the VPC's pods, the peering block. */
const VpcContext: Derivation<{ readonly vpcId: VpcId; readonly peeringCidr: string | null }, RuleSet.VpcContext> = {
  key: ({ vpcId }) => vpcId,
  inputs: (state, { peeringCidr, vpcId }) => [
    state.entryOf("vpcs"),
    state.entryOf("subnets"),
    state.entryOf("pods", { vpc: vpcId }),
    peeringCidr
  ],
  compute: (state, { peeringCidr, vpcId }) =>
    RuleSet.contextOf(vpcId, {
      vpcs: state.vpcs,
      subnets: state.subnets,
      pods: state.podsOf(vpcId),
      peeringCidr
    })
}

/** A tenant that is gone. */
const EMPTY: TenantSnapshot = {
  revision: "gone",
  vpcs: [],
  subnets: [],
  securityRules: [],
  pods: [],
  tunnels: [],
  registryCredentials: [],
  domains: [],
  vpcVersions: {}
}

/** What `derived` keeps, per state (so per revision). */
const perRevision = new WeakMap<TenantState, Map<string, unknown>>()

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
  const views = new Lru<TenantId, TenantState>(capacity)
  /**
   * Revisions each cached view follows from by commits applied to it here: a request
   * authenticated at one of them is served the view, which holds all it must see and more.
   */
  const ancestors = new Map<TenantId, Set<Revision>>()
  const ANCESTRY = 256
  /** The cached view when it is the tenant at `revision` or later. */
  const viewAt = (tenantId: TenantId, revision: Revision) => {
    const cached = views.get(tenantId)
    if (cached === undefined) return undefined
    return cached.revision === revision || ancestors.get(tenantId)?.has(revision) ? cached : undefined
  }
  /** `next`, made here by applying commits to the cached view, is the tenant's latest. */
  const advanced = (tenantId: TenantId, from: TenantState, next: TenantState) => {
    let seen = ancestors.get(tenantId)
    if (seen === undefined) ancestors.set(tenantId, seen = new Set())
    seen.add(from.revision)
    if (seen.size > ANCESTRY) seen.delete(seen.values().next().value!)
    views.set(tenantId, next)
  }
  /** `loaded` was read from the store: it follows from nothing this process knows of. */
  const reloaded = (tenantId: TenantId, loaded: TenantState) => {
    ancestors.delete(tenantId)
    views.set(tenantId, loaded)
  }
  const loading = new Map<string, Deferred.Deferred<Option.Option<TenantState>, StoreUnavailable>>()
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
  const viewOf = (
    tenantId: TenantId,
    revision: Revision
  ): Effect.Effect<Option.Option<TenantState>, StoreUnavailable> =>
    Effect.suspend(() => {
      const cached = viewAt(tenantId, revision)
      if (cached !== undefined) return Effect.succeed(Option.some(cached))
      // A commit of this process may have made that revision and not handed it over yet.
      const under = committing.get(tenantId)
      if (under === undefined) return loadAt(tenantId, revision)
      return Effect.zipRight(Effect.forEach([...under], Deferred.await, { discard: true }), loadAt(tenantId, revision))
    })

  /** The tenant's view at `revision`, from the cache or loaded (once, however many ask). */
  const loadAt = (
    tenantId: TenantId,
    revision: Revision
  ): Effect.Effect<Option.Option<TenantState>, StoreUnavailable> =>
    Effect.suspend(() => {
      const cached = viewAt(tenantId, revision)
      if (cached !== undefined) return Effect.succeed(Option.some(cached))
      const key = `${tenantId}@${revision}`
      const pending = loading.get(key)
      if (pending !== undefined) return Deferred.await(pending)
      const deferred = Deferred.unsafeMake<Option.Option<TenantState>, StoreUnavailable>(FiberId.none)
      loading.set(key, deferred)
      // Not interrupted with the request that started it: the others waiting need its answer.
      return store.snapshots.tenant(tenantId).pipe(
        Effect.map(Option.map((snapshot) => {
          const view = TenantState.fromSnapshot(tenantId, snapshot)
          reloaded(tenantId, view)
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
  const readable = (part: Part): Effect.Effect<TenantState | undefined> =>
    Effect.map(current, (session) => session === undefined || session.wrote.has(part) ? undefined : session.view)

  /** The request's state, when what is derived may read it: a view the request has not written. */
  const state: Effect.Effect<TenantState | undefined> = Effect.map(
    current,
    (session) => session === undefined || session.wrote.size > 0 ? undefined : session.view
  )

  const derived = <A, E, R>(key: string, compute: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(state, (view) => {
      if (view === undefined) return compute
      const kept = perRevision.get(view)
      if (kept?.has(key)) return Effect.succeed(kept.get(key) as A)
      return Effect.tap(compute, (value) =>
        Effect.sync(() => {
          if (kept === undefined) perRevision.set(view, new Map([[key, value]]))
          else kept.set(key, value)
        }))
    })

  const vpcContext: ReadModelShape["vpcContext"] = (vpcId, peeringCidr) =>
    Effect.map(state, (view) => view?.memo(VpcContext, { vpcId, peeringCidr }))

  /**
   * Answers from the request's view when the request has not written `part` and the view has
   * the answer (`pick` not undefined), else from the store.
   */
  const fromView = <A>(
    part: Part,
    pick: (view: TenantState) => A | undefined,
    fallback: Effect.Effect<A, StoreUnavailable>
  ): Effect.Effect<A, StoreUnavailable> =>
    Effect.flatMap(readable(part), (view) => {
      const answer = view === undefined ? undefined : pick(view)
      return answer === undefined ? fallback : Effect.succeed(answer)
    })

  const found = <A>(value: A | undefined) => value === undefined ? undefined : Option.some(value)

  const own = <A>(view: TenantState, tenantId: string, list: ReadonlyArray<A>) =>
    view.tenantId === tenantId ? list : undefined

  type Row = Exclude<Part, "config">

  /** `find` by id and `listByTenant` of a kind of row, from the view where it may answer. */
  const lookups = <A, Id extends string>(
    part: Row,
    byId: (view: TenantState, id: string) => A | undefined,
    list: (view: TenantState) => ReadonlyArray<A>,
    repository: {
      readonly find: (id: Id) => Effect.Effect<Option.Option<A>, StoreUnavailable>
      readonly listByTenant: (id: TenantId) => Effect.Effect<ReadonlyArray<A>, StoreUnavailable>
    }
  ) => ({
    find: (id: Id) => fromView(part, (v) => found(byId(v, id)), repository.find(id)),
    listByTenant: (id: TenantId) => fromView(part, (v) => own(v, id, list(v)), repository.listByTenant(id))
  })

  /** The rows of a kind under a parent (`list`), from the view when it holds the parent. */
  const listBy = <A, Id extends string>(
    part: Row,
    list: (view: TenantState, id: string) => ReadonlyArray<A>,
    holdsParent: (view: TenantState, id: string) => boolean,
    fallback: (id: Id) => Effect.Effect<ReadonlyArray<A>, StoreUnavailable>
  ) =>
  (id: Id) => fromView(part, (v) => holdsParent(v, id) ? list(v, id) : undefined, fallback(id))

  const inVpc = (v: TenantState, id: string) => v.vpc(id) !== undefined

  /** A VPC's rows of a kind (`listByVpc`). */
  const byVpc = <A>(
    part: Row,
    list: (view: TenantState, id: string) => ReadonlyArray<A>,
    fallback: (id: VpcId) => Effect.Effect<ReadonlyArray<A>, StoreUnavailable>
  ) => listBy(part, list, inVpc, fallback)

  /**
   * A write of `parts` made through the store rather than a commit (the tenant's own record,
   * the provider configuration, what no tenant owns): the request reads them from the store
   * from now on, and a sole writer's cached tokens expire once it is done.
   */
  const writes = <Args extends ReadonlyArray<unknown>, A, E>(
    parts: ReadonlyArray<Part>,
    f: (...args: Args) => Effect.Effect<A, E>
  ) =>
  (...args: Args): Effect.Effect<A, E> =>
    Effect.flatMap(sessionOf, (session) => {
      if (session !== undefined) { for (const part of parts) session.wrote.add(part) }
      return Effect.ensuring(f(...args), Effect.sync(() => void generation++))
    })

  /** Inside a transaction a use case decides under its locks: it reads the store. */
  const transaction: StoreShape["transaction"] = (self) => Effect.locally(store.transaction(self), inTransaction, true)

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
      insert: writes(["domains"], s.domains.insert),
      delete: writes(["domains"], s.domains.delete),
      listByTenant: (id) => fromView("domains", (v) => own(v, id, v.domains), s.domains.listByTenant(id))
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
      setApplyState: writes(["vpcs"], s.vpcs.setApplyState),
      delete: writes(VPC_AND_CONTENTS, s.vpcs.delete),
      ...lookups("vpcs", (v, id) => v.vpc(id), (v) => v.vpcs, s.vpcs)
    },
    subnets: {
      ...s.subnets,
      insert: writes(["subnets"], s.subnets.insert),
      ...lookups("subnets", (v, id) => v.subnet(id), (v) => v.subnets, s.subnets),
      listByVpc: byVpc("subnets", (v, id) => v.subnetsOf(id), s.subnets.listByVpc)
    },
    securityRules: {
      ...s.securityRules,
      insert: writes(["rules"], s.securityRules.insert),
      update: writes(["rules"], s.securityRules.update),
      delete: writes(["rules"], s.securityRules.delete),
      find: (id) => fromView("rules", (v) => found(v.rule(id)), s.securityRules.find(id)),
      listByVpc: byVpc("rules", (v, id) => v.rulesOf(id), s.securityRules.listByVpc),
      // A rule's remote VPC is one of its own tenant's, so the tenant's rules are all there are.
      listByRemoteVpc: byVpc("rules", (v, id) => v.rulesNaming(id), s.securityRules.listByRemoteVpc)
    },
    pods: {
      ...s.pods,
      insert: writes(["pods"], s.pods.insert),
      update: writes(["pods"], s.pods.update),
      delete: writes(["pods", "tunnels"], s.pods.delete),
      ...lookups("pods", (v, id) => v.pod(id), (v) => v.pods, s.pods),
      listByVpc: byVpc("pods", (v, id) => v.podsOf(id), s.pods.listByVpc)
    },
    tunnels: {
      ...s.tunnels,
      insert: writes(["tunnels"], s.tunnels.insert),
      update: writes(["tunnels"], s.tunnels.update),
      delete: writes(["tunnels"], s.tunnels.delete),
      ...lookups("tunnels", (v, id) => v.tunnel(id), (v) => v.tunnels, s.tunnels),
      listByPod: listBy("tunnels", (v, id) => v.tunnelsOf(id), (v, id) => v.pod(id) !== undefined, s.tunnels.listByPod)
    },
    registryCredentials: {
      ...s.registryCredentials,
      insert: writes(["credentials"], s.registryCredentials.insert),
      delete: writes(["credentials"], s.registryCredentials.delete),
      listByTenant: (id) =>
        fromView(
          "credentials",
          (v) => own(v, id, v.credentials),
          s.registryCredentials.listByTenant(id)
        ),
      find: (tenantId, name) =>
        fromView(
          "credentials",
          (v) =>
            v.tenantId === tenantId
              ? Option.fromNullable(v.credential(name))
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

  const load = (tenantId: TenantId) =>
    Effect.flatMap(store.snapshots.tenant(tenantId), (found) =>
      Option.match(found, {
        // A tenant deleted meanwhile: an empty state, in which every decision finds nothing.
        onNone: () => Effect.succeed(TenantState.fromSnapshot(tenantId, EMPTY)),
        onSome: (snapshot) =>
          Effect.sync(() => {
            const state = TenantState.fromSnapshot(tenantId, snapshot)
            if (views.get(tenantId)?.revision !== state.revision) reloaded(tenantId, state)
            return state
          })
      }))

  const stateOf: ReadModelShape["stateOf"] = (tenantId) =>
    Effect.flatMap(
      sessionOf,
      (session) =>
        session !== undefined && session.view.tenantId === tenantId && session.wrote.size === 0
          ? Effect.succeed(session.view)
          : load(tenantId)
    )

  /** The commits of each tenant this process has under way, each settling once handed over (or failed). */
  const committing = new Map<TenantId, Set<Deferred.Deferred<void>>>()

  const writing: ReadModelShape["writing"] = (tenantId, self) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const settled = Deferred.unsafeMake<void>(FiberId.none)
        const under = committing.get(tenantId)
        if (under === undefined) committing.set(tenantId, new Set([settled]))
        else under.add(settled)
        return settled
      }),
      () => self,
      (settled) =>
        Effect.suspend(() => {
          const under = committing.get(tenantId)
          under?.delete(settled)
          if (under?.size === 0) committing.delete(tenantId)
          return Deferred.succeed(settled, undefined)
        })
    )

  /** Commits seen before their predecessor, by the revision they follow (`tenant@revision`). */
  const early = new Map<string, { readonly writes: ReadonlyArray<Change.Write>; readonly after: Revision }>()

  const committed: ReadModelShape["committed"] = (tenantId, decidedOn, writes, step) =>
    Effect.flatMap(sessionOf, (session) =>
      Effect.sync(() => {
        generation++
        const cached = views.get(tenantId)
        // The state decided on serves only while nothing newer is cached (a load may be ahead).
        const base = cached?.revision === step.before
          ? cached
          : cached === undefined && decidedOn.revision === step.before
          ? decidedOn
          : undefined
        const holding = base === undefined ? viewAt(tenantId, step.after) : undefined
        if (holding !== undefined) {
          // Already in the cached view (loaded after this commit).
          if (session !== undefined && session.view.tenantId === tenantId) session.advance(holding)
          return holding
        }
        if (base === undefined) {
          if (early.size >= capacity) early.clear()
          early.set(`${tenantId}@${step.before}`, { writes, after: step.after })
          if (session !== undefined) { for (const w of writes) session.wrote.add(w.part) }
          return undefined
        }
        const made = base.apply(writes, step.after)
        if (base !== cached) reloaded(tenantId, base)
        advanced(tenantId, base, made)
        let latest = made
        for (let next = early.get(`${tenantId}@${latest.revision}`); next !== undefined;) {
          early.delete(`${tenantId}@${latest.revision}`)
          const following = latest.apply(next.writes, next.after)
          advanced(tenantId, latest, following)
          latest = following
          next = early.get(`${tenantId}@${latest.revision}`)
        }
        if (session !== undefined && session.view.tenantId === tenantId) session.advance(made)
        return made
      }))

  const model = ReadModel.of({
    stateOf,
    refresh: load,
    committed,
    writing,
    authenticate,
    derived,
    vpcContext,
    committedGlobal: Effect.sync(() => void generation++),
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
