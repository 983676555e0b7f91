/**
 * The change stream: `GET /watch`, Server-Sent Events, for a tenant (its own changes) or the
 * admin (every tenant's, and tenants themselves). See `domain/ChangeEvent.ts`.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AdminOrTenantAuth } from "../contract/Security.js"
import { WatchHeaders, WatchQuery } from "../domain/ChangeEvent.js"
import { Gone, TooManyRequests } from "../Errors.js"

/** The stream's text: `id: <revision>` and `data: <event JSON>` per event (a `WatchEvent` or a `Bookmark`). */
export const EventStream = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })
).annotations({ description: "Server-Sent Events: each `data:` line a WatchEvent or a Bookmark as JSON" })

export class WatchApi extends HttpApiGroup.make("changes")
  .add(
    HttpApiEndpoint.get("watch", "/watch")
      .setUrlParams(WatchQuery)
      .setHeaders(WatchHeaders)
      .addSuccess(EventStream)
      .addError(Gone.Wire)
      .addError(TooManyRequests.Wire)
      .middleware(AdminOrTenantAuth)
      .annotate(
        OpenApi.Summary,
        "Every change as it is committed (Server-Sent Events): a tenant's own, or every tenant's for the admin"
      )
  )
  .annotate(OpenApi.Title, "Change stream")
  .annotate(
    OpenApi.Description,
    "Each event is `{type: ADDED|MODIFIED|DELETED, kind, id, revision, object}`, `object` the resource as the API " +
      "shows it when the change was made (a deletion: as it was; a pod without its status, which is the cluster's). " +
      "The SSE `id` is the revision: resume with `?since=<revision>` or `Last-Event-ID`; without either the stream " +
      "starts now. A bookmark (`{type: BOOKMARK, revision}`) follows the backlog and comes every 30 s. A revision " +
      "older than what is kept (`TENET_WATCH_RETENTION`, an hour by default) is 410: list again, then watch from " +
      "the new stream's first bookmark. A tenant holds at most its quota of streams open on one replica (429 past " +
      "it; of a burst opened together, the one too many ends at once with `{type: ERROR, status: 429}`). A stream opened with a token that is then rotated (or a session signed out) ends within seconds, its " +
      "last frame `{type: ERROR, status: 401, detail}`. " +
      "Every replica serves every change."
  )
{}
