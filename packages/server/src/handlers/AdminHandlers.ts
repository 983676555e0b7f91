import {
  Api,
  Audit,
  Domains,
  Failures,
  OperationLog,
  OperationsLog,
  ProviderConfigs,
  ServiceTunnels,
  Tenants
} from "@tenet/core"

import { Principal } from "@tenet/core"
import { Effect } from "effect"
import * as ResponseEncoder from "../ResponseEncoder.js"

export const TenantsHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "tenants",
  (handlers) =>
    Effect.map(Tenants.Tenants, (tenants) =>
      handlers
        .handle("create", ({ payload }) => tenants.create(payload))
        .handle("list", () => tenants.list)
        .handle("get", ({ path }) => tenants.get(path.tenant_id))
        .handle("delete", ({ path }) => tenants.delete(path.tenant_id)))
)

export const DomainsHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "domains",
  (handlers) =>
    Effect.map(Domains.Domains, (domains) =>
      handlers
        .handle("assign", ({ path, payload }) => domains.assign(path.tenant_id, payload.domain))
        .handle("list", ({ path }) => domains.list(path.tenant_id))
        .handle("remove", ({ path }) => domains.remove(path.tenant_id, path.domain)))
)

export const ProviderConfigHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "providerConfig",
  (handlers) =>
    Effect.map(ProviderConfigs.ProviderConfigs, (configs) =>
      handlers
        .handle("put", ({ payload }) => configs.put(payload))
        .handle("get", () => configs.get))
)

export const ServiceTunnelsHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "serviceTunnels",
  (handlers) =>
    Effect.map(ServiceTunnels.ServiceTunnels, (tunnels) =>
      handlers
        .handle("create", ({ payload }) => tunnels.create(payload))
        .handle("list", () => tunnels.list)
        .handle("delete", ({ path }) => tunnels.delete(path.service_tunnel_id)))
)

export const OperationsLogHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "operationsLog",
  (handlers) =>
    Effect.map(
      OperationsLog.OperationsLog,
      (log) =>
        handlers.handle("list", ({ urlParams }) =>
          log.page({ limit: urlParams.limit, before: urlParams.before }).pipe(
            Effect.map((page) => OperationLog.OperationLogPage.make(page)),
            Failures.storeUnavailable
          ))
    )
)

export const AuditLogHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "auditLog",
  (handlers) =>
    Effect.map(Audit.AuditTrail, (trail) =>
      handlers
        .handle("list", ({ urlParams }) => trail.list(urlParams))
        .handle("listForTenant", ({ path, urlParams }) =>
          Effect.flatMap(
            Principal.CurrentPrincipal,
            (caller) => trail.listForTenant(caller, path.tenant_id, urlParams)
          )))
)
