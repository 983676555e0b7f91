/**
 * A kind's objects kept in process, as client-go's informers keep them: list once, then watch
 * from the list's resourceVersion with bookmarks, watch again from the last version seen when
 * the server ends a watch, and list again when it says that version is gone (410) or not yet
 * reached. A watch that breaks is retried with backoff, by a list first; until one holds again
 * the cache is `Stale`, since then.
 *
 * Unlike client-go, a broken watch is not resumed from its version: an API server that went away
 * may come back on another etcd (wiped, or restored from a backup) whose versions have already
 * passed the one we hold, and a watch from it would then hold while the cache keeps objects the
 * cluster no longer has, and never learns it. A list per kind per outage is the price.
 *
 * Tenet's own writes are observed as they return (`observe`, `forget`), so a read after a write
 * sees it before the watch delivers it; an event never replaces a newer version of the same
 * object (same uid), and a list never replaces what Tenet wrote while it was being read.
 * Objects are kept as `keep` projects them (as client-go's informers take a transform): by
 * default without `metadata.managedFields`, which is most of a server-side-applied object's size.
 */
import { Clock, Deferred, Duration, Effect, Option } from "effect"
import type { KubeApiShape, LiveObject, WatchEvent } from "./KubeApi.js"
import { KubeError, WATCH_TIMEOUT_SECONDS } from "./KubeApi.js"
import type { Kind } from "./Manifests.js"

/** Whether what the cache holds is known to be current. */
export type Freshness =
  | { readonly _tag: "Current" }
  | { readonly _tag: "Stale"; readonly since: Date; readonly reason: string }

export interface Informer {
  readonly kind: Kind
  /** Succeeds once the first list is in; fails after `timeout` without one. */
  readonly synced: (timeout: Duration.DurationInput) => Effect.Effect<void, KubeError>
  readonly freshness: () => Freshness
  /** The objects whose `label` has `value` (one of the informer's `indexes`). */
  readonly byLabel: (label: string, value: string) => ReadonlyArray<LiveObject>
  readonly get: (name: string, namespace?: string) => LiveObject | undefined
  /** Every object held. */
  readonly all: () => ReadonlyArray<LiveObject>
  /** An object as a write of Tenet's returned it. */
  readonly observe: (object: LiveObject) => void
  /** An object Tenet deleted, as the delete returned it (else as last seen). */
  readonly forget: (name: string, namespace: string | undefined, deleted: Option.Option<LiveObject>) => void
}

export interface Options {
  readonly kind: Kind
  readonly selector: string
  /** The labels objects are looked up by. */
  readonly indexes: ReadonlyArray<string>
  /** The first retry's delay after a failed list or watch; doubles up to 30 seconds. */
  readonly backoff?: Duration.DurationInput
  /** What is kept of an object: the fields its readers read (default: all but `managedFields`). */
  readonly keep?: (object: LiveObject) => LiveObject
  /**
   * Each change a watch delivers, or a list after the first finds, with the object whole and as
   * the cache held it before (as `keep` projected it; none when it was not held). Not called
   * for the first list, nor for events older than what the cache holds (Tenet's own writes,
   * observed as they returned).
   */
  readonly onChange?: (change: Change) => void
}

export interface Change {
  readonly type: "ADDED" | "MODIFIED" | "DELETED"
  readonly object: LiveObject
  readonly previous: LiveObject | undefined
}

const keyOf = (name: string | undefined, namespace: string | undefined) => `${namespace ?? ""}/${name ?? ""}`
const objectKey = (o: LiveObject) => keyOf(o.metadata?.name, o.metadata?.namespace)
const versionOf = (o: { readonly metadata?: { readonly resourceVersion?: string } } | undefined) =>
  o?.metadata?.resourceVersion

/**
 * Whether version `a` is older than `b`. Versions are opaque to clients, but API servers serve
 * etcd revisions, which are ordered integers; anything else is not taken as older.
 */
export const older = (a: string | undefined, b: string | undefined): boolean =>
  a !== undefined && b !== undefined && /^\d+$/.test(a) && /^\d+$/.test(b) &&
  (a.length < b.length || (a.length === b.length && a < b))

/** The API server's answer to a watch from a version it has not reached (client-go relists on it). */
const tooLarge = (message: string | undefined) => message !== undefined && /too large resource version/i.test(message)

/** A deleted object's last version, kept until its event arrives so late events cannot revive it. */
interface Tombstone {
  readonly tombstone: true
  readonly metadata: { readonly resourceVersion?: string; readonly uid?: string }
}
type Entry = LiveObject | Tombstone

/**
 * Whether two entries can be the same object: not when both name their `uid` and the uids
 * differ (made again; after an etcd is replaced its versions say nothing of the old one's).
 */
const same = (a: { readonly metadata?: { readonly uid?: string } } | undefined, b: typeof a) =>
  a?.metadata?.uid === undefined || b?.metadata?.uid === undefined || a.metadata.uid === b.metadata.uid

/** Whether `next` is an older version of the object `held` is. */
const olderThan = (next: Entry | undefined, held: Entry | undefined) =>
  same(next, held) && older(versionOf(next), versionOf(held))

/** An object without its field managers' bookkeeping. */
export const withoutManagedFields = (object: LiveObject): LiveObject => {
  if (object.metadata?.managedFields === undefined) return object
  const { managedFields: _, ...metadata } = object.metadata
  return { ...object, metadata }
}
const live = (entry: Entry | undefined): LiveObject | undefined =>
  entry === undefined || "tombstone" in entry ? undefined : entry

export const make = Effect.fn("Informer.make")(function*(kube: KubeApiShape, options: Options) {
  const keep = options.keep ?? withoutManagedFields
  const entries = new Map<string, Entry>()
  const indexes = new Map<string, Map<string, Set<string>>>(options.indexes.map((label) => [label, new Map()]))
  const first = yield* Deferred.make<void>()
  let freshness: Freshness = {
    _tag: "Stale",
    since: new Date(yield* Clock.currentTimeMillis),
    reason: "not listed yet"
  }

  const index = (key: string, object: LiveObject | undefined, add: boolean) => {
    for (const [label, byValue] of indexes) {
      const value = object?.metadata?.labels?.[label]
      if (value === undefined) continue
      const keys = byValue.get(value) ?? new Set<string>()
      if (add) keys.add(key)
      else keys.delete(key)
      if (keys.size === 0) byValue.delete(value)
      else byValue.set(value, keys)
    }
  }
  const put = (key: string, entry: Entry) => {
    let next = entry
    const previous = entries.get(key)
    if (olderThan(next, previous)) return
    if (!("tombstone" in next)) next = keep(next)
    // What the object was when deleted does not bring it back.
    if (
      previous !== undefined && "tombstone" in previous && same(previous, next) &&
      versionOf(previous) === versionOf(next)
    ) return
    index(key, live(previous), false)
    entries.set(key, next)
    index(key, live(next), true)
  }
  const remove = (key: string) => {
    index(key, live(entries.get(key)), false)
    entries.delete(key)
  }

  /**
   * A list replaces what the cache holds, except what Tenet wrote after the list was read. A
   * list after the first tells `onChange` what it changed, as the watch it stands in for would
   * have (an object gone is `DELETED`): what happened while no watch held (the API server
   * restarted on a wiped etcd, say) is not lost. A list `rewound` (read at a version older than
   * one already seen: another etcd) is of another history, whose versions say nothing of the
   * cache's: it replaces everything but what Tenet wrote or deleted since the list began.
   */
  const replace = (
    items: ReadonlyArray<LiveObject>,
    resourceVersion: string,
    relisted: boolean,
    rewound: boolean
  ) => {
    const listed = new Set(items.map(objectKey))
    const ownSince = new Set(ownDuringList)
    ownDuringList.clear()
    listing = false
    for (const [key, entry] of entries) {
      if (listed.has(key) || ownSince.has(key)) continue
      if (!rewound && older(resourceVersion, versionOf(entry))) continue
      const gone = live(entry)
      remove(key)
      if (relisted && gone !== undefined) options.onChange?.({ type: "DELETED", object: gone, previous: gone })
    }
    for (const item of items) {
      const key = objectKey(item)
      const held = entries.get(key)
      if (rewound) {
        if (ownSince.has(key)) continue
        remove(key)
      } else if (same(item, held) && (versionOf(held) === versionOf(item) || older(versionOf(item), versionOf(held)))) {
        continue
      }
      put(key, item)
      if (relisted) {
        options.onChange?.({ type: held === undefined ? "ADDED" : "MODIFIED", object: item, previous: live(held) })
      }
    }
  }

  const apply = (event: WatchEvent & { readonly type: Change["type"] }) => {
    const key = objectKey(event.object)
    const held = entries.get(key)
    if (olderThan(event.object, held)) return
    // A version already held is Tenet's own write, observed as it returned; what becomes of an
    // object Tenet deleted (a tombstone) until it is gone (finalizers removed, then the delete)
    // is its own too; made again, it is not.
    const tombstoned = held !== undefined && "tombstone" in held && same(held, event.object)
    const own = (same(held, event.object) && versionOf(held) !== undefined &&
      versionOf(event.object) === versionOf(held)) ||
      (tombstoned && event.type !== "ADDED")
    if (event.type === "DELETED") remove(key)
    else if (!own) put(key, event.object)
    if (!own) options.onChange?.({ type: event.type, object: event.object, previous: live(held) })
  }

  const stale = (reason: string) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      if (freshness._tag === "Current") freshness = { _tag: "Stale", since: new Date(now), reason }
    })

  const base = Duration.toMillis(options.backoff ?? "200 millis")
  const cap = Duration.toMillis("30 seconds")
  let failures = 0
  /** The version last seen (none before the first list), and whether the next step lists. */
  let version: string | null = null
  let listNext = true
  /** Keys Tenet wrote or deleted while a list was being read: newer than what it reads. */
  let listing = false
  const ownDuringList = new Set<string>()

  /** The cache from a list, and the version it was read at; the list is not held past it. */
  const relist = Effect.suspend(() => {
    ownDuringList.clear()
    listing = true
    return Effect.map(kube.snapshot(options.kind, options.selector), (list) => {
      replace(list.items, list.resourceVersion, version !== null, older(list.resourceVersion, version ?? undefined))
      return list.resourceVersion
    })
  }).pipe(Effect.ensuring(Effect.sync(() => {
    listing = false
  })))

  /** A list when the watch cannot go on from the version last seen, then one watch from it. */
  const step = Effect.gen(function*() {
    if (listNext || version === null) {
      version = yield* relist
      listNext = false
      // After a break, current only once a watch holds again (`onOpen`): a list alone, between
      // watches refused, would say current for as long as it takes the next one to be refused.
      if (failures === 0) freshness = { _tag: "Current" }
      yield* Deferred.succeed(first, undefined)
    }
    const began = yield* Clock.currentTimeMillis
    yield* kube.watch(options.kind, options.selector, version, {
      onOpen: () => {
        failures = 0
        freshness = { _tag: "Current" }
      },
      onEvent: (event) => {
        if (event.type === "ERROR") {
          // The version is too old to watch from (compacted), or newer than the server has (its
          // etcd was replaced): list again.
          if (event.object.code === 410 || tooLarge(event.object.message)) listNext = true
          return
        }
        if (event.type !== "BOOKMARK") apply(event as WatchEvent & { readonly type: Change["type"] })
        version = versionOf(event.object) ?? version
      }
    }).pipe(
      // The server ends each watch by its timeout; one that outlives it without a word is dead.
      Effect.timeoutFail({
        duration: Duration.seconds(WATCH_TIMEOUT_SECONDS + 30),
        onTimeout: () => new KubeError({ operation: `watch ${options.kind.kind}`, status: 0, detail: "went silent" })
      })
    )
    // Ended cleanly well before its timeout: the server is going away (a graceful stop), and
    // may come back on another etcd, as after a break.
    if ((yield* Clock.currentTimeMillis) - began < (WATCH_TIMEOUT_SECONDS - 10) * 1000) listNext = true
  })

  const retry = (e: KubeError) =>
    e.status === 410 || tooLarge(e.detail)
      ? Effect.sync(() => {
        listNext = true
      })
      : Effect.gen(function*() {
        listNext = true
        yield* stale(e.message)
        failures++
        const delay = Math.min(cap, base * 2 ** (failures - 1)) * (0.8 + Math.random() * 0.4)
        yield* Effect.logWarning(`${options.kind.kind} cache: ${e.message}; again in ${Math.round(delay)} ms`)
        yield* Effect.sleep(Duration.millis(delay))
      })

  yield* Effect.forkScoped(Effect.forever(Effect.catchAll(step, retry)))

  const informer: Informer = {
    kind: options.kind,
    synced: (timeout) =>
      Deferred.await(first).pipe(
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () =>
            new KubeError({
              operation: `list ${options.kind.kind}`,
              status: 0,
              detail: freshness._tag === "Stale" ? freshness.reason : "not listed yet"
            })
        })
      ),
    freshness: () => freshness,
    byLabel: (label, value) =>
      [...(indexes.get(label)?.get(value) ?? [])].flatMap((key) => {
        const object = live(entries.get(key))
        return object === undefined ? [] : [object]
      }),
    get: (name, namespace) => live(entries.get(keyOf(name, namespace))),
    all: () => [...entries.values()].flatMap((entry) => live(entry) ?? []),
    observe: (object) => {
      if (listing) ownDuringList.add(objectKey(object))
      put(objectKey(object), object)
    },
    forget: (name, namespace, deleted) => {
      const key = keyOf(name, namespace)
      const last = Option.getOrElse(deleted, () => live(entries.get(key)))
      if (listing) ownDuringList.add(key)
      if (last !== undefined) {
        const { resourceVersion, uid } = last.metadata ?? {}
        put(key, {
          tombstone: true,
          metadata: { ...(resourceVersion !== undefined && { resourceVersion }), ...(uid !== undefined && { uid }) }
        })
      }
    }
  }
  return informer
})
