import { HttpApiBuilder } from "@effect/platform"
import { Api, EdgeTunnels, Failures, Orchestrator, ServerInfo, Store, SystemApi } from "@tenet/core"
import { Effect } from "effect"

export const SystemHandlers = HttpApiBuilder.group(Api.TenetApi, "system", (handlers) =>
  Effect.gen(function*() {
    const store = yield* Store.Store
    const orchestrator = yield* Orchestrator.Orchestrator
    const edge = yield* EdgeTunnels.EdgeTunnels
    const info = yield* ServerInfo.ServerInfo
    return handlers
      .handle("healthz", () =>
        store.ping.pipe(
          Effect.as(SystemApi.Health.make({
            status: "ok",
            store: store.backend,
            orchestrator: orchestrator.backend,
            edge: edge.backend
          })),
          Failures.storeUnavailable
        ))
      .handle("version", () =>
        Effect.succeed(SystemApi.Version.make({ name: "tenet", version: info.version, api: Api.API_VERSION })))
  }))
