/**
 * Failed-login throttling, as a pure state machine. A key (a login name, or a source
 * address) is locked once it has `maxFailures` failures within `windowMillis`, and stays
 * locked until the oldest of those failures leaves the window. A success clears the key.
 */
import { HashMap, Option } from "effect"

export interface Policy {
  readonly maxFailures: number
  readonly windowMillis: number
}

/** Failure times per key, oldest first, only those still inside the window. */
export type State = HashMap.HashMap<string, ReadonlyArray<number>>

export const empty: State = HashMap.empty()

const recent = (state: State, key: string, now: number, policy: Policy): ReadonlyArray<number> =>
  Option.match(HashMap.get(state, key), {
    onNone: () => [],
    onSome: (times) => times.filter((t) => now - t < policy.windowMillis)
  })

/** Milliseconds until the key may try again, or 0 when it may try now. */
export const retryAfter = (state: State, key: string, now: number, policy: Policy): number => {
  const times = recent(state, key, now, policy)
  if (times.length < policy.maxFailures) return 0
  return times[times.length - policy.maxFailures]! + policy.windowMillis - now
}

export const recordFailure = (state: State, key: string, now: number, policy: Policy): State => {
  const times = [...recent(state, key, now, policy), now]
  return HashMap.set(state, key, times.slice(-policy.maxFailures))
}

export const recordSuccess = (state: State, key: string): State => HashMap.remove(state, key)

/** Forgets keys with no failure inside the window, so the state cannot grow without bound. */
export const prune = (state: State, now: number, policy: Policy): State =>
  HashMap.filter(state, (times) => times.some((t) => now - t < policy.windowMillis))
