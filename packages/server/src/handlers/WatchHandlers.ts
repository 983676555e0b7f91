import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Api, ChangeFeed, type Errors, Identity, Principal, Quotas } from "@tenet/core"
import { Deferred, Duration, Effect, Option, Schedule, Stream } from "effect"
import * as RequestContext from "../RequestContext.js"

/** An item as Server-Sent Events text: the revision as the event's `id`, the JSON as its `data`. */
const frame = (item: ChangeFeed.Item): string => {
  if (item._tag === "Bookmark") {
    return `id: ${item.revision}\ndata: ${JSON.stringify({ type: "BOOKMARK", revision: String(item.revision) })}\n\n`
  }
  const { id, kind, object, revision, type } = item.event
  return `id: ${revision}\ndata: ${JSON.stringify({ type, kind, id, revision: String(revision), object })}\n\n`
}

/**
 * How often an open stream checks that the credential it was opened with still holds, against
 * the store every replica shares: a token rotated (or a session signed out) anywhere ends its
 * streams everywhere within this, plus the stream's next frame.
 */
export const REVALIDATE_EVERY = Duration.seconds(2)

/** The last frame of a stream the server ended: why, as the request's refusal would say it. */
const ending = (
  body: { readonly status: number; readonly detail: string; readonly retry_after?: number | undefined }
) => `data: ${JSON.stringify({ type: "ERROR", ...body })}\n\n`

const REVOKED = ending({
  status: 401,
  detail: "the token this stream was opened with is no longer valid (rotated, signed out, or its tenant " +
    "deleted): open a new stream with a current token"
})

export const WatchHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "changes",
  (handlers) =>
    Effect.map(
      Effect.all([ChangeFeed.ChangeFeed, RequestContext.InFlight, Identity.Identity, Quotas.Quotas]),
      ([feed, inFlight, identity, quotas]) => {
        return handlers.handle("watch", ({ headers, urlParams }) =>
          Effect.gen(function*() {
            const caller = yield* Principal.CurrentPrincipal
            const request = yield* HttpServerRequest.HttpServerRequest
            const since = urlParams.since ?? headers["last-event-id"]
            // A tenant's streams are bounded by its quota; the admin's are not.
            const limit = caller._tag === "Tenant"
              ? Option.getOrUndefined(Option.map(yield* quotas.limitsOf(caller.tenant_id), (l) => l.watchers))
              : undefined
            const items = yield* feed.watch({
              tenant: caller._tag === "Tenant" ? caller.tenant_id : null,
              since: since === undefined ? undefined : Number(since),
              limit
            })
            // The credential as it was presented; authenticated again as it was the first time.
            const stillValid: Effect.Effect<Principal.Principal, Errors.Unauthorized | Errors.ServiceUnavailable> =
              caller._tag === "Tenant"
                ? identity.authenticateTenant((request.headers["x-auth-token"] ?? "").trim())
                : identity.authenticateAdmin((request.headers["x-admin-token"] ?? "").trim())
            const revoked = stillValid.pipe(
              Effect.as(false),
              // Only a refusal ends the stream: a store that does not answer for a moment does not.
              Effect.catchTags({
                Unauthorized: () => Effect.succeed(true),
                ServiceUnavailable: () => Effect.succeed(false)
              }),
              Effect.repeat({ schedule: Schedule.spaced(REVALIDATE_EVERY), until: (gone) => gone })
            )
            const stream = Stream.unwrapScoped(Effect.gen(function*() {
              const ended = yield* Deferred.make<void>()
              yield* Effect.forkScoped(Effect.zipRight(revoked, Deferred.succeed(ended, undefined)))
              return items.pipe(
                Stream.map(frame),
                // One of a burst that together passed the tenant's quota of streams.
                Stream.catchTag(
                  "TooManyRequests",
                  (e) => Stream.make(ending({ status: 429, detail: e.detail, retry_after: e.retry_after }))
                ),
                Stream.interruptWhen(Deferred.await(ended)),
                // Its last frame says why it ended, when a revoked credential ended it.
                Stream.concat(
                  Stream.fromEffect(Deferred.isDone(ended)).pipe(
                    Stream.filter((done) => done),
                    Stream.as(REVOKED)
                  )
                )
              )
            }))
            return HttpServerResponse.stream(
              // A stream never finishes by itself: it ends when shutdown begins, and the client
              // resumes elsewhere with its last revision.
              stream.pipe(Stream.interruptWhen(Deferred.await(inFlight.drainBegun)), Stream.encodeText),
              {
                contentType: "text/event-stream",
                headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
              }
            )
          }))
      }
    )
)
