import { describe, expect, it } from "@effect/vitest"
import { Identity, LoginThrottle } from "@tenet/core"
import { FastCheck as fc } from "effect"

const policy: LoginThrottle.Policy = { free: 5, windowMillis: 60_000, baseMillis: 1_000, capMillis: 16_000 }

/** The reference rule: the wait after the last recent failure, doubling per failure past the free ones. */
const waitByDefinition = (failures: ReadonlyArray<number>, now: number, p: LoginThrottle.Policy = policy) => {
  const recent = failures.filter((t) => now - t < p.windowMillis)
  if (recent.length < p.free) return 0
  let wait = p.baseMillis
  for (let extra = p.free; extra < recent.length; extra++) wait = Math.min(p.capMillis, wait * 2)
  return Math.max(0, Math.max(...recent) + Math.min(wait, p.capMillis) - now)
}

const sorted = (times: ReadonlyArray<number>) => [...times].sort((a, b) => a - b)

describe("LoginThrottle", () => {
  it.prop(
    "a key waits exactly as long as its recent failures say: doubling past the free ones, up to the cap",
    [fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 20 }), fc.integer({ min: 0, max: 200_000 })],
    ([gaps, probe]) => {
      const failures: Array<number> = []
      let now = 0
      for (const gap of gaps) failures.push(now += gap * 50)
      const at = now + probe
      expect(LoginThrottle.retryAfter(failures, at, policy)).toBe(waitByDefinition(failures, at))
    }
  )

  it.prop(
    "an attempt is refused exactly while a key makes it wait, for the longest wait, and names the keys its failure slows",
    [
      fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 8 }),
      fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 8 }),
      fc.integer({ min: 0, max: 200_000 })
    ],
    ([a, b, now]) => {
      const times = { a: sorted(a.map((t) => t * 50)), b: sorted(b.map((t) => t * 50)) }
      const keys = [{ key: "a", policy }, { key: "b", policy: { ...policy, free: 2 } }]
      const begun = LoginThrottle.begin((key) => times[key as "a" | "b"], keys, now)
      const waits = keys.map(({ key, policy: p }) => waitByDefinition(times[key as "a" | "b"], now, p))
      if (Math.max(...waits) > 0) {
        expect(begun).toEqual({ _tag: "Throttled", wait: Math.max(...waits), key: waits[0]! >= waits[1]! ? "a" : "b" })
        return
      }
      expect(begun).toEqual({
        _tag: "Counted",
        throttling: keys.filter(({ key, policy: p }) => waitByDefinition([...times[key as "a" | "b"], now], now, p) > 0)
          .map(({ key }) => key)
      })
    }
  )

  /**
   * The promise to the owner: whatever strangers do from addresses other than the owner's (any
   * interleaving of failures, from any number of addresses), the owner's first attempt from its
   * own address waits at most the name's ceiling.
   */
  it.prop(
    "strangers never lock the owner out: the owner waits at most the name's ceiling",
    [
      // Guesses as dense as a botnet's (many addresses, seconds apart) or as sparse as a person's.
      fc.array(fc.record({ gap: fc.integer({ min: 0, max: 10_000 }), from: fc.integer({ min: 1, max: 40 }) }), {
        maxLength: 300,
        size: "max"
      }),
      fc.integer({ min: 0, max: 60_000 })
    ],
    ([guesses, later]) => {
      const p = Identity.defaultThrottlePolicy
      const keysOf = (address: string) => [
        { key: `pair:acme|${address}`, policy: p.nameAndAddress },
        { key: `addr:${address}`, policy: p.address },
        { key: "name:acme", policy: p.name }
      ]
      const store = new Map<string, Array<number>>()
      const times = (key: string) => store.get(key) ?? []
      let now = 0
      for (const { from, gap } of guesses) {
        now += gap
        // A stranger's guess, counted (and failed) only when the throttle lets it through.
        const keys = keysOf(`192.0.2.${from}`)
        if (LoginThrottle.begin(times, keys, now)._tag === "Counted") {
          for (const { key } of keys) store.set(key, [...times(key), now])
        }
      }
      const owner = LoginThrottle.begin(times, keysOf("198.51.100.7"), now + later)
      if (owner._tag === "Throttled") {
        expect(owner.key).toBe("name:acme")
        expect(owner.wait).toBeLessThanOrEqual(p.name.capMillis)
        expect(owner.wait).toBeLessThanOrEqual(30_000)
      }
    }
  )
})
