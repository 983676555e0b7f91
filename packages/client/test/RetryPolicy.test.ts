/** The retry rule over every retry number, wait so far, `Retry-After` and random draw. */
import { describe, expect, it } from "@effect/vitest"
import { RetryPolicy } from "@tenet/client"
import { FastCheck as fc } from "effect"

const policies = fc.record({
  times: fc.integer({ min: 0, max: 10 }),
  base: fc.integer({ min: 1, max: 1000 }),
  cap: fc.integer({ min: 1, max: 60_000 }),
  budget: fc.integer({ min: 0, max: 120_000 })
})
const draws = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })

describe("RetryPolicy", () => {
  it.prop(
    "a wait is a jittered share of the capped backoff, never under Retry-After, never past the cap or the budget",
    [
      policies,
      fc.integer({ min: 0, max: 12 }),
      fc.integer({ min: 0, max: 120_000 }),
      fc.option(
        fc.integer({ min: 0, max: 120_000 }),
        { nil: undefined }
      ),
      draws
    ],
    ([policy, retry, waited, retryAfter, random]) => {
      const wait = RetryPolicy.delay(policy, retry, waited, retryAfter, random)
      const backoff = Math.min(policy.cap, policy.base * 2 ** retry)
      const giveUp = retry >= policy.times || (retryAfter !== undefined && retryAfter > policy.cap)
      if (giveUp) {
        expect(wait).toBeUndefined()
        return
      }
      const expected = Math.max(retryAfter ?? 0, Math.floor(random * backoff))
      expect(wait).toBe(waited + expected > policy.budget ? undefined : expected)
      if (wait !== undefined) {
        expect(wait).toBeLessThanOrEqual(policy.cap)
        expect(wait).toBeGreaterThanOrEqual(retryAfter ?? 0)
      }
    }
  )

  it.prop(
    "a call's waits together stay within its budget, and stop after `times`",
    [policies, fc.array(draws, { minLength: 12, maxLength: 12 })],
    ([policy, randoms]) => {
      let waited = 0
      let retries = 0
      for (const random of randoms) {
        const wait = RetryPolicy.delay(policy, retries, waited, undefined, random)
        if (wait === undefined) break
        waited += wait
        retries++
      }
      expect(waited).toBeLessThanOrEqual(policy.budget)
      expect(retries).toBeLessThanOrEqual(policy.times)
    }
  )

  it("Retry-After is read as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-11-25T12:00:00Z")
    expect(RetryPolicy.parseRetryAfter("120", now)).toBe(120_000)
    expect(RetryPolicy.parseRetryAfter("Wed, 25 Nov 2026 12:00:30 GMT", now)).toBe(30_000)
    expect(RetryPolicy.parseRetryAfter("Wed, 25 Nov 2026 11:00:00 GMT", now)).toBe(0)
    expect(RetryPolicy.parseRetryAfter("soon", now)).toBeUndefined()
    expect(RetryPolicy.parseRetryAfter(undefined, now)).toBeUndefined()
  })

  it("the caller's choices override the defaults, in milliseconds", () => {
    expect(RetryPolicy.resolve()).toEqual({ times: 4, base: 100, cap: 10_000, budget: 30_000 })
    expect(RetryPolicy.resolve({ times: 1, budget: "1 second" })).toEqual({
      times: 1,
      base: 100,
      cap: 10_000,
      budget: 1000
    })
  })
})
