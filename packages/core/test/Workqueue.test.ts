import { describe, expect, it } from "@effect/vitest"
import { Workqueue } from "@tenet/core"
import { Deferred, Duration, Effect, FastCheck as fc } from "effect"

describe("Workqueue", () => {
  it.prop(
    "a retry waits twice as long per failure, never beyond the cap",
    [fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 60_000 }), fc.integer({ min: 1, max: 40 })],
    ([base, max, failures]) => {
      const delay = Duration.toMillis(Workqueue.backoff(Duration.millis(base), Duration.millis(max), failures))
      expect(delay).toBe(Math.min(base * 2 ** (failures - 1), max))
      const next = Duration.toMillis(Workqueue.backoff(Duration.millis(base), Duration.millis(max), failures + 1))
      expect(next).toBeGreaterThanOrEqual(delay)
    }
  )

  it.scopedLive("a key added while it waits is processed once; added while processed, once more after", () =>
    Effect.gen(function*() {
      const processed: Array<string> = []
      const release = yield* Deferred.make<void>()
      let running = 0
      let overlapped = false
      const queue = yield* Workqueue.make<string, never>({
        workers: 4,
        baseDelay: "10 millis",
        maxDelay: "1 second",
        process: (key) =>
          Effect.gen(function*() {
            running++
            if (running > 1) overlapped = true
            processed.push(key)
            if (processed.length === 1) yield* Deferred.await(release)
            running--
          }),
        onFailure: () => Effect.void
      })
      yield* queue.add("vpc")
      yield* Effect.sleep("20 millis")
      // Held by a worker: these three make one more pass, after it, not three, not concurrent.
      yield* queue.add("vpc")
      yield* queue.add("vpc")
      yield* queue.add("vpc")
      yield* Effect.sleep("20 millis")
      expect(processed).toEqual(["vpc"])
      yield* Deferred.succeed(release, undefined)
      yield* Effect.sleep("50 millis")
      expect(processed).toEqual(["vpc", "vpc"])
      expect(overlapped).toBe(false)
      expect(queue.depth()).toEqual({ waiting: 0, processing: 0 })
    }))

  it.scopedLive("a key that fails comes back after its backoff until it succeeds; a defect does not stop the workers", () =>
    Effect.gen(function*() {
      const attempts = new Map<string, number>()
      const failures: Array<Duration.Duration> = []
      const done = yield* Deferred.make<void>()
      const queue = yield* Workqueue.make<string, string>({
        workers: 1,
        baseDelay: "10 millis",
        maxDelay: "1 second",
        process: (key) =>
          Effect.suspend(() => {
            const n = (attempts.get(key) ?? 0) + 1
            attempts.set(key, n)
            if (key === "broken") return n === 1 ? Effect.die("a bug") : Effect.void
            return n < 4 ? Effect.fail("not yet") : Deferred.succeed(done, undefined)
          }),
        onFailure: (key, _cause, retryIn) => Effect.sync(() => void (key === "pod" && failures.push(retryIn)))
      })
      yield* queue.add("broken")
      yield* queue.add("pod")
      yield* Deferred.await(done).pipe(Effect.timeout("5 seconds"))
      expect(failures.map(Duration.toMillis)).toEqual([10, 20, 40])
      expect(attempts.get("broken")).toBe(2)
    }))
})
