import { HttpApiBuilder } from "@effect/platform"
import { Api, Errors, Page, Pods, RegistryCredentials, Topologies, TopologyBody, Tunnels } from "@tenet/core"
import { Effect, Either } from "effect"
import * as Pages from "../Pages.js"
import * as ResponseJson from "../ResponseJson.js"
import { asTenant } from "./AsTenant.js"

export const PodsHandlers = HttpApiBuilder.group(Api.TenetApi, "pods", (handlers) =>
  Effect.map(Pods.Pods, (pods) => {
    return handlers
      .handle("create", ({ payload }) =>
        asTenant((caller) => pods.create(caller, payload)).pipe(ResponseJson.answerWithEtag))
      .handle("list", ({ urlParams }) =>
        Pages.paged(urlParams, Page.byCreation, asTenant(pods.list), (page) =>
          ResponseJson.answer(Effect.succeed(page))))
      .handle("delete", ({ headers, path }) =>
        asTenant((caller) =>
          pods.delete(caller, path.pod_id, headers["if-match"])
        ))
      .handle(
        "addReplica",
        ({ headers, path }) =>
          asTenant((caller) =>
            pods.addReplica(caller, path.pod_id, headers["if-match"])
          ).pipe(ResponseJson.answer)
      )
      .handle(
        "removeReplica",
        ({ headers, path }) =>
          asTenant((caller) =>
            pods.removeReplica(caller, path.pod_id, headers["if-match"])
          ).pipe(
            ResponseJson.answer
          )
      )
      .handle(
        "restart",
        ({ path }) => asTenant((caller) => pods.restart(caller, path.pod_id)).pipe(ResponseJson.answer)
      )
      .handle(
        "configure",
        ({ headers, path, payload }) =>
          asTenant((caller) => pods.configure(caller, path.pod_id, payload, headers["if-match"])).pipe(
            ResponseJson.answer
          )
      )
  }))

export const TunnelsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "tunnels",
  (handlers) =>
    Effect.map(Tunnels.Tunnels, (tunnels) => {
      return handlers
        .handle("createForPod", ({ path, payload }) =>
          asTenant((caller) =>
            tunnels.createForPod(caller, path.pod_id, payload)
          ).pipe(ResponseJson.answerWithEtag))
        .handle("create", ({ payload, urlParams }) =>
          asTenant((caller) =>
            tunnels.createDerived(caller, urlParams.pod_id, payload)
          ).pipe(ResponseJson.answerWithEtag))
        .handle(
          "listForPod",
          ({ path, urlParams }) =>
            Pages.paged(
              urlParams,
              Page.byCreation,
              asTenant((caller) =>
                tunnels.listForPod(caller, path.pod_id)
              ),
              (page) =>
                ResponseJson.answer(Effect.succeed(page)),
              { pod_id: path.pod_id }
            )
        )
        .handle("list", ({ urlParams }) =>
          Pages.paged(urlParams, Page.byCreation, asTenant(tunnels.list), (page) =>
            ResponseJson.answer(Effect.succeed(page))))
        .handle("delete", ({ headers, path }) =>
          asTenant((caller) =>
            tunnels.delete(caller, path.tunnel_id, headers["if-match"])
          ))
    })
)

export const RegistryCredentialsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "registryCredentials",
  (handlers) =>
    Effect.map(RegistryCredentials.RegistryCredentials, (credentials) => {
      return handlers
        .handle("create", ({ path, payload }) =>
          asTenant((caller) =>
            credentials.create(caller, path.tenant_id, payload)
          ).pipe(ResponseJson.answerWithEtag))
        .handle("list", ({ path, urlParams }) =>
          Pages.paged(
            urlParams,
            (credential) => [credential.created_at.epochMillis, credential.name],
            asTenant((caller) => credentials.list(caller, path.tenant_id)),
            (page) => ResponseJson.answer(Effect.succeed(page)),
            { tenant_id: path.tenant_id }
          ))
        .handle("delete", ({ headers, path }) =>
          asTenant((caller) =>
            credentials.delete(caller, path.tenant_id, path.name, headers["if-match"])
          ).pipe(ResponseJson.answer))
    })
)

export const TopologyHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "topology",
  (handlers) =>
    Effect.map(Topologies.Topologies, (topology) => {
      return handlers
        // Read item by item (`TopologyBody`), so that the answer names every problem at once,
        // the schema's with the deploy's.
        .handleRaw("deploy", ({ path, request, urlParams }) =>
          Effect.flatMap(Effect.orDie(request.json), (body) =>
            Either.match(TopologyBody.decode(body), {
              onLeft: (problems) =>
                Effect.fail(Errors.InvalidInput.of(problems)),
              onRight: (decoded) =>
                asTenant((caller) => topology.deploy(caller, path.tenant_id, decoded, urlParams.dry_run === true))
            })).pipe(ResponseJson.answer))
        .handle("get", ({ path }) =>
          asTenant((caller) => topology.get(caller, path.tenant_id)).pipe(ResponseJson.answer))
    })
)
