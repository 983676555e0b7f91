/**
 * The typed Tenet client, derived from the shared contract: every endpoint, field and error
 * is typed and cannot drift from the server.
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Api } from "@tenet/core"
import type { Effect } from "effect"
import { Context, Layer } from "effect"

export interface Options {
  /** Where the server is, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string
  /** Sent as `X-Admin-Token` on every request. */
  readonly adminToken?: string
  /** Sent as `X-Auth-Token` (and `X-API-Token`, which tenant logout names) on every request. */
  readonly tenantToken?: string
}

const headersOf = (options: Options): Record<string, string> => ({
  ...(options.adminToken === undefined ? {} : { "x-admin-token": options.adminToken }),
  ...(options.tenantToken === undefined
    ? {}
    : { "x-auth-token": options.tenantToken, "x-api-token": options.tenantToken })
})

/** A client for the whole API; needs an `HttpClient` (see `layer` for one on fetch). */
export const make = (options: Options) =>
  HttpApiClient.make(Api.TenetApi, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest(HttpClientRequest.setHeaders(headersOf(options)))
  })

export type Client = Effect.Effect.Success<ReturnType<typeof make>>

export class TenetClient extends Context.Tag("@tenet/client/TenetClient")<TenetClient, Client>() {}

/** The client as a service, on the platform's fetch. */
export const layer = (options: Options): Layer.Layer<TenetClient> =>
  Layer.effect(TenetClient, make(options)).pipe(Layer.provide(FetchHttpClient.layer))
