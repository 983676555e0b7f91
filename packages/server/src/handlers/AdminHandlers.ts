import { HttpApiBuilder } from "@effect/platform"
import type { Tenant } from "@tenet/core"
import {
  Api,
  Audit,
  ChangeFeed,
  Domains,
  Failures,
  OperationLog,
  OperationsLog,
  Page,
  Principal,
  ProviderConfigs,
  Quotas,
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
      return handlers
        .handle("create", ({ payload }) => tenants.create(payload).pipe(ResponseJson.answerWithEtag))
        .handle("list", ({ urlParams }) =>
          Effect.flatMap(Pages.requestOf(urlParams), (request) => {
            const answer = (items: ReadonlyArray<Tenant.Tenant>) => ResponseJson.answer(Effect.succeed(items))
            // The store reads the page itself (a key range, LIMIT n + 1): a page of 100 is 100 rows.
            return Option.match(request, {
              onNone: () => Effect.flatMap(tenants.list, answer),
              onSome: (request) => Pages.fromStore(request, tenants.page(request.after, request.limit), answer)
            })
          }))
        .handle("get", ({ path }) => tenants.get(path.tenant_id).pipe(ResponseJson.answer))
        .handle("delete", ({ headers, path }) => tenants.delete(path.tenant_id, headers["if-match"]))
    })
)

export const QuotasHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "quotas",
  (handlers) =>
    Effect.map(Effect.all([Quotas.Quotas, ChangeFeed.ChangeFeed]), ([quotas, feed]) => {
      return handlers
        .handle("get", ({ path }) =>
          Effect.flatMap(
            Principal.CurrentPrincipal,
            (caller) => quotas.get(caller, path.tenant_id, feed.watchersOf(path.tenant_id))
          ).pipe(ResponseJson.answer))
        .handle("set", ({ path, payload }) =>
          quotas.set(path.tenant_id, payload, feed.watchersOf(path.tenant_id)).pipe(ResponseJson.answer))
    })
)

export const DomainsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "domains",
  (handlers) =>
    Effect.map(Domains.Domains, (domains) => {
      return handlers
        .handle(
          "assign",
          ({ path, payload }) => domains.assign(path.tenant_id, payload.domain).pipe(ResponseJson.answer)
        )
        .handle("list", ({ path, urlParams }) =>
          Pages.paged(
            urlParams,
            Page.byCreation,
            Effect.flatMap(Principal.CurrentPrincipal, (caller) => domains.list(caller, path.tenant_id)),
            (page) => ResponseJson.answer(Effect.succeed(page)),
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
      return handlers
        .handle("put", ({ payload }) => configs.put(payload).pipe(ResponseJson.answer))
        .handle("get", () => configs.get.pipe(ResponseJson.answer))
    })
)

export const ServiceTunnelsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "serviceTunnels",
  (handlers) =>
    Effect.map(ServiceTunnels.ServiceTunnels, (tunnels) => {
      return handlers
        .handle("create", ({ payload }) => tunnels.create(payload).pipe(ResponseJson.answer))
        .handle("list", ({ urlParams }) =>
          Pages.paged(urlParams, Page.byCreation, tunnels.list, (page) =>
            ResponseJson.answer(Effect.succeed(page))))
        .handle("delete", ({ path }) =>
          tunnels.delete(path.service_tunnel_id))
    })
)

export const OperationsLogHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "operationsLog",
  (handlers) =>
    Effect.map(OperationsLog.OperationsLog, (log) => {
      return handlers.handle("list", ({ urlParams }) =>
        log.page({ limit: urlParams.limit, before: urlParams.before }).pipe(
          Effect.map((page) =>
            OperationLog.OperationLogPage.make(page)
          ),
          Failures.storeUnavailable,
          ResponseJson.answer
        ))
    })
)

export const AuditLogHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "auditLog",
  (handlers) =>
    Effect.map(Audit.AuditTrail, (trail) => {
      return handlers
        .handle("list", ({ urlParams }) => trail.list(urlParams).pipe(ResponseJson.answer))
        .handle("listForTenant", ({ path, urlParams }) =>
          Effect.flatMap(Principal.CurrentPrincipal, (caller) =>
            trail.listForTenant(caller, path.tenant_id, urlParams))
            .pipe(ResponseJson.answer))
    })
)
