/**
 * Work whose cost grows with what a tenant owns, done so that it never holds the process: in
 * slices of a few milliseconds, each followed by a turn of the event loop, so the requests of
 * every other tenant that arrived meanwhile are served between slices. One process serves every
 * tenant on one thread; a computation that ran to its end at once would make them all wait.
 *
 * Such work also gives way: while other requests are in flight (`Pressure`, which the server
 * measures), a slice waits for them, up to `GIVE_WAY_MILLIS`, before it runs. Cheap requests go
 * first, as a higher priority level does in Kubernetes' API Priority and Fairness. Giving way
 * never takes longer in all than the work itself has run: requests in flight that are not
 * running (waiting on the store, or a client sending its body slowly) can at most halve the
 * pace of such work, however many there are.
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

/**
 * Where one piece of work stands: how long its slices have run and how long it has given way.
 * It gives way while others are in flight, up to `GIVE_WAY_MILLIS` at a time and never past the
 * time it has run.
 */
class Share {
  worked = 0
  waited = 0
  constructor(readonly pressure: PressureShape) {}

  readonly giveWay: Effect.Effect<void> = Effect.suspend(() => {
    const began = performance.now()
    const until = began + Math.min(GIVE_WAY_MILLIS, Math.max(0, this.worked - this.waited))
    const wait: Effect.Effect<void> = Effect.suspend(() =>
      this.pressure.others() > 0 && performance.now() < until ? Effect.zipRight(timer(1), wait) : Effect.void
    )
    return Effect.zipRight(
      Effect.zipRight(turn, wait),
      Effect.sync(() => {
        this.waited += performance.now() - began
      })
    )
  })
}

/**
 * `step` over `items`, in order, until it answers false or the items end, a slice at a time.
 * Interruptible between slices: a caller that hangs up stops the work.
 */
export const forEach = <A>(items: Iterable<A>, step: (item: A) => boolean): Effect.Effect<void> =>
  Effect.flatMap(Pressure, (pressure) => {
    const iterator = items[Symbol.iterator]()
    const share = new Share(pressure)
    const slice: Effect.Effect<void> = Effect.suspend(() => {
      const started = performance.now()
      for (;;) {
        const next = iterator.next()
        if (next.done === true || !step(next.value)) return Effect.void
        const ran = performance.now() - started
        if (ran >= SLICE_MILLIS) {
          share.worked += ran
          return Effect.zipRight(share.giveWay, slice)
        }
      }
    })
    return slice
  })
