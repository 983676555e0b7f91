/**
 * An object's version as an entity tag (RFC 9110; kube's resourceVersion, GCP's fingerprint):
 * a digest of what the object declares, so it moves with every change a user or the platform
 * makes to it and is the same on every replica reading the same store. What the platform
 * reports about an object (whether it is applied, a tunnel's status) is left out: a change made
 * against one version is not refused because an apply finished meanwhile.
 *
 * Not a secret, nor a defence against a chosen collision: it only tells one version from another.
 */
import { Schema } from "effect"

/** cyrb128 (public domain) over the text's UTF-16 units: four 32-bit lanes, quoted. */
export const digest = (text: string): string => {
  let h1 = 1779033703, h2 = 3144134277, h3 = 1013904242, h4 = 2773480762
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i)
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067)
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233)
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213)
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179)
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067)
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233)
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213)
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179)
  h1 ^= h2 ^ h3 ^ h4
  h2 ^= h1
  h3 ^= h1
  h4 ^= h1
  return `"${[h1, h2, h3, h4].map((h) => (h >>> 0).toString(16).padStart(8, "0")).join("")}"`
}

/** Object keys in one order, whichever order a store built the record in. */
const sortedKeys = (_key: string, value: unknown): unknown =>
  value !== null && typeof value === "object" && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : value

/** The entity tag of a record, without the fields named in `reported` (what the platform reports). */
export const of = <R extends object>(record: R, reported: ReadonlyArray<keyof R> = []): string => {
  const declared: Record<string, unknown> = { ...(record as Record<string, unknown>) }
  for (const field of reported) delete declared[field as string]
  return digest(JSON.stringify(declared, sortedKeys))
}

/**
 * An entity tag as RFC 9110 writes it: quoted. A tag copied without its quotes (as a shell
 * drops them from `--if-match "1a38..."`) is read as the same tag; a weak one (`W/"..."`) is
 * kept as it is.
 */
export const quoted = (tag: string): string => {
  const trimmed = tag.trim()
  return trimmed.startsWith("\"") || trimmed.startsWith("W/") || trimmed === "*" ? trimmed : `"${trimmed}"`
}

/** One entity-tag an `If-Match` names: the tag quoted (`"1a38..."`), and whether it was sent weak (`W/`). */
export interface EntityTag {
  readonly tag: string
  readonly weak: boolean
}

/** RFC 9110's optional whitespace, and an entity-tag's characters (`etagc`: visible, no DQUOTE; obs-text). */
const OWS = /[ \t]*/y
const QUOTED = /"[\x21\x23-\x7e\x80-\xff]*"/y
/** A tag whose quotes were dropped: up to the next separator (so no comma), and no `*`, which is no tag. */
const BARE = /[\x21\x23-\x29\x2b\x2d-\x7e\x80-\xff]+/y

const matchAt = (pattern: RegExp, text: string, at: number): string | undefined => {
  pattern.lastIndex = at
  return pattern.exec(text)?.[0]
}

/**
 * An `If-Match` header as RFC 9110 (13.1.1) writes it: `*` (any current version), or a comma
 * list of entity-tags, each `"..."` or weak `W/"..."`, empty elements allowed (5.6.1). A tag
 * whose quotes a shell dropped is read as quoted. None for anything else (`hello world`): a
 * malformed header is refused (400), not compared as if it named a version.
 */
export const parseIfMatch = (header: string): "*" | ReadonlyArray<EntityTag> | undefined => {
  if (header.trim() === "*") return "*"
  const tags: Array<EntityTag> = []
  let at = 0
  // Each turn reads optional whitespace, a tag or nothing (an empty element), whitespace, then a comma or the end.
  for (;;) {
    at += matchAt(OWS, header, at)!.length
    const weak = header.startsWith("W/", at)
    if (weak) at += 2
    const tag = matchAt(QUOTED, header, at) ?? matchAt(BARE, header, at)
    if (tag !== undefined) {
      tags.push({ tag: tag.startsWith("\"") ? tag : `"${tag}"`, weak })
      at += tag.length
    } else if (weak) {
      return undefined
    }
    at += matchAt(OWS, header, at)!.length
    if (at === header.length) return tags
    if (header[at] !== ",") return undefined
    at++
  }
}

/**
 * Whether an `If-Match` header value names `etag`: `*`, or a list holding it, quoted or not.
 * A weak tag never matches: If-Match compares strongly, a change needs the exact version (RFC
 * 9110, 13.1.1). A malformed header names nothing.
 */
export const matches = (header: string, etag: string): boolean => {
  const named = parseIfMatch(header)
  return named === "*" || (named !== undefined && named.some((t) => !t.weak && t.tag === etag))
}

/** The tags an `If-Match` header names, as a message quotes them. */
export const named = (header: string): string => {
  const tags = parseIfMatch(header)
  return typeof tags === "object" ? tags.map((t) => `${t.weak ? "W/" : ""}${t.tag}`).join(", ") : header
}

/**
 * Why an `If-Match` that does not match `etag` reads as if nothing had changed, when it does:
 * it names that very version weakly, or names none at all. Undefined when it names others
 * (the object moved on since).
 */
export const unmatched = (header: string, etag: string): string | undefined => {
  const tags = parseIfMatch(header)
  if (typeof tags !== "object") return undefined
  if (tags.length === 0) return `If-Match lists no entity-tag, so no version matches it; send ${etag} or *`
  return tags.some((t) => t.weak && t.tag === etag)
    ? "weak validators cannot be used with If-Match, which compares strongly (RFC 9110, 13.1.1), so " +
      `W/${etag} never matches; send ${etag}`
    : undefined
}

/**
 * An `If-Match` header's value: `*` or a list of entity-tags (`parseIfMatch`). Anything else is
 * refused as bad input (400), as RFC 9110 has it, rather than as a version that moved (412).
 */
export const IfMatch = Schema.String.pipe(
  Schema.filter((header) => parseIfMatch(header) !== undefined),
  Schema.annotations({
    description: "an entity-tag as an etag field holds it (quoted), a comma-separated list of them, or *"
  })
)

/** The `etag` field of a view: its version, for `If-Match`. */
export const Field = Schema.String.annotations({
  description: "The object's version: send it as If-Match on a change to the object (412 when it moved since)"
})

/** `If-Match` on a change to one object: the `etag` the change was made against (or `*`). */
export const IfMatchHeaders = Schema.Struct({
  "if-match": Schema.optional(IfMatch).annotations({
    description: "The etag of the object the change was made against: 412 when the object changed since"
  })
})
