/**
 * The change stream (`GET /watch`): every committed change to what a tenant owns (and tenants
 * themselves, for the admin) as an event, in one order shared by every replica (the store's
 * revision), resumable from any revision still kept. Kubernetes' watch is the model: `ADDED`,
 * `MODIFIED`, `DELETED`, and `BOOKMARK` to say how far a quiet stream has got.
 *
 * An event's `object` is the resource as the API shows it (what the spec hides left out) when the
 * change was made. What the cluster reports rather than the store keeps (a pod's `status`) is
 * not in it: read it from the pod list.
 */
import { Schema } from "effect"
import { ResourceKind } from "./AuditLog.js"

export const EventType = Schema.Literal("ADDED", "MODIFIED", "DELETED")
export type EventType = typeof EventType.Type

/** What the audit trail names that no watch reports: the platform's own objects, and a topology (its objects are). */
const UNWATCHED = ["admin", "provider_config", "service_tunnel", "topology"] as const

/**
 * The kinds of resource a watch reports: every `ResourceKind` but `UNWATCHED`, so a new kind
 * named once in `ResourceKind` is streamed too.
 */
export const EventKind = Schema.Literal(
  ...ResourceKind.literals.filter((kind): kind is Exclude<typeof kind, typeof UNWATCHED[number]> =>
    !(UNWATCHED as ReadonlyArray<string>).includes(kind)
  )
)
export type EventKind = typeof EventKind.Type

/** A change as a commit writes it: the revision is the store's to give. */
export interface NewEvent {
  /** The tenant it belongs to (a tenant's own event: itself). */
  readonly tenant_id: string
  readonly type: EventType
  readonly kind: EventKind
  readonly id: string
  /** The resource's view as JSON (for a deletion, as it was). */
  readonly object: unknown
}

/** A change as the store keeps it: with its revision, one more than the change before it. */
export interface StoredEvent extends NewEvent {
  readonly revision: number
}

/** One event of the stream, as sent: `revision` as a decimal string (the SSE event's `id`). */
export const WatchEvent = Schema.Struct({
  type: EventType,
  kind: EventKind,
  id: Schema.String,
  revision: Schema.String,
  object: Schema.Unknown
}).annotations({ identifier: "WatchEvent" })
export type WatchEvent = typeof WatchEvent.Type

/** Every change up to `revision` has been sent (or did not concern this watcher). */
export const Bookmark = Schema.Struct({
  type: Schema.Literal("BOOKMARK"),
  revision: Schema.String
}).annotations({ identifier: "Bookmark" })
export type Bookmark = typeof Bookmark.Type

/**
 * The stream's last frame when the server ends it for a reason the client must act on (as a
 * Kubernetes watch's `ERROR` event): `status` 401 when the credential it was opened with no
 * longer holds (its token rotated, its session signed out, its tenant deleted). Resuming with
 * that credential is refused; a new one opens a new stream. 429 when it was one of a burst that
 * together passed the tenant's quota of streams: resume after `retry_after` seconds.
 */
export const StreamError = Schema.Struct({
  type: Schema.Literal("ERROR"),
  status: Schema.Int,
  detail: Schema.String,
  retry_after: Schema.optional(Schema.Int)
}).annotations({ identifier: "StreamError" })
export type StreamError = typeof StreamError.Type

export const StreamEvent = Schema.Union(WatchEvent, Bookmark, StreamError)
export type StreamEvent = typeof StreamEvent.Type

/** A revision as a query or a header gives it: digits, as an event's `revision` and its SSE `id` are. */
const Revision = Schema.String.pipe(
  Schema.pattern(/^\d{1,15}$/, { description: "a revision (the digits of an event's or a bookmark's revision)" })
)

/** Where to resume: after this revision (`since`, or the SSE `Last-Event-ID` header). */
export const WatchQuery = Schema.Struct({
  since: Schema.optional(Revision).annotations({
    description: "Resume after this revision (an event's `revision`, a bookmark's); left out: from now"
  })
})

export const WatchHeaders = Schema.Struct({
  "last-event-id": Schema.optional(Revision).annotations({
    description: "As `since`: what an EventSource sends when it reconnects"
  })
})
