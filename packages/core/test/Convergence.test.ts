import { describe, expect, it } from "@effect/vitest"
import { Convergence } from "@tenet/core"
import { Deferred, Duration, Effect, Fiber, Option } from "effect"

/** A world of one owner: the committed version, and the version the cluster holds. */
const world = () => ({ committed: 1, cluster: 0, recorded: [] as Array<{ version: number; inForce: boolean }> })

/** A replica's convergence of the world; `hold` keeps the apply of a version until released. */
const replica = (
  w: ReturnType<typeof world>,
  options: { readonly wait?: Duration.DurationInput; readonly hold?: (version: number) => Effect.Effect<void> } = {}
) =>
  Convergence.make<string, void, number, number, never>({
    name: "Test",
    key: (owner) => owner,
    attributes: () => ({}),
    workers: 1,
    wait: Duration.decode(options.wait ?? "5 seconds"),
    apply: () =>
      Effect.gen(function*() {
        const version = w.committed
        yield* options.hold?.(version) ?? Effect.void
        w.cluster = version
        return version
      }),
    superseded: (_, version) => Effect.sync(() => version !== w.committed),
    record: (_, version, asked) =>
      Effect.sync(() => {
        w.recorded.push({ version, inForce: !asked })
        return version
      }),
    caughtUp: () => Effect.void,
    markStillApplying: () => Effect.sync(() => w.recorded.push({ version: -1, inForce: false }))
  })

/** Waits, up to 5 s, until `done` holds. */
const until = (done: () => boolean) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 5_000
    while (!done()) {
      if (Date.now() > deadline) return yield* Effect.dieMessage("not within 5 s")
      yield* Effect.sleep("5 millis")
    }
  })

describe("Convergence", () => {
  it.scopedLive("two replicas at once: an older state applied last is applied again from the latest", () =>
    Effect.gen(function*() {
      const w = world()
      const gate = yield* Deferred.make<void>()
      const a = yield* replica(w, { hold: (version) => version === 1 ? Deferred.await(gate) : Effect.void })
      const b = yield* replica(w)
      // Replica A reads version 1 and is slow to apply it; version 2 is committed, and B applies it first.
      const first = yield* Effect.fork(a.converge("vpc", undefined))
      yield* Effect.sleep("20 millis")
      w.committed = 2
      expect(yield* b.converge("vpc", undefined)).toBe(2)
      expect(w.cluster).toBe(2)
      yield* Deferred.succeed(gate, undefined)
      // A's apply lands last, older: its outcome is not recorded as in force, and A converges again.
      expect(yield* Fiber.join(first)).toBe(1)
      yield* until(() => w.recorded.length === 4)
      expect(w.cluster).toBe(2)
      // A says the owner is still applying (for any replica's reconciler, were A to stop), then
      // records its own outcome as not in force, then the latest's.
      expect(w.recorded).toEqual([
        { version: 2, inForce: true },
        { version: -1, inForce: false },
        { version: 1, inForce: false },
        { version: 2, inForce: true }
      ])
    }))

  it.scopedLive("a request past the bound is answered once the owner says it is still applying; the outcome follows", () =>
    Effect.gen(function*() {
      const w = world()
      const gate = yield* Deferred.make<void>()
      const c = yield* replica(w, { wait: "50 millis", hold: () => Deferred.await(gate) })
      expect(yield* c.request("vpc", undefined)).toEqual(Option.none())
      expect(w.recorded).toEqual([{ version: -1, inForce: false }])
      yield* Deferred.succeed(gate, undefined)
      yield* until(() => w.recorded.length === 2)
      expect(w.recorded[1]).toEqual({ version: 1, inForce: true })
      expect(w.cluster).toBe(1)
    }))

  it.scopedLive("requests that arrive while their owner converges are answered by one convergence after it", () =>
    Effect.gen(function*() {
      const w = world()
      const gate = yield* Deferred.make<void>()
      let applies = 0
      const c = yield* replica(w, {
        hold: (version) =>
          Effect.zipRight(Effect.sync(() => applies++), version === 1 ? Deferred.await(gate) : Effect.void)
      })
      const first = yield* Effect.fork(c.request("vpc", undefined))
      yield* until(() => applies === 1)
      // Each of these commits a version, then asks: the running convergence read none of them.
      const later = yield* Effect.forEach([2, 3, 4], (version) =>
        Effect.fork(Effect.suspend(() => {
          w.committed = version
          return c.request("vpc", undefined)
        })))
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(first)).toEqual(Option.some(1))
      for (const fiber of later) expect(yield* Fiber.join(fiber)).toEqual(Option.some(4))
      expect(applies).toBe(2)
      expect(w.cluster).toBe(4)
    }))

  it.scopedLive("a convergence within its bound marks nothing, even when its apply fails", () =>
    Effect.gen(function*() {
      const w = world()
      const failing = yield* Convergence.make<string, void, number, number, string>({
        name: "Test",
        key: (owner) => owner,
        attributes: () => ({}),
        workers: 1,
        wait: Duration.millis(50),
        apply: () => Effect.fail("the cluster refused"),
        superseded: () => Effect.succeed(false),
        record: (_, version) => Effect.succeed(version),
        caughtUp: () => Effect.void,
        markStillApplying: () => Effect.sync(() => w.recorded.push({ version: -1, inForce: false }))
      })
      expect(yield* Effect.flip(failing.request("vpc", undefined))).toBe("the cluster refused")
      const c = yield* replica(w, { wait: "50 millis" })
      expect(yield* c.request("vpc", undefined)).toEqual(Option.some(1))
      // Past the bound of both: neither marked the owner after its end.
      yield* Effect.sleep("100 millis")
      expect(w.recorded).toEqual([{ version: 1, inForce: true }])
    }))

  it.scopedLive("a request interrupted while it waits leaves the convergence, and the others it answers, unharmed", () =>
    Effect.gen(function*() {
      const w = world()
      const gate = yield* Deferred.make<void>()
      const c = yield* replica(w, { hold: () => Deferred.await(gate) })
      const gone = yield* Effect.fork(c.request("vpc", undefined))
      const staying = yield* Effect.fork(c.request("vpc", undefined))
      yield* Effect.sleep("20 millis")
      yield* Fiber.interrupt(gone)
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(staying)).toEqual(Option.some(1))
      expect(w.recorded).toEqual([{ version: 1, inForce: true }])
    }))

  it.scopedLive("a bound past what a timer can wait is no bound: the request waits for the outcome", () =>
    Effect.gen(function*() {
      const w = world()
      const c = yield* replica(w, { wait: Duration.days(30), hold: () => Effect.sleep("30 millis") })
      expect(yield* c.request("vpc", undefined)).toEqual(Option.some(1))
      expect(w.recorded).toEqual([{ version: 1, inForce: true }])
    }))
})
