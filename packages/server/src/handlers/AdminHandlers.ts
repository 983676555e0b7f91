import { HttpApiBuilder } from "@effect/platform"
import type { Tenant } from "@tenet/core"
import {
  Api,
  Audit,
  Domains,
  Failures,
  OperationLog,
  OperationsLog,
  Page,
  Principal,
  ProviderConfigs,
  ServiceTunnels,
  Tenants
} from "@tenet/core"
import { Effect, Option } from "effect"
import * as Pages from "../Pages.js"
import * as ResponseJson from "../ResponseJson.js"

export const TenantsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "tenants",
  (handlers) =>
    Effect.map(Tenants.Tenants, (tenants) => {
      const json = ResponseJson.group("tenants")
      return handlers
        .handle("create", ({ payload }) => tenants.create(payload).pipe(json("create")))
        .handle("list", ({ urlParams }) =>
          Effect.flatMap(Pages.requestOf("tenants.list", urlParams), (request) => {
            const answer = (items: ReadonlyArray<Tenant.Tenant>) => json("list")(Effect.succeed(items))
            // The store reads the page itself (a key range, LIMIT n + 1): a page of 100 is 100 rows.
            return Option.match(request, {
              onNone: () => Effect.flatMap(tenants.list, answer),
              onSome: (request) => Pages.fromStore(request, tenants.page(request.after, request.limit), answer)
            })
          }))
        .handle("get", ({ path }) => tenants.get(path.tenant_id).pipe(json("get")))
        .handle("delete", ({ path }) => tenants.delete(path.tenant_id))
    })
)

export const DomainsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "domains",
  (handlers) =>
    Effect.map(Domains.Domains, (domains) => {
      const json = ResponseJson.group("domains")
      return handlers
        .handle("assign", ({ path, payload }) => domains.assign(path.tenant_id, payload.domain).pipe(json("assign")))
        .handle("list", ({ path, urlParams }) =>
          Pages.paged(
            "domains.list",
            urlParams,
            Page.byCreation,
            Effect.flatMap(Principal.CurrentPrincipal, (caller) => domains.list(caller, path.tenant_id)),
            (page) => json("list")(Effect.succeed(page)),
            { tenant_id: path.tenant_id }
          ))
        .handle("remove", ({ path }) => domains.remove(path.tenant_id, path.domain))
    })
)

export const ProviderConfigHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "providerConfig",
  (handlers) =>
    Effect.map(ProviderConfigs.ProviderConfigs, (configs) => {
      const json = ResponseJson.group("providerConfig")
      return handlers
        .handle("put", ({ payload }) => configs.put(payload).pipe(json("put")))
        .handle("get", () => configs.get.pipe(json("get")))
    })
)

export const ServiceTunnelsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "serviceTunnels",
  (handlers) =>
    Effect.map(ServiceTunnels.ServiceTunnels, (tunnels) => {
      const json = ResponseJson.group("serviceTunnels")
      return handlers
        .handle("create", ({ payload }) => tunnels.create(payload).pipe(json("create")))
        .handle("list", ({ urlParams }) =>
          Pages.paged("serviceTunnels.list", urlParams, Page.byCreation, tunnels.list, (page) =>
            json("list")(Effect.succeed(page))))
        .handle("delete", ({ path }) =>
          tunnels.delete(path.service_tunnel_id))
    })
)

export const OperationsLogHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "operationsLog",
  (handlers) =>
    Effect.map(OperationsLog.OperationsLog, (log) => {
      const json = ResponseJson.group("operationsLog")
      return handlers.handle("list", ({ urlParams }) =>
        log.page({ limit: urlParams.limit, before: urlParams.before }).pipe(
          Effect.map((page) =>
            OperationLog.OperationLogPage.make(page)
          ),
          Failures.storeUnavailable,
          json("list")
        ))
    })
)

export const AuditLogHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "auditLog",
  (handlers) =>
    Effect.map(Audit.AuditTrail, (trail) => {
      const json = ResponseJson.group("auditLog")
      return handlers
        .handle("list", ({ urlParams }) => trail.list(urlParams).pipe(json("list")))
        .handle("listForTenant", ({ path, urlParams }) =>
          Effect.flatMap(Principal.CurrentPrincipal, (caller) =>
            trail.listForTenant(caller, path.tenant_id, urlParams))
            .pipe(json("listForTenant")))
    })
)
