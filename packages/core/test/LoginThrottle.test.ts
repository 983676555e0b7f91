import { describe, expect, it } from "@effect/vitest"
import { LoginThrottle } from "@tenet/core"
import { FastCheck as fc } from "effect"

const policy = { maxFailures: 5, windowMillis: 60_000 }

/** The reference rule: locked while the window before `now` holds at least maxFailures failures. */
const lockedByDefinition = (failures: ReadonlyArray<number>, now: number) =>
  failures.filter((t) => now - t < policy.windowMillis).length >= policy.maxFailures

describe("LoginThrottle", () => {
  it.prop(
    "a key is locked exactly while its recent failures reach the limit",
    [fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 20 }), fc.integer({ min: 0, max: 200_000 })],
    ([gaps, probe]) => {
      let state = LoginThrottle.empty
      let now = 0
      const failures: Array<number> = []
      for (const gap of gaps) {
        now += gap * 50
        state = LoginThrottle.recordFailure(state, "k", now, policy)
        failures.push(now)
      }
      const at = now + probe
      expect(LoginThrottle.retryAfter(state, "k", at, policy) > 0).toBe(lockedByDefinition(failures, at))
    }
  )

  it.prop(
    "an attempt is refused exactly while a key is locked, and names the keys its failure locks",
    [
      fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 8 }),
      fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 8 }),
      fc.integer({ min: 0, max: 200_000 })
    ],
    ([a, b, now]) => {
      const times = { a: a.map((t) => t * 50).sort((x, y) => x - y), b: b.map((t) => t * 50).sort((x, y) => x - y) }
      const keys = [{ key: "a", policy }, { key: "b", policy }]
      const begun = LoginThrottle.begin((key) => times[key as "a" | "b"], keys, now)
      const locked = ["a", "b"].filter((key) => lockedByDefinition(times[key as "a" | "b"], now))
      if (locked.length > 0) {
        expect(begun._tag).toBe("Locked")
        return
      }
      expect(begun).toEqual({
        _tag: "Counted",
        locking: ["a", "b"].filter((key) => lockedByDefinition([...times[key as "a" | "b"], now], now))
      })
    }
  )
})
