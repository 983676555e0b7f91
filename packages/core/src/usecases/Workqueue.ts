/**
 * A rate-limited work queue, as client-go's: a key added while it waits is added once; a key
 * added while a worker holds it is processed again after (never by two workers at once); a key
 * whose processing fails comes back after a delay that doubles per failure up to a cap, and
 * is forgotten (its delay reset) once it succeeds. A bounded number of workers take keys.
 */
import type { Scope } from "effect"
import { Cause, Duration, Effect, Queue } from "effect"

export interface Workqueue<K> {
  /** Adds the key, unless it is already waiting. */
  readonly add: (key: K) => Effect.Effect<void>
  /** Keys waiting, and keys being processed. */
  readonly depth: () => { readonly waiting: number; readonly processing: number }
}

export interface Options<K, E> {
  readonly workers: number
  /** The first retry's delay after a failure; doubles per failure of the key. */
  readonly baseDelay: Duration.DurationInput
  readonly maxDelay: Duration.DurationInput
  readonly process: (key: K) => Effect.Effect<void, E>
  /** What a failure (a defect too: a worker never dies of one) is told to; the key is retried after. */
  readonly onFailure: (key: K, cause: Cause.Cause<E>, retryIn: Duration.Duration) => Effect.Effect<void>
}

/** The delay before a key's `failures`-th retry. */
export const backoff = (base: Duration.DurationInput, max: Duration.DurationInput, failures: number) =>
  Duration.min(Duration.times(Duration.decode(base), 2 ** Math.max(0, failures - 1)), Duration.decode(max))

/** A queue and its workers, running until the scope closes. */
export const make = <K, E>(options: Options<K, E>): Effect.Effect<Workqueue<K>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<K>()
    const waiting = new Set<K>()
    const processing = new Set<K>()
    const again = new Set<K>()
    const failures = new Map<K, number>()

    const add = (key: K): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (processing.has(key)) {
          again.add(key)
          return Effect.void
        }
        if (waiting.has(key)) return Effect.void
        waiting.add(key)
        return Queue.offer(queue, key)
      })

    const scope = yield* Effect.scope
    const later = (key: K, delay: Duration.Duration) =>
      Effect.forkIn(Effect.zipRight(Effect.sleep(delay), add(key)), scope)

    const work = (key: K) =>
      Effect.suspend(() => {
        waiting.delete(key)
        processing.add(key)
        return options.process(key)
      }).pipe(
        Effect.matchCauseEffect({
          onSuccess: () => Effect.sync(() => void failures.delete(key)),
          onFailure: (cause) =>
            // Interrupted (the queue is closing): nothing failed, nothing to retry.
            Cause.isInterruptedOnly(cause) ? Effect.void : Effect.suspend(() => {
              const n = (failures.get(key) ?? 0) + 1
              failures.set(key, n)
              const delay = backoff(options.baseDelay, options.maxDelay, n)
              return Effect.zipRight(
                Effect.catchAllCause(options.onFailure(key, cause, delay), () => Effect.void),
                later(key, delay)
              )
            })
        }),
        Effect.ensuring(Effect.suspend(() => {
          processing.delete(key)
          if (!again.delete(key)) return Effect.void
          return add(key)
        }))
      )

    yield* Effect.forkScoped(
      Effect.forever(Effect.flatMap(Queue.take(queue), work)).pipe(
        Effect.replicateEffect(Math.max(1, options.workers), { concurrency: "unbounded", discard: true })
      )
    )
    return { add, depth: () => ({ waiting: waiting.size, processing: processing.size }) }
  })
