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

  const opaque = fc.stringMatching(/^[\x21\x23-\x7e]{0,12}$/)
  const ows = fc.stringMatching(/^[ \t]{0,2}$/)

  it.prop("an If-Match list of entity-tags reads back as written, each strong or weak, whatever its spacing", [
    fc.array(fc.record({ tag: opaque.map((o) => `"${o}"`), weak: fc.boolean() }), { minLength: 1, maxLength: 5 }),
    ows,
    ows
  ], ([tags, before, after]) => {
    const header = tags.map((t) => `${t.weak ? "W/" : ""}${t.tag}`).join(`${before},${after}`)
    expect(Etag.parseIfMatch(`${after}${header}${before}`)).toEqual(tags)
    expect(Etag.parseIfMatch(`${before}*${after}`)).toBe("*")
  })

  it.prop("what is neither * nor a list of entity-tags is no If-Match", [
    // No comma: between two bare tags it would be a separator, and what follows it another tag.
    opaque.filter((tag) => !tag.includes(",")),
    fc.constantFrom(" ", "\"", "\t", "\u0000", "\u007f"),
    fc.nat()
  ], ([tag, bad, at]) => {
    // A character no entity-tag holds, inside one: quoted or left bare.
    const i = at % (tag.length + 1)
    const broken = `a${tag.slice(0, i)}${bad}${tag.slice(i)}z`
    expect(Etag.parseIfMatch(`"${broken}"`)).toBeUndefined()
    expect(Etag.parseIfMatch(broken)).toBeUndefined()
  })

  it("If-Match refuses what RFC 9110 does not write, and reads a tag whose quotes a shell dropped", () => {
    for (const header of ["hello world", "\"abc", "abc\"", "W/", "W/ \"a\"", "*, \"a\"", "\"a\" \"b\"", "\"a\"x"]) {
      expect(Etag.parseIfMatch(header), header).toBeUndefined()
    }
    expect(Etag.parseIfMatch("1a38, W/1a39")).toEqual([{ tag: "\"1a38\"", weak: false }, {
      tag: "\"1a39\"",
      weak: true
    }])
    // A comma is a character of a tag too: only a comma between tags separates them.
    expect(Etag.parseIfMatch("\"a,b\", \"c\"")).toEqual([{ tag: "\"a,b\"", weak: false }, {
      tag: "\"c\"",
      weak: false
    }])
    // Empty elements of a list are allowed (RFC 9110, 5.6.1), and so is a list of none, which nothing matches.
    expect(Etag.parseIfMatch(", \"a\" ,,")).toEqual([{ tag: "\"a\"", weak: false }])
    expect(Etag.parseIfMatch("")).toEqual([])
  })

  it.prop("a weak tag never matches, its own version included, and the refusal says why", [record], ([r]) => {
    const tag = Etag.of(r)
    expect(Etag.matches(`W/${tag}`, tag)).toBe(false)
    const refused = Errors.PreconditionFailed.unmoved("VPC v", tag, `W/${tag}`)
    expect(Either.isLeft(refused) && refused.left.detail).toBe(
      `VPC v: weak validators cannot be used with If-Match, which compares strongly (RFC 9110, 13.1.1), so ` +
        `W/${tag} never matches; send ${tag}`
    )
  })

  it("a change made against another version is refused, naming both; none sent or an object gone is not", () => {
    const refused = Errors.PreconditionFailed.unmoved("pod p", "\"b\"", "a")
    expect(Either.isLeft(refused) && refused.left.detail).toBe("pod p changed since \"a\": it is now at \"b\"")
    expect(Either.isRight(Errors.PreconditionFailed.unmoved("pod p", "\"b\"", undefined))).toBe(true)
    expect(Either.isRight(Errors.PreconditionFailed.unmoved("pod p", undefined, "\"a\""))).toBe(true)
    const none = Errors.PreconditionFailed.unmoved("pod p", "\"b\"", "")
    expect(Either.isLeft(none) && none.left.detail).toBe(
      "pod p: If-Match lists no entity-tag, so no version matches it; send \"b\" or *"
    )
  })
})
