/**
 * Failed-login throttling, as pure decisions: guessing is slowed down, and a stranger can never
 * lock the owner out (OWASP's Authentication and Credential Stuffing cheat sheets). Each key is
 * throttled by its own policy: after `free` failures within `windowMillis`, an attempt waits
 * after the key's last failure, doubling from `baseMillis` with each failure past `free`, up to
 * `capMillis`. The store keeps the attempt times (`Store.LoginAttemptRepository`), so every
 * replica decides on the same ones; a refused attempt is not counted.
 *
 * Tenet's keys (`Identity`): a name from one source address (the guesser: waits that double up
 * to 15 minutes), a source address whatever the name (a guesser spraying names), and a name
 * from any address (guessers spread over many addresses) whose wait has a low ceiling: the
 * owner, from an address of its own, is only ever slowed by that one.
 */
export interface Policy {
  /** Failures within the window that cost no wait. */
  readonly free: number
  /** How long a failure counts. */
  readonly windowMillis: number
  /** The wait after the first failure past `free`; it doubles with each further one. */
  readonly baseMillis: number
  /** The longest wait: a ceiling (`capMillis` = `baseMillis`) makes the key a constant slowdown. */
  readonly capMillis: number
}

/** How long after its last failure a key with `failures` recent failures waits. */
export const waitAfter = (policy: Policy, failures: number): number =>
  failures < policy.free ? 0 : Math.min(policy.capMillis, policy.baseMillis * 2 ** (failures - policy.free))

const recent = (times: ReadonlyArray<number>, now: number, policy: Policy) =>
  times.filter((t) => now - t < policy.windowMillis)

/** Milliseconds until a key with failures at `times` may try again, or 0 when it may try now. */
export const retryAfter = (times: ReadonlyArray<number>, now: number, policy: Policy): number => {
  const counted = recent(times, now, policy)
  if (counted.length < policy.free) return 0
  return Math.max(0, Math.max(...counted) + waitAfter(policy, counted.length) - now)
}

/** A key with the policy it is throttled by. */
export interface Keyed {
  readonly key: string
  readonly policy: Policy
}

/**
 * What an attempt's start decides, from each key's attempt times in the store: refused while a
 * key makes it wait (`wait`, ms until every key lets it try; `key`, the one that waits longest),
 * or counted against every key; `throttling` names the keys whose wait this attempt starts or
 * lengthens if it fails.
 */
export type Begun =
  | { readonly _tag: "Throttled"; readonly wait: number; readonly key: string }
  | { readonly _tag: "Counted"; readonly throttling: ReadonlyArray<string> }

export const begin = (
  times: (key: string) => ReadonlyArray<number>,
  keys: ReadonlyArray<Keyed>,
  now: number
): Begun => {
  const waits = keys.map(({ key, policy }) => ({ key, wait: retryAfter(times(key), now, policy) }))
  const longest = waits.reduce<{ key: string; wait: number } | undefined>(
    (worst, w) => (w.wait > 0 && (worst === undefined || w.wait > worst.wait) ? w : worst),
    undefined
  )
  if (longest !== undefined) return { _tag: "Throttled", wait: longest.wait, key: longest.key }
  return {
    _tag: "Counted",
    throttling: keys.filter(({ key, policy }) => retryAfter([...times(key), now], now, policy) > 0)
      .map(({ key }) => key)
  }
}
