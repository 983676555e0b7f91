/**
 * The tunnel provider's HTTP API (Cloudflare's v4 API: remotely-managed tunnels and DNS), as
 * far as Tenet uses it. Every answer comes in the `{success, errors, result}` envelope; 429
 * and 5xx answers and unreachable hosts are retried with jittered exponential backoff, and
 * what is left becomes an `EdgeError` whose reason says what the caller can do about it.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import type { HttpClientResponse } from "@effect/platform"
import { EdgeTunnels } from "@tenet/core"
import { Duration, Effect, Schedule, Schema } from "effect"

/** Error codes the provider documents, with what they mean for Tenet. */
export const ErrorCodes = {
  /** "You already have a tunnel with this name". */
  tunnelNameExists: 1013,
  /** "Cannot delete tunnel because it has active connections". */
  tunnelHasConnections: 1022,
  /** "An A, AAAA, or CNAME record with that host already exists". */
  dnsRecordExists: 81053,
  /** "Record already exists" (an identical record). */
  dnsRecordIdentical: 81057,
  /** "Authentication error". */
  authentication: 10000
} as const

const ApiMessage = Schema.Struct({ code: Schema.Number, message: Schema.String })
/** A list's page, as the envelope describes it (the published schema promises none of these). */
const ResultInfo = Schema.Struct({
  per_page: Schema.optional(Schema.Number),
  total_count: Schema.optional(Schema.Number),
  total_pages: Schema.optional(Schema.Number)
})
const Envelope = Schema.Struct({
  success: Schema.Boolean,
  errors: Schema.optionalWith(Schema.Array(ApiMessage), { default: () => [] }),
  result: Schema.optional(Schema.Unknown),
  result_info: Schema.optional(Schema.NullOr(ResultInfo))
})

/** Items per page of a list: the smallest maximum of the lists Tenet reads (zones: 50). */
export const PAGE_SIZE = 50

export const Tunnel = Schema.Struct({ id: Schema.String, name: Schema.String })
export type Tunnel = typeof Tunnel.Type

export const IngressRule = Schema.Struct({
  hostname: Schema.optional(Schema.String),
  service: Schema.String
})
export type IngressRule = typeof IngressRule.Type

const TunnelConfiguration = Schema.Struct({
  config: Schema.optional(Schema.NullOr(Schema.Struct({
    ingress: Schema.optionalWith(Schema.Array(IngressRule), { default: () => [] })
  })))
})

export const Zone = Schema.Struct({ id: Schema.String, name: Schema.String })
export type Zone = typeof Zone.Type

export const DnsRecord = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  name: Schema.String,
  content: Schema.String,
  comment: Schema.optional(Schema.NullOr(Schema.String))
})
export type DnsRecord = typeof DnsRecord.Type

export interface NewDnsRecord {
  readonly type: "CNAME" | "A"
  readonly name: string
  readonly content: string
  readonly proxied: boolean
  readonly comment: string
}

/**
 * A DNS record's `ttl`: 1 is Cloudflare's "automatic" (the only value a proxied record takes).
 * The published contract requires the field on every create.
 */
export const AUTOMATIC_TTL = 1

export const DEFAULT_BASE_URL = "https://api.cloudflare.com/client/v4"

export interface Options {
  readonly baseUrl?: string
  /** Retries of a 429, 5xx or unreachable provider before giving up. */
  readonly retries?: number
  readonly retryBase?: Duration.DurationInput
}

/** A failed call, before it is judged: the provider's HTTP status and error codes. */
export class ProviderFailure extends Schema.TaggedError<ProviderFailure>()("ProviderFailure", {
  status: Schema.Number,
  codes: Schema.Array(Schema.Number),
  detail: Schema.String
}) {
  get retryable() {
    return this.status === 0 || this.status === 429 || this.status >= 500
  }
  has(code: number) {
    return this.codes.includes(code)
  }
  toEdgeError(): EdgeTunnels.EdgeError {
    const reason = this.retryable
      ? "unavailable"
      : this.status === 401 || this.status === 403 || this.has(ErrorCodes.authentication)
      ? "unauthorized"
      : this.has(ErrorCodes.dnsRecordExists) || this.has(ErrorCodes.tunnelNameExists)
      ? "conflict"
      : this.has(ErrorCodes.tunnelHasConnections)
      ? "unavailable"
      : "rejected"
    return new EdgeTunnels.EdgeError({ reason, detail: `the tunnel provider answered ${this.status}: ${this.detail}` })
  }
}

export const make = Effect.fn("CloudflareApi.make")(function*(options: Options = {}) {
  const http = yield* HttpClient.HttpClient
  const baseUrl = options.baseUrl ?? DEFAULT_BASE_URL
  const retry = Schedule.exponential(options.retryBase ?? Duration.millis(250)).pipe(
    Schedule.jittered,
    Schedule.intersect(Schedule.recurs(options.retries ?? 4))
  )

  const decodeEnvelope = (response: HttpClientResponse.HttpClientResponse) =>
    response.json.pipe(
      Effect.flatMap(Schema.decodeUnknown(Envelope)),
      Effect.mapError(() =>
        new ProviderFailure({ status: response.status, codes: [], detail: "an answer that is not the API's envelope" })
      )
    )

  /** One API call: the decoded `result` and its page, or the provider's failure after retries. */
  const callPaged = <A, I>(
    account: EdgeTunnels.EdgeAccount,
    request: HttpClientRequest.HttpClientRequest,
    result: Schema.Schema<A, I>
  ) =>
    http.execute(
      request.pipe(
        HttpClientRequest.prependUrl(baseUrl),
        HttpClientRequest.bearerToken(account.api_token),
        HttpClientRequest.acceptJson
      )
    ).pipe(
      Effect.mapError((e) => new ProviderFailure({ status: 0, codes: [], detail: e.message })),
      Effect.flatMap((response) =>
        Effect.flatMap(decodeEnvelope(response), (envelope) =>
          envelope.success && response.status < 300
            ? Schema.decodeUnknown(result)(envelope.result).pipe(
              Effect.map((decoded) => ({ result: decoded, info: envelope.result_info ?? null })),
              Effect.mapError(() =>
                new ProviderFailure({ status: response.status, codes: [], detail: "an unexpected result shape" })
              )
            )
            : Effect.fail(
              new ProviderFailure({
                status: response.status,
                codes: envelope.errors.map((e) => e.code),
                detail: envelope.errors.map((e) => `${e.message} (${e.code})`).join("; ") || `status ${response.status}`
              })
            ))
      ),
      Effect.retry({ schedule: retry, while: (e) => e.retryable }),
      Effect.withSpan("CloudflareApi.call", { attributes: { method: request.method, url: request.url } })
    )

  const call = <A, I>(
    account: EdgeTunnels.EdgeAccount,
    request: HttpClientRequest.HttpClientRequest,
    result: Schema.Schema<A, I>
  ) => Effect.map(callPaged(account, request, result), (answer) => answer.result)

  /**
   * Every item of a list, page by page: until an empty page, or the last one the envelope counts
   * (by items, or by pages), or a page shorter than the size the server says it used.
   */
  const listAll = <A, I>(
    account: EdgeTunnels.EdgeAccount,
    request: HttpClientRequest.HttpClientRequest,
    item: Schema.Schema<A, I>
  ) =>
    Effect.gen(function*() {
      const all: Array<A> = []
      for (let page = 1;; page++) {
        const answer = yield* callPaged(
          account,
          HttpClientRequest.appendUrlParams(request, { page: String(page), per_page: String(PAGE_SIZE) }),
          Schema.Array(item)
        )
        all.push(...answer.result)
        const info = answer.info
        const last = answer.result.length === 0 || (
          info?.total_count !== undefined
            ? all.length >= info.total_count
            : info?.total_pages !== undefined
            ? page >= info.total_pages
            : answer.result.length < (info?.per_page ?? PAGE_SIZE)
        )
        if (last) return all
      }
    })

  // Request bodies below are plain JSON data, so encoding them cannot fail (bodyUnsafeJson).
  const account = (a: EdgeTunnels.EdgeAccount) => `/accounts/${encodeURIComponent(a.account_id)}`

  return {
    findTunnel: (a: EdgeTunnels.EdgeAccount, name: string) =>
      call(
        a,
        HttpClientRequest.get(`${account(a)}/cfd_tunnel`).pipe(
          HttpClientRequest.setUrlParams({ name, is_deleted: "false" })
        ),
        Schema.Array(Tunnel)
      ).pipe(Effect.map((found) => found.find((t) => t.name === name))),
    /** The account's tunnels that are not deleted. */
    tunnels: (a: EdgeTunnels.EdgeAccount) =>
      listAll(
        a,
        HttpClientRequest.get(`${account(a)}/cfd_tunnel`).pipe(HttpClientRequest.setUrlParams({ is_deleted: "false" })),
        Tunnel
      ),
    createTunnel: (a: EdgeTunnels.EdgeAccount, name: string) =>
      call(
        a,
        HttpClientRequest.post(`${account(a)}/cfd_tunnel`).pipe(
          HttpClientRequest.bodyUnsafeJson({ name, config_src: "cloudflare" })
        ),
        Tunnel
      ),
    deleteTunnel: (a: EdgeTunnels.EdgeAccount, tunnelId: string) =>
      call(a, HttpClientRequest.del(`${account(a)}/cfd_tunnel/${tunnelId}`), Schema.Unknown).pipe(Effect.asVoid),
    /** Drops the tunnel's stale connector connections, which otherwise block its deletion. */
    cleanupConnections: (a: EdgeTunnels.EdgeAccount, tunnelId: string) =>
      call(a, HttpClientRequest.del(`${account(a)}/cfd_tunnel/${tunnelId}/connections`), Schema.Unknown).pipe(
        Effect.asVoid
      ),
    tunnelToken: (a: EdgeTunnels.EdgeAccount, tunnelId: string) =>
      call(a, HttpClientRequest.get(`${account(a)}/cfd_tunnel/${tunnelId}/token`), Schema.String),
    ingress: (a: EdgeTunnels.EdgeAccount, tunnelId: string) =>
      call(a, HttpClientRequest.get(`${account(a)}/cfd_tunnel/${tunnelId}/configurations`), TunnelConfiguration).pipe(
        Effect.map((c) => c.config?.ingress ?? [])
      ),
    /** Replaces the tunnel's whole ingress configuration (the API has no partial update). */
    putIngress: (a: EdgeTunnels.EdgeAccount, tunnelId: string, ingress: ReadonlyArray<IngressRule>) =>
      call(
        a,
        HttpClientRequest.put(`${account(a)}/cfd_tunnel/${tunnelId}/configurations`).pipe(
          HttpClientRequest.bodyUnsafeJson({ config: { ingress } })
        ),
        Schema.Unknown
      ).pipe(Effect.asVoid),
    findZone: (a: EdgeTunnels.EdgeAccount, name: string) =>
      call(
        a,
        HttpClientRequest.get("/zones").pipe(HttpClientRequest.setUrlParams({ name, "account.id": a.account_id })),
        Schema.Array(Zone)
      ).pipe(Effect.map((zones) => zones.find((z) => z.name === name))),
    /** The account's zones. */
    zones: (a: EdgeTunnels.EdgeAccount) =>
      listAll(
        a,
        HttpClientRequest.get("/zones").pipe(HttpClientRequest.setUrlParams({ "account.id": a.account_id })),
        Zone
      ),
    /** The zone's records whose comment starts with `prefix`. */
    dnsRecordsCommented: (a: EdgeTunnels.EdgeAccount, zoneId: string, prefix: string) =>
      listAll(
        a,
        HttpClientRequest.get(`/zones/${zoneId}/dns_records`).pipe(
          HttpClientRequest.setUrlParams({ "comment.startswith": prefix })
        ),
        DnsRecord
      ),
    dnsRecords: (a: EdgeTunnels.EdgeAccount, zoneId: string, name: string) =>
      call(
        a,
        HttpClientRequest.get(`/zones/${zoneId}/dns_records`).pipe(
          HttpClientRequest.setUrlParams({ "name.exact": name })
        ),
        Schema.Array(DnsRecord)
      ),
    createDnsRecord: (a: EdgeTunnels.EdgeAccount, zoneId: string, record: NewDnsRecord) =>
      call(
        a,
        HttpClientRequest.post(`/zones/${zoneId}/dns_records`).pipe(
          HttpClientRequest.bodyUnsafeJson({ ...record, ttl: AUTOMATIC_TTL })
        ),
        DnsRecord
      ),
    deleteDnsRecord: (a: EdgeTunnels.EdgeAccount, zoneId: string, recordId: string) =>
      call(a, HttpClientRequest.del(`/zones/${zoneId}/dns_records/${recordId}`), Schema.Unknown).pipe(Effect.asVoid)
  }
})

export type CloudflareApi = Effect.Effect.Success<ReturnType<typeof make>>
