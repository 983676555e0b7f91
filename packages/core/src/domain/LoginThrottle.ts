/**
 * Failed-login throttling, as pure decisions. A key (a login name, or a source address) is
 * locked once it has `maxFailures` failures within `windowMillis`, and stays locked until the
 * oldest of those failures leaves the window. The store keeps the attempt times
 * (`Store.LoginAttemptRepository`), so every replica decides on the same ones.
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

/** A key with the policy it is throttled by. */
export interface Keyed {
  readonly key: string
  readonly policy: Policy
}

/**
 * What an attempt's start decides, from each key's attempt times in the store: refused while a
 * key is locked (`wait`, ms until every key may try), or counted against every key; `locking`
 * names the keys this attempt locks if it fails.
 */
export type Begun =
  | { readonly _tag: "Locked"; readonly wait: number }
  | { readonly _tag: "Counted"; readonly locking: ReadonlyArray<string> }

export const begin = (
  times: (key: string) => ReadonlyArray<number>,
  keys: ReadonlyArray<Keyed>,
  now: number
): Begun => {
  const state: State = HashMap.fromIterable(keys.map(({ key }) => [key, times(key)] as const))
  const wait = Math.max(0, ...keys.map(({ key, policy }) => retryAfter(state, key, now, policy)))
  if (wait > 0) return { _tag: "Locked", wait }
  return {
    _tag: "Counted",
    locking: keys.filter(({ key, policy }) => retryAfter(recordFailure(state, key, now, policy), key, now, policy) > 0)
      .map(({ key }) => key)
  }
}
