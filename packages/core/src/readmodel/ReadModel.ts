/**
 * The read model: a tenant's requests are served from an in-memory state of everything the
 * tenant owns (`TenantState`), proven current before it is used, on every store.
 *
 * The proof is the tenant's revision (see the Store port's `snapshots`), which changes with
 * every committed change to the tenant's rows. Authenticating a request reads it with the
 * tenant, in the same statement; the request then reads from the state cached at that
 * revision, loading it (one statement on PostgreSQL) when the cache holds another. A write
 * acknowledged before the request began is therefore always in what it reads, whichever process
 * made it, as kube-apiserver's consistent reads from cache (KEP-2340) wait for the revision
 * etcd reports. Where this process is the store's only writer (memory, embedded), even that
 * read is skipped while nothing was written since the last one, so reads need no round trip;
 * a read off a request is served the view this process's own last commit of the tenant made.
 *
 * Use cases read a tenant's rows only through `stateOf`; the write path (`changes/Pipeline.ts`)
 * hands every committed change to `committed`, which makes the next state from it, so the
 * request that wrote reads its own writes and no other path can leave a state stale. Values
 * derived from a state are kept with it (`Derived.ts`).
 */
import { Context, Deferred, Effect, FiberId, FiberRef, Layer, Option } from "effect"
import type { TenantId } from "../domain/Ids.js"
import type { ProviderConfigRecord } from "../domain/ProviderConfig.js"
import type { TenantRecord } from "../domain/Tenant.js"
import type * as Change from "../kinds/Change.js"
import * as Kind from "../kinds/Kind.js"
import type {
  Authenticated,
  ProviderConfigSnapshot,
  Revision,
  StoreShape,
  StoreUnavailable,
  TenantSnapshot
} from "../ports/Store.js"
import { Store } from "../ports/Store.js"
import { TenantState } from "./TenantState.js"

/** What one request reads through: the state its authentication proved current. */
export class ReadSession {
  /** The request committed a change not yet in `view` (its predecessor was not seen yet): reload. */
  behind = false
  /** Steps whenever the request falls behind: a read begun before cannot clear it. */
  epoch = 0
  /** The request changed what no tenant's state holds: the provider configuration is read again. */
  configChanged = false
  constructor(public view: TenantState, readonly providerConfigRevision: Revision) {}
  /** The request's own commit made onto its view: it reads the result from memory. */
  advance(view: TenantState) {
    this.view = view
    this.behind = false
  }
  /** What the request reads next is read again. */
  fallBehind() {
    this.behind = true
    this.epoch++
  }
}

/** Whether the fiber is committing a tenant's change (inside `writing`): it waits for no other commit. */
const insideCommit = FiberRef.unsafeMake(false)

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
   * The provider configuration: the request's, cached at the revision its authentication read,
   * or the store's.
   */
  readonly providerConfig: Effect.Effect<Option.Option<ProviderConfigRecord>, StoreUnavailable>
  /**
   * The tenant's state: the request's own when it reads through one of this tenant (its own
   * commits included), else the tenant as committed now (its revision read alone, the cached
   * state served when that proves it current, loaded otherwise). Every read of a tenant's rows
   * and every decision on them starts here.
   */
  readonly stateOf: (tenantId: TenantId) => Effect.Effect<TenantState, StoreUnavailable>
  /**
   * The tenant and the provider configuration as committed now, for work off a request (a
   * convergence): both revisions in one read, each served from what is cached when that proves
   * it current (where this process is the only writer, no read while its own commits say so).
   */
  readonly stateAndConfig: (tenantId: TenantId) => Effect.Effect<
    { readonly state: TenantState; readonly config: Option.Option<ProviderConfigRecord> },
    StoreUnavailable
  >
  /**
   * Another fiber committed for the calling request (a convergence it waited on, the batch its
   * write was committed in): the request reads `made` from then on, the state that commit made,
   * or, without one, proves its next read current again, so it reads what that fiber recorded.
   */
  readonly catchUp: (tenantId: TenantId, made?: TenantState) => Effect.Effect<void>
  /**
   * The tenant as committed now, whatever the calling fiber's request has read: for work done on
   * behalf of several requests (a batch of their writes).
   */
  readonly latest: (tenantId: TenantId) => Effect.Effect<TenantState, StoreUnavailable>
  /** The tenant's state as the store holds it now: for a decision the store found stale. */
  readonly refresh: (tenantId: TenantId) => Effect.Effect<TenantState, StoreUnavailable>
  /**
   * A commit of `writes` decided on `decidedOn` took the tenant from `step.before` to
   * `step.after`: the state at `after` is made from the one at `before` (the cached state, or
   * the one decided on), and the request reads it from now on. A commit whose predecessor has
   * not been seen yet (commits of one process may finish out of order) waits for it; the
   * request reads the store meanwhile. Answers the state made, if one was. `made`: `decidedOn`
   * with `writes` made, as the committer made it already; taken when nothing came between, so
   * what was derived of it while deciding is not derived again.
   */
  readonly committed: (
    tenantId: TenantId,
    decidedOn: TenantState,
    writes: ReadonlyArray<Change.Write>,
    step: { readonly before: Revision; readonly after: Revision },
    made?: TenantState
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

/** A tenant that is gone. */
const EMPTY: TenantSnapshot = { revision: "gone", rows: Kind.emptyRows(), vpcVersions: {}, scopeVersion: 0 }

/** A map that forgets its least recently used entries beyond `capacity`. */
class Lru<K, V> {
  private readonly entries = new Map<K, V>()
  constructor(readonly capacity: number) {}
  get size() {
    return this.entries.size
  }
  /** The value, without making it the most recently used. */
  peek(key: K): V | undefined {
    return this.entries.get(key)
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
  // Sole writer only: bumped after every change to what no tenant's state holds (a tenant's
  // record, the provider configuration).
  let globalGeneration = 0
  /**
   * Sole writer only: views made by this process's own commits, each with the global generation
   * it was made in. Every change to a tenant's rows is a commit of this process, handed over
   * here, so such a view is the tenant's latest while it is still the cached one, no commit of
   * the tenant is under way, and nothing global changed (a tenant deleted): a read off a request
   * (a convergence) is served it without reading the revision. Proven when its commit ends
   * (`writing`); a load replaces the view, and so the proof.
   */
  const provenLatest = new WeakMap<TenantState, number>()
  /** Sole writer only: the global generation `config` was read in (it holds while that is current). */
  let configGeneration: number | undefined
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

  /** The provider configuration as the store holds it now, kept as `config`. */
  const loadConfig = Effect.suspend(() => {
    const at = globalGeneration
    return Effect.map(store.snapshots.providerConfig, (loaded) => {
      config = loaded
      configGeneration = at
      return loaded.config
    })
  })

  /** The provider configuration read alone; where this process is the only writer, once per change of it. */
  const configNow: Effect.Effect<Option.Option<ProviderConfigRecord>, StoreUnavailable> = Effect.suspend(() => {
    if (!store.soleWriter) return store.providerConfig.get
    return config !== undefined && configGeneration === globalGeneration ? Effect.succeed(config.config) : loadConfig
  })

  /** The provider configuration at `revision` or later: the cached one when at it, loaded otherwise. */
  const configAt = (revision: Revision): Effect.Effect<Option.Option<ProviderConfigRecord>, StoreUnavailable> =>
    Effect.suspend(() =>
      config !== undefined && config.revision === revision ? Effect.succeed(config.config) : loadConfig
    )

  const providerConfig: ReadModelShape["providerConfig"] = Effect.flatMap(sessionOf, (session) => {
    if (session === undefined || session.configChanged) return configNow
    return configAt(session.providerConfigRevision)
  })

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

  /**
   * The tenant as committed now, for a read no session proved current (work off the request: a
   * convergence, the controller) or one a session's own commits outran: its revision read alone,
   * then the cached view when it is at that revision or later, loaded (once) otherwise.
   */
  const current = (tenantId: TenantId) =>
    Effect.suspend(() => {
      const proven = provenView(tenantId)
      return proven !== undefined ? Effect.succeed(proven) : Effect.map(revisionsThenView(tenantId), ([state]) => state)
    })

  /** The cached view of the tenant when it is proven the latest (`provenLatest`). */
  const provenView = (tenantId: TenantId) => {
    const cached = views.get(tenantId)
    return cached !== undefined && provenLatest.get(cached) === globalGeneration && !committing.has(tenantId)
      ? cached
      : undefined
  }

  /** Both revisions read, and the tenant's view at its revision; with the provider configuration's revision. */
  const revisionsThenView = (tenantId: TenantId) =>
    Effect.flatMap(
      Effect.zip(store.snapshots.revisions(tenantId), FiberRef.get(insideCommit)),
      ([revisions, inside]) =>
        Effect.map(
          Option.match(revisions.tenant, {
            onNone: () => Effect.succeed(TenantState.fromSnapshot(tenantId, EMPTY)),
            // A revision this process is still handing over is waited for, as a request's
            // authentication waits (a commit does not wait: two could wait for each other).
            onSome: (revision) =>
              Effect.map(
                inside ? loadAt(tenantId, revision) : viewOf(tenantId, revision),
                Option.getOrElse(() => TenantState.fromSnapshot(tenantId, EMPTY))
              )
          }),
          (state) => [state, revisions.providerConfig] as const
        )
    )

  const stateAndConfig: ReadModelShape["stateAndConfig"] = (tenantId) =>
    Effect.suspend(() => {
      const proven = provenView(tenantId)
      if (proven !== undefined) return Effect.map(configNow, (config) => ({ state: proven, config }))
      return Effect.flatMap(
        revisionsThenView(tenantId),
        ([state, configRevision]) => Effect.map(configAt(configRevision), (config) => ({ state, config }))
      )
    })

  const stateOf: ReadModelShape["stateOf"] = (tenantId) =>
    Effect.flatMap(sessionOf, (session) => {
      if (session === undefined || session.view.tenantId !== tenantId) return current(tenantId)
      if (!session.behind) return Effect.succeed(session.view)
      // Read after the request's commit, so holding it: the request reads from it from now on,
      // unless it fell behind again meanwhile (another of its fibers waited on a convergence).
      const epoch = session.epoch
      return Effect.tap(current(tenantId), (loaded) =>
        Effect.sync(() => {
          if (session.epoch === epoch) session.advance(loaded)
        }))
    })

  const catchUp: ReadModelShape["catchUp"] = (tenantId, made) =>
    Effect.flatMap(sessionOf, (session) =>
      Effect.sync(() => {
        if (session === undefined || session.view.tenantId !== tenantId) return
        if (made === undefined) session.fallBehind()
        else session.advance(made)
      }))

  /** The commits of each tenant this process has under way, each settling once handed over (or failed). */
  const committing = new Map<TenantId, Set<Deferred.Deferred<void>>>()

  /** Sole writer only: the view each tenant's last hand-over made, for its commit's end to prove latest. */
  const handedOver = new Map<TenantId, TenantState>()

  const writing: ReadModelShape["writing"] = (tenantId, self) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const settled = Deferred.unsafeMake<void>(FiberId.none)
        const under = committing.get(tenantId)
        if (under === undefined) committing.set(tenantId, new Set([settled]))
        else under.add(settled)
        return { settled, global: globalGeneration }
      }),
      () => Effect.locally(self, insideCommit, true),
      ({ global, settled }, exit) =>
        Effect.suspend(() => {
          const under = committing.get(tenantId)
          under?.delete(settled)
          if (under?.size === 0) committing.delete(tenantId)
          const cached = views.peek(tenantId)
          if (cached !== undefined) {
            // The view its hand-over made is the latest when it is still the cached one, the commit
            // ended well, and nothing else was under way or changed meanwhile; a commit that failed
            // may have written without handing over, so the view is no longer proven latest.
            if (
              exit._tag === "Success" && under?.size === 0 && early.size === 0 && global === globalGeneration &&
              handedOver.get(tenantId) === cached
            ) provenLatest.set(cached, global)
            else provenLatest.delete(cached)
          }
          if (under === undefined || under.size === 0) handedOver.delete(tenantId)
          return Deferred.succeed(settled, undefined)
        })
    )

  /** Commits seen before their predecessor, by the revision they follow (`tenant@revision`). */
  const early = new Map<string, { readonly writes: ReadonlyArray<Change.Write>; readonly after: Revision }>()

  const committed: ReadModelShape["committed"] = (tenantId, decidedOn, writes, step, madeAlready) =>
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
          if (session !== undefined && session.view.tenantId === tenantId) session.fallBehind()
          return undefined
        }
        const made = madeAlready !== undefined && base === decidedOn
          ? madeAlready.at(step.after)
          : base.apply(writes, step.after)
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
        if (store.soleWriter) handedOver.set(tenantId, latest)
        if (session !== undefined && session.view.tenantId === tenantId) session.advance(made)
        return made
      }))

  const model = ReadModel.of({
    stateOf,
    stateAndConfig,
    refresh: load,
    committed,
    catchUp,
    latest: current,
    writing,
    authenticate,
    providerConfig,
    committedGlobal: Effect.flatMap(sessionOf, (session) =>
      Effect.sync(() => {
        generation++
        globalGeneration++
        if (session !== undefined) session.configChanged = true
      })),
    size: Effect.sync(() => ({ tenants: views.size, capacity }))
  })
  return model
}

/** The read model of the Store in context. */
export const layer = (options: Options = {}): Layer.Layer<ReadModel, never, Store> =>
  Layer.effect(ReadModel, Effect.map(Store, (store) => make(store, options)))
