/** Health and version: unauthenticated, for probes and clients. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ServiceUnavailable } from "../Errors.js"

export class Health extends Schema.Class<Health>("Health")({
  status: Schema.Literal("ok"),
  store: Schema.String,
  orchestrator: Schema.String,
  edge: Schema.String
}) {}

export class Version extends Schema.Class<Version>("Version")({
  name: Schema.Literal("tenet"),
  version: Schema.String.annotations({ description: "Semantic version of the server" }),
  api: Schema.String.annotations({ description: "Version of the API contract; paths carry no version prefix" })
}) {}

export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz")
      .addSuccess(Health)
      .addError(ServiceUnavailable.Wire)
      .annotate(OpenApi.Summary, "Liveness and readiness: 200 when the store answers, 503 when it does not")
  )
  .add(
    HttpApiEndpoint.get("version", "/version")
      .addSuccess(Version)
      .annotate(OpenApi.Summary, "Server and API contract version")
  )
  .annotate(OpenApi.Title, "System")
{}
