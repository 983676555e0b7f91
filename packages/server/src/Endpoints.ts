/**
 * The contract's endpoints in the platform's router, and nowhere else: `MatchedEndpoint` (the
 * contract's first middleware of every endpoint) implemented, reading the route the router
 * matched; and, in that same router, a route answering 405 for each method a contract path
 * does not have.
 */
import {
  HttpApiBuilder,
  HttpApiError,
  HttpMethod,
  HttpRouter,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Api, Audit, InputProblems, MatchedEndpoint } from "@tenet/core"
import { Context, Effect, FiberRef, Layer } from "effect"
import * as RequestContext from "./RequestContext.js"

const endpoints = Api.endpoints

/** Every endpoint's request series at its success status, served at 0 from the start. */
export const registerMetrics = RequestContext.registerRoutes(endpoints)

/** By the route the platform matched: its method and its path as declared. */
const byRoute = new Map(endpoints.map((e) => [`${e.method} ${e.path}`, e]))

/** Path parameters as the audit entry keeps them (the router's, percent-decoded). */
const definedParams = (params: Readonly<Record<string, string | undefined>>) => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(params)) if (value !== undefined) out[name] = value
  return out
}

/**
 * A body sent to an endpoint that takes none (a delete, a restart, a replica change) is refused
 * rather than ignored, like an unknown field: `{"count": 3}` on `POST /pods/{id}/replicas` must
 * not look as if it had been read. An empty object is no body. What is wrong with `body`
 * (parsed JSON) as such an endpoint's: none when it takes a body.
 */
export const unreadBodyProblems = (endpoint: Api.Endpoint, body: unknown): ReadonlyArray<InputProblems.Problem> => {
  if (endpoint.takesBody) return []
  if (body === null || (typeof body === "object" && !Array.isArray(body) && Object.keys(body).length === 0)) return []
  const takesNone = `${endpoint.method} ${endpoint.path} takes no body`
  return typeof body === "object" && !Array.isArray(body)
    ? Object.keys(body).map((key) => ({ field: key, message: `unknown field ${JSON.stringify(key)}; ${takesNone}` }))
    : [{ field: "body", message: `must be left out: ${takesNone}` }]
}

/** A failure to decode, for `Refusals` to word (it decodes every part again). */
const undecodable = (problems: ReadonlyArray<InputProblems.Problem>) =>
  problems.length === 0 ? Effect.void : Effect.fail(
    new HttpApiError.HttpApiDecodeError({
      issues: problems.map((p) => ({ _tag: "Unexpected" as const, path: [p.field], message: p.message })),
      message: InputProblems.summary(problems)
    })
  )

/** The body of an endpoint that takes none: the platform never reads it, so this is its one read. */
const refuseUnreadBody = (endpoint: Api.Endpoint, request: HttpServerRequest.HttpServerRequest) => {
  const length = Number(request.headers["content-length"] ?? 0)
  if (endpoint.takesBody || !HttpMethod.hasBody(request.method) || !(length > 0)) return Effect.void
  return Effect.flatMap(Effect.orDie(request.json), (body) => undecodable(unreadBodyProblems(endpoint, body)))
}

/**
 * A query parameter the endpoint does not take, or one sent twice, is refused rather than
 * ignored: `?dryrun=true` for `?dry_run=true` must not apply what was meant as a preview.
 */
const refuseUnknownParameters = (endpoint: Api.Endpoint, query: Readonly<Record<string, string | Array<string>>>) =>
  undecodable(
    InputProblems.unknownParameters(
      Object.entries(query).map(([name, value]) => [name, Array.isArray(value) ? value.length : 1] as const),
      endpoint.query
    )
  )

/** Whether the request is the endpoint's dry run (`?dry_run=true`, where the contract's query takes it). */
const isDryRun = (endpoint: Api.Endpoint, query: Readonly<Record<string, string | Array<string>>>) =>
  endpoint.query.includes("dry_run") && query["dry_run"] === "true"

/**
 * Names the matched endpoint on the request's state, opens its audit entry (for the endpoints
 * that change something, but not for a dry run), and refuses a query parameter or a body the
 * endpoint does not take. Run for every request, so read off the fiber in one step: an effect
 * only where there is something to set or to refuse.
 */
export const layer = Layer.succeed(
  MatchedEndpoint.MatchedEndpoint,
  Effect.withFiberRuntime((fiber) => {
    const context = fiber.currentContext as Context.Context<
      HttpRouter.RouteContext | HttpServerRequest.ParsedSearchParams | HttpServerRequest.HttpServerRequest
    >
    const { params, route } = Context.get(context, HttpRouter.RouteContext)
    const endpoint = byRoute.get(`${route.method} ${route.path}`)
    const state = fiber.getFiberRef(RequestContext.Current)
    if (endpoint === undefined || state === undefined) return Effect.void
    const query = Context.get(context, HttpServerRequest.ParsedSearchParams)
    state.endpoint = endpoint
    state.params = params
    // A dry run changes nothing, so it leaves no entry, whatever its answer.
    state.audit = isDryRun(endpoint, query)
      ? undefined
      : Audit.open(endpoint.endpoint, endpoint.audit, state.id, () => definedParams(params))
    const checked = Effect.zipRight(
      refuseUnknownParameters(endpoint, query),
      refuseUnreadBody(endpoint, Context.get(context, HttpServerRequest.HttpServerRequest))
    )
    return state.audit === undefined ? checked : Effect.zipRight(FiberRef.set(Audit.CurrentEntry, state.audit), checked)
  })
)

const METHODS: ReadonlyArray<HttpMethod.HttpMethod> = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

const segmentsOf = (path: string) => path.split("/")
const isParam = (segment: string) => segment.startsWith(":")

/**
 * Whether a request to `path` (its parameters any value no static segment has) may be routed
 * to `template`: the same segments, each equal or a parameter in `template`.
 */
const reaches = (template: string, path: string) => {
  const t = segmentsOf(template)
  const p = segmentsOf(path)
  return t.length === p.length && t.every((segment, i) => isParam(segment) || (!isParam(p[i]!) && segment === p[i]))
}

/** Each contract path with the methods a request to it may use. */
const methodsByPath: ReadonlyMap<string, ReadonlyArray<string>> = new Map(
  [...new Set(endpoints.map((e) => e.path))].map((path) => [
    path,
    [...new Set(endpoints.filter((e) => reaches(e.path, path)).map((e) => e.method))].sort()
  ])
)

const isPath = (path: string): path is `/${string}` => path.startsWith("/")

/** 405 naming the methods the path has (RFC 9110, 15.5.6). */
const methodNotAllowed = (allowed: ReadonlyArray<string>) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
    HttpServerResponse.unsafeJson(
      { detail: `${request.method} is not allowed on ${request.url.split("?")[0]}; use ${allowed.join(", ")}` },
      { status: 405, headers: { allow: allowed.join(", ") } }
    ))

/** For each contract path, a 405 route for every method no endpoint of it serves. */
export const methodNotAllowedRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.forEach(
    [...methodsByPath].flatMap(([path, allowed]) =>
      METHODS.filter((method) => !allowed.includes(method)).map((method) => ({ method, path, allowed }))
    ),
    ({ allowed, method, path }) =>
      isPath(path) ? router.addRoute(HttpRouter.makeRoute(method, path, methodNotAllowed(allowed))) : Effect.void,
    { discard: true }
  )
)
