import { describe, expect, it } from "@effect/vitest"
import { DeleteMark } from "@tenet/core"
import { DateTime, Duration, FastCheck as fc } from "effect"

const instant = fc.integer({ min: 0, max: 4_000_000_000_000 }).map((ms) => DateTime.unsafeMake(ms))
const lease = Duration.toMillis(DeleteMark.LEASE)

describe("DeleteMark", () => {
  it.prop(
    "a mark is the reconciler's exactly when its lease has run out, however long ago it was made",
    [instant, fc.integer({ min: 0, max: 10 * lease })],
    ([since, age]) => {
      const now = DateTime.unsafeMake(DateTime.toEpochMillis(since) + age)
      expect(DeleteMark.abandoned(since, now)).toBe(age >= lease)
    }
  )

  it.prop("a mark without a time (made before marks had one) is the reconciler's at once", [instant], ([now]) => {
    expect(DeleteMark.abandoned(null, now)).toBe(true)
  })

  it("the marking request waits on the cluster well inside its lease", () => {
    expect(Duration.lessThan(Duration.times(DeleteMark.CLUSTER_WAIT, 2), DeleteMark.LEASE)).toBe(true)
  })

  it.prop("a take-back recognises only its own mark", [instant, instant], ([a, b]) => {
    expect(DeleteMark.same(a, a)).toBe(true)
    expect(DeleteMark.same(a, b)).toBe(DateTime.toEpochMillis(a) === DateTime.toEpochMillis(b))
    expect(DeleteMark.same(a, null)).toBe(false)
    expect(DeleteMark.same(null, null)).toBe(true)
  })
})
