import { describe, expect, it } from "@effect/vitest"
import { LoginThrottle } from "@tenet/core"
import { FastCheck as fc, HashMap } from "effect"

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

  it("a success clears the key; other keys are untouched", () => {
    let state = LoginThrottle.empty
    for (let i = 0; i < 5; i++) {
      state = LoginThrottle.recordFailure(state, "a", i, policy)
      state = LoginThrottle.recordFailure(state, "b", i, policy)
    }
    expect(LoginThrottle.retryAfter(state, "a", 10, policy)).toBe(policy.windowMillis - 10)
    state = LoginThrottle.recordSuccess(state, "a")
    expect(LoginThrottle.retryAfter(state, "a", 10, policy)).toBe(0)
    expect(LoginThrottle.retryAfter(state, "b", 10, policy)).toBeGreaterThan(0)
  })

  it("pruning forgets keys whose failures have all left the window", () => {
    const state = LoginThrottle.recordFailure(LoginThrottle.empty, "old", 0, policy)
    expect(HashMap.size(LoginThrottle.prune(state, policy.windowMillis - 1, policy))).toBe(1)
    expect(HashMap.size(LoginThrottle.prune(state, policy.windowMillis + 1, policy))).toBe(0)
  })
})
