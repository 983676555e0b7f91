/**
 * How the contract retires something: an endpoint is deprecated for at least one release
 * before a release removes it (Stripe's and Kubernetes' policy; the README's "Versions and
 * releases"). While it lasts, the OpenAPI document marks it `deprecated` and says what to use
 * instead, and every answer it gives carries `Deprecation` (RFC 9745) and, once a date is set,
 * `Sunset` (RFC 8594), so a client learns of it from the wire, not only from the changelog.
 */
import { type HttpApiEndpoint, type HttpMethod, OpenApi } from "@effect/platform"
import { Context } from "effect"

export interface Deprecation {
  /** The day it was deprecated, `YYYY-MM-DD` (UTC). */
  readonly since: string
  /** The day after which a release may remove it, `YYYY-MM-DD` (UTC), once decided. */
  readonly sunset?: string
  /** What to use instead, for the document and the changelog. */
  readonly instead: string
}

export class Deprecated extends Context.Tag("@tenet/core/api/Deprecated")<Deprecated, Deprecation>() {}

const DAY = /^\d{4}-\d{2}-\d{2}$/

const instant = (day: string): Date => {
  if (!DAY.test(day) || Number.isNaN(Date.parse(`${day}T00:00:00Z`))) {
    throw new Error(`a deprecation's dates are YYYY-MM-DD, not ${JSON.stringify(day)}`)
  }
  return new Date(`${day}T00:00:00Z`)
}

/** The sentence the OpenAPI document gives a deprecated endpoint. */
export const describe = (deprecation: Deprecation): string =>
  `Deprecated since ${deprecation.since}: ${deprecation.instead}` +
  (deprecation.sunset === undefined ? "." : `. A release after ${deprecation.sunset} may remove it.`)

/** Marks an endpoint deprecated, in the document and on the wire. */
export const deprecate = (deprecation: Deprecation) =>
<
  Name extends string,
  Method extends HttpMethod.HttpMethod,
  Path,
  UrlParams,
  Payload,
  Headers,
  Success,
  Error,
  R,
  RE
>(
  endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>
) => {
  instant(deprecation.since)
  if (deprecation.sunset !== undefined) instant(deprecation.sunset)
  return endpoint
    .annotate(Deprecated, deprecation)
    .annotate(OpenApi.Deprecated, true)
    .annotate(OpenApi.Description, describe(deprecation))
}

/** The headers of every answer of a deprecated endpoint. */
export const headersOf = (deprecation: Deprecation): Record<string, string> => ({
  // RFC 9745: a structured-field date, seconds since the epoch.
  deprecation: `@${instant(deprecation.since).getTime() / 1000}`,
  ...(deprecation.sunset === undefined ? {} : { sunset: instant(deprecation.sunset).toUTCString() })
})
