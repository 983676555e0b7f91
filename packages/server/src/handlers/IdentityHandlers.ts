import type { HttpServerRequest } from "@effect/platform"
import { HttpApiBuilder } from "@effect/platform"
import { Api, Audit, Identity, Principal } from "@tenet/core"
import { Effect } from "effect"
import * as ResponseJson from "../ResponseJson.js"
import { originOf } from "./Origin.js"

/** The tokens the request carries in `headers`: the one that authenticated it is among them. */
const tokensOf = (request: HttpServerRequest.HttpServerRequest, headers: ReadonlyArray<string>) =>
  headers.map((name) => (request.headers[name] ?? "").trim()).filter((value) => value !== "")

export const AdminIdentityHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "adminIdentity",
  (handlers) =>
    Effect.map(Identity.Identity, (identity) => {
      return handlers
        .handle("login", ({ payload, request }) =>
          identity.adminLogin(payload, originOf(request)).pipe(
            Effect.tap((session) => Audit.noteActor({ _tag: "Admin", username: session.username })),
            ResponseJson.answer
          ))
        .handle(
          "logout",
          ({ request }) =>
            Effect.flatMap(
              Principal.CurrentAdmin,
              (admin) => identity.adminLogout(admin, tokensOf(request, ["x-admin-token"]), originOf(request))
            )
        )
        .handle("rotateToken", ({ request }) =>
          Effect.flatMap(Principal.CurrentAdmin, (admin) =>
            identity.adminRotate(admin, originOf(request))).pipe(
              ResponseJson.answer
            ))
    })
)

export const TenantIdentityHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "tenantIdentity",
  (handlers) =>
    Effect.map(Identity.Identity, (identity) => {
      return handlers
        .handle("login", ({ payload, request }) =>
          identity.tenantLogin(payload, originOf(request)).pipe(
            Effect.tap((session) => Audit.noteActor({ _tag: "Tenant", tenant_id: session.id, name: session.name })),
            ResponseJson.answer
          ))
        .handle(
          "logout",
          ({ request }) =>
            Effect.flatMap(
              Principal.CurrentTenant,
              (tenant) =>
                identity.tenantLogout(tenant, tokensOf(request, ["x-api-token", "x-auth-token"]), originOf(request))
            )
        )
        .handle("rotateToken", ({ path, request }) =>
          Effect.flatMap(
            Principal.CurrentPrincipal,
            (caller) => identity.tenantRotate(caller, path.tenant_id, originOf(request))
          ).pipe(ResponseJson.answer))
    })
)
