/**
 * The change stream, served by every replica from the store (`Store.EventRepository`), never
 * from what this process wrote: one poller per process reads the events after the last it saw
 * (every 100 ms while anyone watches, every second otherwise) and hands them, as consecutive
 * batches, to the watchers of this process. A watcher first reads its backlog from the store
 * (after `since`), then takes the batches, each event once: the batches it was subscribed to
 * before its backlog read cover whatever came after that read. One that falls so far behind
 * that batches were dropped for it ends, and resumes from the store with its last revision.
 */
import { Chunk, Context, Duration, Effect, Layer, Option, PubSub, Ref, Schedule, Stream } from "effect"
import type { StoredEvent } from "../domain/ChangeEvent.js"
import * as Quota from "../domain/Quota.js"
import { Gone, InvalidInput, TooManyRequests } from "../Errors.js"
import type { ServiceUnavailable } from "../Errors.js"
import { storeUnavailable } from "../ports/Failures.js"
import { Store } from "../ports/Store.js"

/** What a watcher is sent: an event, or how far it has got (`revision`) when quiet. */
export type Item =
  | { readonly _tag: "Event"; readonly event: StoredEvent }
  | { readonly _tag: "Bookmark"; readonly revision: number }

export interface Options {
  /** How often a quiet stream is told how far it has got. Default 30 s. */
  readonly bookmarkEvery?: Duration.DurationInput
  /** How long events are kept to resume from (`compact`). Default 1 hour. */
  readonly retention?: Duration.DurationInput
  /** How often the store is read while anyone watches. Default 100 ms. */
  readonly pollEvery?: Duration.DurationInput
}

export interface ChangeFeedShape {
  /**
   * The events of `tenant` (every tenant's: null) after `since` (from now, without it): a
   * bookmark once the backlog is sent, then each change as it is committed, anywhere. `Gone`
   * when `since` is older than what is kept.
   */
  readonly watch: (from: {
    readonly tenant: string | null
    readonly since: number | undefined
    /**
     * The most streams of `tenant` this process holds open at once (its quota): one more is
     * refused as it is asked for, or, of a burst, fails as it starts.
     */
    readonly limit?: number | undefined
  }) => Effect.Effect<
    Stream.Stream<Item, Gone | InvalidInput | ServiceUnavailable | TooManyRequests>,
    Gone | InvalidInput | ServiceUnavailable | TooManyRequests
  >
  /** Forgets the events older than the retention; answers how many. */
  readonly compact: Effect.Effect<number, ServiceUnavailable>
  /** Watchers connected to this process now. */
  readonly watchers: Effect.Effect<number>
  /** `tenant`'s watchers connected to this process now. */
  readonly watchersOf: (tenant: string) => number
}

/** Events read from the store after `after`, up to `upTo`: consecutive batches chain. */
interface Batch {
  readonly after: number
  readonly upTo: number
  readonly events: ReadonlyArray<StoredEvent>
}

const PAGE = 500
/** Batches a watcher may fall behind by before it is ended (and resumes from the store). */
const BEHIND = 4096

export class ChangeFeed extends Context.Tag("@tenet/core/ChangeFeed")<ChangeFeed, ChangeFeedShape>() {
  static readonly make = (options: Options = {}) =>
    Effect.gen(function*() {
      const store = yield* Store
      const bookmarkEvery = Duration.decode(options.bookmarkEvery ?? Duration.seconds(30))
      const retention = Duration.toMillis(options.retention ?? Duration.hours(1))
      const pollEvery = Duration.decode(options.pollEvery ?? Duration.millis(100))
      const hub = yield* PubSub.sliding<Batch>(BEHIND)
      const subscribers = yield* Ref.make(0)
      const latestOf = (tenant: string | null) =>
        store.events.after(Number.MAX_SAFE_INTEGER, tenant, 0).pipe(storeUnavailable)
      // Where the poller is: read from the store on its first pass (not here: a store down at
      // start must not stop the server). A watcher whose backlog read ended before that point
      // sees a batch that does not follow it, and ends to resume from the store.
      const position = yield* Ref.make<number | undefined>(undefined)

      /** Reads and publishes what came after the last batch, page by page. */
      const poll = Effect.gen(function*() {
        const known = yield* Ref.get(position)
        if (known === undefined) {
          yield* Ref.set(position, (yield* latestOf(null)).latest)
          return
        }
        let last = known
        for (;;) {
          const page = yield* store.events.after(last, null, PAGE).pipe(storeUnavailable)
          const upTo = page.events.length === PAGE ? page.events[page.events.length - 1]!.revision : page.latest
          if (upTo <= last) return
          yield* PubSub.publish(hub, { after: last, upTo, events: page.events })
          last = upTo
          yield* Ref.set(position, last)
          if (page.events.length < PAGE) return
        }
      })
      yield* Effect.forkScoped(
        poll.pipe(
          Effect.catchAll((e) => Effect.logWarning("could not read the change stream's events", e.detail)),
          Effect.zipRight(Effect.flatMap(Ref.get(subscribers), (n) => Effect.sleep(n > 0 ? pollEvery : "1 second"))),
          Effect.forever
        )
      )

      /** `since` checked against what the store keeps now. */
      const check = (
        tenant: string | null,
        since: number | undefined
      ): Effect.Effect<number, Gone | InvalidInput | ServiceUnavailable> =>
        Effect.flatMap(latestOf(tenant), (now): Effect.Effect<number, Gone | InvalidInput> => {
          if (since !== undefined && since < now.horizon) {
            return Effect.fail(
              new Gone({
                detail: `revision ${since} is older than the oldest kept (${now.horizon}); list again and watch ` +
                  "from the first bookmark"
              })
            )
          }
          if (since !== undefined && since > now.latest) {
            return Effect.fail(
              new InvalidInput({
                detail: `since: revision ${since} is ahead of the latest (${now.latest})`,
                errors: [{ field: "since", message: `is ahead of the latest revision (${now.latest})` }]
              })
            )
          }
          return Effect.succeed(since ?? now.latest)
        })

      /** Each tenant's streams open here: a place is taken as its stream starts, given back as it ends. */
      const open = new Map<string, number>()
      const opened = (tenant: string, delta: number) => {
        const n = (open.get(tenant) ?? 0) + delta
        if (n === 0) open.delete(tenant)
        else open.set(tenant, n)
      }
      const isFull = (tenant: string | null, limit: number | undefined) =>
        tenant !== null && limit !== undefined && (open.get(tenant) ?? 0) >= limit
      const refused = (limit: number) =>
        Effect.fail(new TooManyRequests({ detail: Quota.streamsPassed(limit), retry_after: 5 }))
      /** Whether `tenant` may open one more stream, as the request is decided. */
      const mayOpen = (tenant: string | null, limit: number | undefined) =>
        Effect.suspend(() => isFull(tenant, limit) ? refused(limit!) : Effect.void)
      /**
       * A place among `tenant`'s streams, held by the stream's scope: a stream that never runs
       * holds none. Asked for again here, checked and taken in one step, so streams of a burst
       * that all passed the request's check cannot together pass the quota: the one too many fails.
       */
      const place = (tenant: string | null, limit: number | undefined) =>
        tenant === null ? Effect.void : Effect.acquireRelease(
          Effect.suspend(() => {
            if (isFull(tenant, limit)) return refused(limit!)
            opened(tenant, 1)
            return Effect.void
          }),
          () => Effect.sync(() => opened(tenant, -1))
        )

      const watch: ChangeFeedShape["watch"] = ({ limit, since, tenant }) =>
        Effect.zipRight(
          mayOpen(tenant, limit),
          Effect.map(
            check(tenant, since),
            (start) =>
              Stream.unwrapScoped(Effect.gen(function*() {
                yield* place(tenant, limit)
                // Subscribed before the backlog is read: every batch after that read is in the queue.
                const batches = yield* PubSub.subscribe(hub)
                yield* Effect.acquireRelease(
                  Ref.update(subscribers, (n) => n + 1),
                  () => Ref.update(subscribers, (n) => n - 1)
                )
                // Compacted since the check: resuming would skip what is gone.
                yield* check(tenant, start)
                let seen = start
                const backlog = Stream.paginateChunkEffect(seen, (after) =>
                  Effect.map(store.events.after(after, tenant, PAGE).pipe(storeUnavailable), (page) => {
                    const full = page.events.length === PAGE
                    seen = full ? page.events[PAGE - 1]!.revision : Math.max(page.latest, after)
                    const items = Chunk.fromIterable(page.events.map((event): Item => ({ _tag: "Event", event })))
                    return [items, full ? Option.some(seen) : Option.none()] as const
                  }))
                // A batch that does not follow what was seen means batches were dropped for this
                // watcher (it fell behind): the stream ends, and the client resumes from the store.
                const live = Stream.fromQueue(batches).pipe(
                  Stream.takeWhile((batch) => batch.after <= seen),
                  Stream.mapConcat((batch) => {
                    const fresh = batch.events.filter((e) =>
                      e.revision > seen && (tenant === null || e.tenant_id === tenant)
                    )
                    seen = Math.max(seen, batch.upTo)
                    return fresh.map((event): Item => ({ _tag: "Event", event }))
                  })
                )
                const bookmark = Effect.sync((): Item => ({ _tag: "Bookmark", revision: seen }))
                const bookmarks = Stream.repeatEffectWithSchedule(bookmark, Schedule.spaced(bookmarkEvery)).pipe(
                  Stream.drop(1)
                )
                return Stream.concat(backlog, Stream.fromEffect(bookmark)).pipe(
                  Stream.concat(Stream.merge(live, bookmarks, { haltStrategy: "left" }))
                )
              }))
          )
        )

      const compact = Effect.flatMap(
        Effect.clockWith((clock) => clock.currentTimeMillis),
        (now) => store.events.compact(now - retention).pipe(storeUnavailable)
      )

      return ChangeFeed.of({
        watch,
        compact,
        watchers: Ref.get(subscribers),
        watchersOf: (tenant) => open.get(tenant) ?? 0
      })
    })

  static readonly layer = (options?: Options) => Layer.scoped(ChangeFeed, ChangeFeed.make(options))
}
