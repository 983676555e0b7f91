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

/**
 * Whether an `If-Match` header value names `etag`: `*`, or a comma list holding it, quoted or
 * not. A weak tag (`W/"..."`) never matches: a change needs the exact version (RFC 9110, 13.1.1).
 */
export const matches = (header: string, etag: string): boolean =>
  header.trim() === "*" || header.split(",").some((tag) => quoted(tag) === etag)

/** The tags an `If-Match` header names, as a message quotes them. */
export const named = (header: string): string => header.split(",").map(quoted).join(", ")

/** The `etag` field of a view: its version, for `If-Match`. */
export const Field = Schema.String.annotations({
  description: "The object's version: send it as If-Match on a change to the object (412 when it moved since)"
})

/** `If-Match` on a change to one object: the `etag` the change was made against (or `*`). */
export const IfMatchHeaders = Schema.Struct({
  "if-match": Schema.optional(Schema.String).annotations({
    description: "The etag of the object the change was made against: 412 when the object changed since"
  })
})
