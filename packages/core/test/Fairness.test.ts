/**
 * Expensive work through the fair queue, as requests meet it: one tenant's flood waits behind
 * itself and past its queue is refused (429, `TooManyRequests`), while another tenant's request
 * takes the next free seat; a request whose caller leaves gives its place back.
 */
import { describe, expect, it } from "@effect/vitest"
import { Fairness } from "@tenet/core"
import type { Ids } from "@tenet/core"
import { Deferred, Effect, Exit, Fiber } from "effect"

const noisy = "00000000-0000-4000-8000-000000000001" as Ids.TenantId
const quiet = "00000000-0000-4000-8000-000000000002" as Ids.TenantId

describe("Fairness", () => {
  it.effect("a flood waits behind itself, is refused past its queue, and another tenant goes first", () =>
    Effect.gen(function*() {
      const fair = yield* Fairness.Fairness.make({ seats: 1, perTenant: 1, queue: 2, wait: "1 minute" })
      const order: Array<string> = []
      const gate = yield* Deferred.make<void>()
      const work = (name: string) => Effect.zipRight(Deferred.await(gate), Effect.sync(() => void order.push(name)))
      const first = yield* Effect.fork(fair.expensive(noisy, work("noisy 1")))
      yield* Effect.yieldNow()
      const queued = yield* Effect.forEach(
        ["noisy 2", "noisy 3"],
        (name) => Effect.fork(fair.expensive(noisy, work(name)))
      )
      yield* Effect.yieldNow()
      // Two wait; the next is refused.
      const refused = yield* Effect.exit(fair.expensive(noisy, work("noisy 4")))
      expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toMatch(/TooManyRequests/)
      expect(fair.occupancy()).toBe(3)
      // The quiet tenant arrives last, and runs next.
      const other = yield* Effect.fork(fair.expensive(quiet, work("quiet")))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(other)
      yield* Effect.forEach(queued, Fiber.join)
      expect(order).toEqual(["noisy 1", "quiet", "noisy 2", "noisy 3"])
      expect(fair.occupancy()).toBe(0)
    }))

  it.live(
    "a waiting request whose caller leaves gives its place back; one that waits too long is refused",
    () =>
      Effect.gen(function*() {
        const fair = yield* Fairness.Fairness.make({ seats: 1, perTenant: 1, queue: 1, wait: "50 millis" })
        const gate = yield* Deferred.make<void>()
        const running = yield* Effect.fork(fair.expensive(noisy, Deferred.await(gate)))
        yield* Effect.yieldNow()
        const waiting = yield* Effect.fork(fair.expensive(noisy, Effect.void))
        yield* Effect.yieldNow()
        yield* Fiber.interrupt(waiting)
        expect(fair.occupancy()).toBe(1)
        const late = yield* Effect.exit(fair.expensive(noisy, Effect.void))
        expect(Exit.isFailure(late) && JSON.stringify(late.cause)).toMatch(/waited/)
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(running)
        expect(fair.occupancy()).toBe(0)
      }),
    { timeout: 10_000 }
  )
})
