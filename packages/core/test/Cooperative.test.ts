/**
 * Work done a slice at a time: every item is visited once, in order, until the step says stop;
 * under pressure that never lets up (requests in flight that never finish) it still ends.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cooperative } from "@tenet/core"
import { Effect, FastCheck as fc } from "effect"

/** A step that takes about `millis` of the thread, so slices end and the work gives way. */
const busy = (millis: number) => {
  const until = performance.now() + millis
  while (performance.now() < until) {
    // the thread is held, as real work holds it
  }
}

describe("Cooperative.forEach", () => {
  it.effect.prop(
    "visits the items in order, each once, up to and including the first the step refuses",
    [fc.array(fc.integer(), { maxLength: 200 }), fc.nat({ max: 250 })],
    ([items, stopAt]) =>
      Effect.gen(function*() {
        const seen: Array<number> = []
        yield* Cooperative.forEach(items, (item) => {
          seen.push(item)
          return seen.length <= stopAt
        })
        expect(seen).toEqual(items.slice(0, stopAt + 1))
      }),
    { fastCheck: { numRuns: 30 } }
  )

  it.effect("ends under pressure that never lets up, having visited every item", () =>
    Effect.gen(function*() {
      let asked = 0
      const seen: Array<number> = []
      yield* Cooperative.forEach(Array.from({ length: 20 }, (_, i) => i), (item) => {
        busy(1)
        seen.push(item)
        return true
      }).pipe(Effect.provideService(Cooperative.Pressure, { others: () => (asked++, 1) }))
      expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i))
      // It did give way: the pressure was asked while the work ran.
      expect(asked).toBeGreaterThan(0)
    }))
})
