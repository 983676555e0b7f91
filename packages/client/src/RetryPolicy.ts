/**
 * When the client sends a call again, and after how long: pure, so the rule can be tested over
 * every attempt, wait and header. A call is retried after a connection failure, a 503 or a 429;
 * each wait is capped exponential backoff with full jitter (a random share of
 * `min(cap, base * 2^retry)`, so clients that failed together do not come back together), never
 * shorter than the server's `Retry-After`; and the waits of one call together stay within
 * `budget`. A `Retry-After` longer than `cap`, or than what is left of the budget, ends the
 * retries: the caller gets the server's answer at once rather than a call that hangs.
 */
import { Duration } from "effect"

export interface RetryPolicy {
  /** Retries after the first attempt. Default 4. */
  readonly times: number
  /** The backoff before the first retry; it doubles with each one. Default 100 ms. */
  readonly base: Duration.DurationInput
  /** The longest single wait, backoff or `Retry-After`. Default 10 s. */
  readonly cap: Duration.DurationInput
  /** The most one call may spend waiting between its attempts. Default 30 s. */
  readonly budget: Duration.DurationInput
}

export const defaults: RetryPolicy = { times: 4, base: "100 millis", cap: "10 seconds", budget: "30 seconds" }

/** A policy in milliseconds, the caller's choices over the defaults. */
export interface Resolved {
  readonly times: number
  readonly base: number
  readonly cap: number
  readonly budget: number
}

export const resolve = (given: Partial<RetryPolicy> = {}): Resolved => {
  const policy = { ...defaults, ...given }
  return {
    times: Math.max(0, Math.floor(policy.times)),
    base: Duration.toMillis(policy.base),
    cap: Duration.toMillis(policy.cap),
    budget: Duration.toMillis(policy.budget)
  }
}

/**
 * The wait (ms) before retry number `retry` (0 for the first), having waited `waited` ms so far,
 * with the server's `Retry-After` (ms) when it sent one and `random` in [0, 1); none to give up.
 */
export const delay = (
  policy: Resolved,
  retry: number,
  waited: number,
  retryAfter: number | undefined,
  random: number
): number | undefined => {
  if (retry >= policy.times) return undefined
  if (retryAfter !== undefined && retryAfter > policy.cap) return undefined
  const backoff = Math.floor(random * Math.min(policy.cap, policy.base * 2 ** retry))
  const wait = Math.max(retryAfter ?? 0, backoff)
  return waited + wait > policy.budget ? undefined : wait
}

/**
 * A `Retry-After` header's wait in ms: delay-seconds or an HTTP date (RFC 9110, 10.2.3); none when
 * absent or unreadable. A date in the past is no wait.
 */
export const parseRetryAfter = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}
