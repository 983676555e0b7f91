/**
 * Work whose cost grows with what a tenant owns, done so that it never holds the process: in
 * slices of a few milliseconds, each followed by a turn of the event loop, so the requests of
 * every other tenant that arrived meanwhile are served between slices. One process serves every
 * tenant on one thread; a computation that ran to its end at once would make them all wait.
 *
 * Such work also gives way: while other requests are in flight (`Pressure`, which the server
 * measures), a slice waits for them, up to `GIVE_WAY_MILLIS`, before it runs. Cheap requests go
 * first, as a higher priority level does in Kubernetes' API Priority and Fairness; the expensive
 * work still gets a slice at least that often, however busy the process is. So requests in flight
 * that are not running (waiting on the store, or a client sending its body slowly) can slow such
 * work about elevenfold at most, never stop it. (Waiting less, at most as long as the work has run,
 * doubled another tenant's p99 beside a 2,000-pod neighbour on PostgreSQL: 65 ms against 33 ms.)
 */
import { Context, Effect } from "effect"

/** How long a slice runs before it lets the event loop turn. */
export const SLICE_MILLIS = 2

/** The longest a slice waits for other requests in flight before it runs all the same. */
export const GIVE_WAY_MILLIS = 20

export interface PressureShape {
  /** How many requests are in flight now that are not such work. */
  readonly others: () => number
}

/** Who else is waiting on the process: no one unless whoever runs the work says (the server does). */
export class Pressure extends Context.Reference<Pressure>()("@tenet/core/Cooperative/Pressure", {
  defaultValue: (): PressureShape => ({ others: () => 0 })
}) {}

const timer = (millis: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const timeout = setTimeout(() => resume(Effect.void), millis)
    return Effect.sync(() => clearTimeout(timeout))
  })

/**
 * One turn of the event loop: a timer, which fires only after the loop has polled for I/O (a
 * microtask, as `Effect.yieldNow` takes, would run before any of it).
 */
export const turn: Effect.Effect<void> = timer(0)

/** A turn, then more while other requests are in flight, up to `GIVE_WAY_MILLIS` in all. */
const giveWay = (pressure: PressureShape): Effect.Effect<void> =>
  Effect.suspend(() => {
    const until = performance.now() + GIVE_WAY_MILLIS
    const wait: Effect.Effect<void> = Effect.suspend(() =>
      pressure.others() > 0 && performance.now() < until ? Effect.zipRight(timer(1), wait) : Effect.void
    )
    return Effect.zipRight(turn, wait)
  })

/**
 * `step` over `items`, in order, until it answers false or the items end, a slice at a time.
 * Interruptible between slices: a caller that hangs up stops the work.
 */
export const forEach = <A>(items: Iterable<A>, step: (item: A) => boolean): Effect.Effect<void> =>
  Effect.flatMap(Pressure, (pressure) => {
    const iterator = items[Symbol.iterator]()
    const slice: Effect.Effect<void> = Effect.suspend(() => {
      const started = performance.now()
      for (;;) {
        const next = iterator.next()
        if (next.done === true || !step(next.value)) return Effect.void
        if (performance.now() - started >= SLICE_MILLIS) return Effect.zipRight(giveWay(pressure), slice)
      }
    })
    return slice
  })
