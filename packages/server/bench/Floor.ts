/**
 * The framework's floor: an `@effect/platform` HttpApi server on Node with Tenet's routes,
 * nothing else (no auth, no store, no middleware), answering each request with the bytes
 * Tenet answers it with. Tenet cannot be faster than this; the load benchmark reports it
 * beside the bare node:http ceiling so the gap between the two is visible as the framework's.
 *
 * Run as a child process: TENET_REPLAY_PORT and TENET_REPLAY_ANSWERS (a JSON file mapping
 * "METHOD path" to the body) configure it.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"

const answers = new Map<string, string>(
  Object.entries(JSON.parse(readFileSync(process.env.TENET_REPLAY_ANSWERS!, "utf8")) as Record<string, string>)
)

const Api = HttpApi.make("floor").add(
  HttpApiGroup.make("routes")
    .add(HttpApiEndpoint.get("rules", "/security-rules").setUrlParams(Schema.Struct({ vpc_id: Schema.String })))
    .add(HttpApiEndpoint.post("createRule", "/security-rules").setPayload(Schema.Unknown))
    .add(HttpApiEndpoint.post("evaluate", "/security-rules/evaluate").setPayload(Schema.Unknown))
    .add(HttpApiEndpoint.get("vpcs", "/vpcs"))
    .add(HttpApiEndpoint.get("pods", "/pods"))
)

/** What Tenet answered to this method and path (query included). */
const byRequest = ({ request }: { readonly request: { readonly url: string; readonly method: string } }) =>
  Effect.succeed(
    HttpServerResponse.text(answers.get(`${request.method} ${request.url}`) ?? "{}", {
      contentType: "application/json"
    })
  )

const Routes = HttpApiBuilder.group(
  Api,
  "routes",
  (handlers) =>
    handlers.handle("rules", byRequest).handle("createRule", byRequest).handle("evaluate", byRequest).handle(
      "vpcs",
      byRequest
    ).handle("pods", byRequest)
)

HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiBuilder.api(Api).pipe(Layer.provide(Routes))),
  Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: Number(process.env.TENET_REPLAY_PORT) })),
  Layer.launch,
  NodeRuntime.runMain
)
