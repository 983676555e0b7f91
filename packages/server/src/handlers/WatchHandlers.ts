import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Api, ChangeFeed, Principal } from "@tenet/core"
import { Deferred, Effect, Stream } from "effect"
import * as RequestContext from "../RequestContext.js"

/** An item as Server-Sent Events text: the revision as the event's `id`, the JSON as its `data`. */
const frame = (item: ChangeFeed.Item): string => {
  if (item._tag === "Bookmark") {
    return `id: ${item.revision}\ndata: ${JSON.stringify({ type: "BOOKMARK", revision: String(item.revision) })}\n\n`
  }
  const { id, kind, object, revision, type } = item.event
  return `id: ${revision}\ndata: ${JSON.stringify({ type, kind, id, revision: String(revision), object })}\n\n`
}

export const WatchHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "changes",
  (handlers) =>
    Effect.map(Effect.all([ChangeFeed.ChangeFeed, RequestContext.InFlight]), ([feed, inFlight]) => {
      return handlers.handle("watch", ({ headers, urlParams }) =>
        Effect.gen(function*() {
          const caller = yield* Principal.CurrentPrincipal
          const since = urlParams.since ?? headers["last-event-id"]
          const items = yield* feed.watch({
            tenant: caller._tag === "Tenant" ? caller.tenant_id : null,
            since: since === undefined ? undefined : Number(since)
          })
          return HttpServerResponse.stream(
            // A stream never finishes by itself: it ends when shutdown begins, and the client
            // resumes elsewhere with its last revision.
            items.pipe(Stream.map(frame), Stream.interruptWhen(Deferred.await(inFlight.drainBegun)), Stream.encodeText),
            {
              contentType: "text/event-stream",
              headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
            }
          )
        }))
    })
)
