/**
 * The contract's endpoints as the server matches a raw request to them, before (or without)
 * the platform's router: for the error an endpoint refuses bad input with, for the route
 * template metrics are labelled with (bounded, and never a tenant's id), and for the action
 * and path parameters of the request's audit entry.
 */
import { Api } from "@tenet/core"

export interface Route {
  /** The contract's endpoint, `group.endpoint`. */
  readonly endpoint: string
  readonly method: string
  /** The path as the contract writes it, e.g. `/vpcs/:vpc_id`. */
  readonly path: string
  readonly inputError: "RuleValidation" | "InvalidInput"
}

const routes = Api.inputErrors.map((entry) => ({
  endpoint: entry.endpoint,
  method: entry.method,
  path: entry.path,
  inputError: entry.error,
  segments: entry.path.split("/")
}))

const fits = (route: (typeof routes)[number], segments: ReadonlyArray<string>) =>
  route.segments.length === segments.length &&
  route.segments.every((segment, i) => segment.startsWith(":") ? segments[i] !== "" : segment === segments[i])

const segmentsOf = (url: string) => url.split("?")[0]!.split("/")

/** The endpoint a request is for (`:name` matches any one non-empty segment), if any. */
export const match = (method: string, url: string): Route | undefined => {
  const segments = segmentsOf(url)
  return routes.find((route) => route.method === method && fits(route, segments))
}

/** The methods the API serves at a URL's path (none for a path it does not know). */
export const methodsOf = (url: string): ReadonlyArray<string> => {
  const segments = segmentsOf(url)
  return [...new Set(routes.filter((route) => fits(route, segments)).map((route) => route.method))].sort()
}

/** The values of the route's `:name` segments in `url` (as sent: percent-decoded where valid). */
export const params = (route: Route, url: string): Record<string, string> => {
  const segments = segmentsOf(url)
  const found: Record<string, string> = {}
  route.path.split("/").forEach((segment, i) => {
    if (!segment.startsWith(":")) return
    const raw = segments[i] ?? ""
    try {
      found[segment.slice(1)] = decodeURIComponent(raw)
    } catch {
      found[segment.slice(1)] = raw
    }
  })
  return found
}
