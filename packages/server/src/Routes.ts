/**
 * The contract's endpoints as the server matches a raw request to them, before (or without)
 * the platform's router: for the error an endpoint refuses bad input with, and for the route
 * template metrics are labelled with (bounded, and never a tenant's id).
 */
import { Api } from "@tenet/core"

export interface Route {
  readonly method: string
  /** The path as the contract writes it, e.g. `/vpcs/:vpc_id`. */
  readonly path: string
  readonly inputError: "RuleValidation" | "InvalidInput"
}

const routes = Api.inputErrors.map((entry) => ({
  method: entry.method,
  path: entry.path,
  inputError: entry.error,
  segments: entry.path.split("/")
}))

/** The endpoint a request is for (`:name` matches any one non-empty segment), if any. */
export const match = (method: string, url: string): Route | undefined => {
  const segments = url.split("?")[0]!.split("/")
  return routes.find((route) =>
    route.method === method &&
    route.segments.length === segments.length &&
    route.segments.every((segment, i) => segment.startsWith(":") ? segments[i] !== "" : segment === segments[i])
  )
}
