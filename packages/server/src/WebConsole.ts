/**
 * The web console at `/console`: the static files `@tenet/console` builds into this package's
 * `dist/console` (`pnpm build`), served as they are. The console is a client of the public API
 * like any other; the server only hands it its files, under a policy that lets the page load
 * nothing but them and talk to nothing but this server.
 */
import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { readFile } from "node:fs/promises"

/** Where the build puts the console: `dist/console`, one level above both src/ and dist/. */
const directory = new URL("../dist/console/", import.meta.url)

/** The files served, by name: a `Map`, so no name an object inherits (`constructor`) is one. */
const FILES: ReadonlyMap<string, string> = new Map([
  ["index.html", "text/html; charset=utf-8"],
  ["console.js", "text/javascript; charset=utf-8"],
  ["console.css", "text/css; charset=utf-8"],
  ["console.js.LEGAL.txt", "text/plain; charset=utf-8"]
])

const HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache"
}

const serve = (name: string) =>
  Effect.gen(function*() {
    const type = FILES.get(name)
    if (type === undefined) {
      return yield* HttpServerResponse.json({ detail: `no console file ${name}` }, { status: 404 })
    }
    const body = yield* Effect.tryPromise(() => readFile(new URL(name, directory))).pipe(Effect.option)
    if (body._tag === "None") {
      return yield* HttpServerResponse.json(
        { detail: "the console is not built into this server: run `pnpm build` (or `pnpm start`)" },
        { status: 404 }
      )
    }
    return HttpServerResponse.uint8Array(body.value, { contentType: type, headers: HEADERS })
  })

/**
 * Where a browser pointed at the server's root is sent: the console (a person there wants it).
 * Only the root itself: the router also takes a path that climbs back to it (`/console/%2e%2e`),
 * which is no route.
 */
const toConsole = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
  request.url.split("?")[0] === "/"
    ? HttpServerResponse.empty({ status: 302, headers: { location: "/console" } })
    : HttpServerResponse.unsafeJson({ detail: `no route for GET ${request.url.split("?")[0]}` }, { status: 404 }))

/** The routes `/console` (the page), `/console/{file}`, and `/` (a redirect to the console). */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.all([
    router.get("/", toConsole),
    router.get("/console", serve("index.html")),
    router.get("/console/:file", Effect.flatMap(HttpRouter.params, (params) => serve(params.file ?? "")))
  ])
)
