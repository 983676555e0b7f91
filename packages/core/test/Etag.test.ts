import { describe, expect, it } from "@effect/vitest"
import { Errors, Etag } from "@tenet/core"
import { Either, FastCheck as fc } from "effect"

const record = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 8 }),
  fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 3 })),
  { minKeys: 1, maxKeys: 8 }
)

describe("Etag", () => {
  it.prop("a record's tag is the same whatever order its fields were built in", [record], ([r]) => {
    const reversed = Object.fromEntries(Object.entries(r).reverse())
    expect(Etag.of(reversed)).toBe(Etag.of(r))
  })

  it.prop("any change to a field moves the tag; a reported field does not", [record, fc.nat()], ([r, pick]) => {
    const keys = Object.keys(r)
    const key = keys[pick % keys.length]!
    const changed = { ...r, [key]: JSON.stringify(r[key]) + "!" }
    expect(Etag.of(changed)).not.toBe(Etag.of(r))
    expect(Etag.of(changed, [key])).toBe(Etag.of(r, [key]))
  })

  it.prop("If-Match names a tag quoted or not, alone or in a list; weak tags and others never", [record], ([r]) => {
    const tag = Etag.of(r)
    expect(Etag.matches(tag, tag)).toBe(true)
    expect(Etag.matches(`"x", ${tag}`, tag)).toBe(true)
    expect(Etag.matches("*", tag)).toBe(true)
    // The tag as a shell leaves it, its quotes dropped: the same tag.
    expect(Etag.matches(tag.slice(1, -1), tag)).toBe(true)
    expect(Etag.matches(`W/${tag}`, tag)).toBe(false)
    expect(Etag.matches("\"1a38\"", tag)).toBe(false)
  })

  it("a change made against another version is refused, naming both; none sent or an object gone is not", () => {
    const refused = Errors.PreconditionFailed.unmoved("pod p", "\"b\"", "a")
    expect(Either.isLeft(refused) && refused.left.detail).toBe("pod p changed since \"a\": it is now at \"b\"")
    expect(Either.isRight(Errors.PreconditionFailed.unmoved("pod p", "\"b\"", undefined))).toBe(true)
    expect(Either.isRight(Errors.PreconditionFailed.unmoved("pod p", undefined, "\"a\""))).toBe(true)
  })
})
