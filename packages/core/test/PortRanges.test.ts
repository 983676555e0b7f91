import { describe, expect, it } from "@effect/vitest"
import { PortRanges } from "@tenet/core"
import { Either, FastCheck as fc } from "effect"

const port = fc.integer({ min: 1, max: 65535 })
const range = fc.tuple(port, port).map(([a, b]) => ({ from: Math.min(a, b), to: Math.max(a, b) }))
const ranges = fc.array(range, { minLength: 1, maxLength: 32 })

describe("ports expressions", () => {
  it.prop("format and parse are inverse for up to 32 entries", [ranges], ([rs]) => {
    expect(PortRanges.parse(PortRanges.format(rs))).toEqual(Either.right(rs))
  })

  it.prop("a port is included exactly when some range holds it", [ranges, port], ([rs, p]) => {
    expect(PortRanges.includes(rs, p)).toBe(rs.some((r) => r.from <= p && p <= r.to))
  })

  it.prop("more than 32 entries are refused", [fc.array(range, { minLength: 33, maxLength: 60 })], ([rs]) => {
    expect(Either.getLeft(PortRanges.parse(PortRanges.format(rs)))._tag).toBe("Some")
  })

  it.prop(
    "ports outside 1-65535 are refused",
    [fc.oneof(fc.constant(0), fc.integer({ min: 65536, max: 99999 }))],
    ([p]) => {
      expect(Either.isLeft(PortRanges.parse(`${p}`))).toBe(true)
      expect(Either.isLeft(PortRanges.parse(`80,${p}`))).toBe(true)
      expect(Either.isLeft(PortRanges.parse(`1-${p}`))).toBe(true)
    }
  )

  it("refuses reversed ranges, empty entries, non-numbers and whitespace", () => {
    for (const text of ["", "80,", ",80", "90-80", "http", "1e3", "-5", "80-", "0x50", "80 443", "+80", " 80", "80 "]) {
      expect(Either.isLeft(PortRanges.parse(text)), text).toBe(true)
    }
  })

  it.prop(
    "whitespace anywhere in a valid expression makes it invalid",
    [
      fc.array(fc.integer({ min: 1, max: 65535 }), { minLength: 1, maxLength: 5 }),
      fc.nat(),
      fc.constantFrom(" ", "\t", "\n", "\u00a0", "\u2003")
    ],
    ([ports, at, space]) => {
      const text = ports.join(",")
      const i = at % (text.length + 1)
      expect(Either.isRight(PortRanges.parse(text))).toBe(true)
      expect(Either.isLeft(PortRanges.parse(text.slice(0, i) + space + text.slice(i)))).toBe(true)
    }
  )
})
