import { Api, Pods, RegistryCredentials, Topologies, Tunnels } from "@tenet/core"
import { Effect } from "effect"
import * as ResponseEncoder from "../ResponseEncoder.js"
import { asTenant } from "./AsTenant.js"

export const PodsHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "pods",
  (handlers) =>
    Effect.map(Pods.Pods, (pods) =>
      handlers
        .handle("create", ({ payload }) => asTenant((caller) => pods.create(caller, payload)))
        .handle("list", () => asTenant(pods.list))
        .handle("delete", ({ path }) => asTenant((caller) => pods.delete(caller, path.pod_id)))
        .handle("addReplica", ({ path }) => asTenant((caller) => pods.addReplica(caller, path.pod_id)))
        .handle("removeReplica", ({ path }) => asTenant((caller) => pods.removeReplica(caller, path.pod_id)))
        .handle("restart", ({ path }) => asTenant((caller) => pods.restart(caller, path.pod_id)))
        .handle("configure", ({ path, payload }) => asTenant((caller) => pods.configure(caller, path.pod_id, payload))))
)

export const TunnelsHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "tunnels",
  (handlers) =>
    Effect.map(Tunnels.Tunnels, (tunnels) =>
      handlers
        .handle(
          "createForPod",
          ({ path, payload }) => asTenant((caller) => tunnels.createForPod(caller, path.pod_id, payload))
        )
        .handle(
          "create",
          ({ payload, urlParams }) => asTenant((caller) => tunnels.createDerived(caller, urlParams.pod_id, payload))
        )
        .handle("listForPod", ({ path }) => asTenant((caller) => tunnels.listForPod(caller, path.pod_id)))
        .handle("list", () => asTenant(tunnels.list))
        .handle("delete", ({ path }) => asTenant((caller) => tunnels.delete(caller, path.tunnel_id))))
)

export const RegistryCredentialsHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "registryCredentials",
  (handlers) =>
    Effect.map(RegistryCredentials.RegistryCredentials, (credentials) =>
      handlers
        .handle(
          "create",
          ({ path, payload }) => asTenant((caller) => credentials.create(caller, path.tenant_id, payload))
        )
        .handle("list", ({ path }) => asTenant((caller) => credentials.list(caller, path.tenant_id)))
        .handle("delete", ({ path }) => asTenant((caller) => credentials.delete(caller, path.tenant_id, path.name))))
)

export const TopologyHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "topology",
  (handlers) =>
    Effect.map(Topologies.Topologies, (topology) =>
      handlers
        .handle("deploy", ({ path, payload, urlParams }) =>
          asTenant((caller) => topology.deploy(caller, path.tenant_id, payload, urlParams.dry_run === true)))
        .handle("get", ({ path }) =>
          asTenant((caller) => topology.get(caller, path.tenant_id))))
)
