/**
 * A gate on the store's commits, for tests of writes in batches: armed, it holds the next commit
 * until released, so the writes sent meanwhile queue behind it (`changes/Pipeline.ts`) and are
 * committed together, whatever the machine's speed.
 */
import { Store } from "@tenet/core"
import { Deferred, Effect, Layer } from "effect"

const gate = {
  armed: false,
  tenant: "",
  entered: Deferred.unsafeMake<Store.Commit>(undefined as never),
  release: Deferred.unsafeMake<void>(undefined as never)
}

/**
 * The tenant's next commit (through any process with the decorator: other tests' servers may
 * share this module) is held: `entered` with it when it is, until `release`. Armed again while a
 * commit is held, it holds the next one after that (the release of the first is kept).
 */
export const arm = (tenant: string) =>
  Effect.gen(function*() {
    gate.entered = yield* Deferred.make<Store.Commit>()
    gate.release = yield* Deferred.make<void>()
    gate.tenant = tenant
    gate.armed = true
    return { entered: gate.entered, release: gate.release }
  })

/** No commit held any more (one armed but never reached is not waited for). */
export const disarm = Effect.suspend(() => {
  gate.armed = false
  return Deferred.succeed(gate.release, undefined)
})

/** The store with its commits behind the gate. */
export const decorator: Layer.Layer<Store.Store, never, Store.Store> = Layer.effect(
  Store.Store,
  Effect.map(Store.Store, (store) =>
    Store.Store.of({
      ...store,
      commit: (change) =>
        Effect.suspend(() => {
          if (!gate.armed || change.tenant !== gate.tenant) return store.commit(change)
          gate.armed = false
          const { entered, release } = gate
          return Deferred.succeed(entered, change).pipe(
            Effect.zipRight(Deferred.await(release)),
            Effect.zipRight(store.commit(change))
          )
        })
    }))
)

/**
 * `opener`, a write of `tenant`'s, run until its commit is held, then `rest` sent and given
 * `queue` to be queued behind it, then the commit released: every outcome, the opener's first.
 * An opener that commits nothing (refused, or nothing to do) holds nothing: the rest then go as
 * they come.
 */
export const behindAHeldCommit = <A, E, R>(
  tenant: string,
  opener: Effect.Effect<A, E, R>,
  rest: ReadonlyArray<Effect.Effect<A, E, R>>,
  queue: Effect.Effect<void> = Effect.sleep("500 millis")
) =>
  Effect.gen(function*() {
    const { entered } = yield* arm(tenant)
    const first = yield* Effect.fork(opener)
    yield* Effect.raceFirst(Deferred.await(entered), first.await)
    const others = yield* Effect.fork(Effect.all(rest, { concurrency: "unbounded" }))
    yield* queue
    yield* disarm
    return [yield* first.await.pipe(Effect.flatten), ...(yield* others.await.pipe(Effect.flatten))] as const
  })
