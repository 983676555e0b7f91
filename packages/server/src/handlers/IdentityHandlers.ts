import { Api, Audit, Identity, Principal } from "@tenet/core"
import { Effect } from "effect"
import * as ResponseEncoder from "../ResponseEncoder.js"
import { originOf } from "./Origin.js"

export const AdminIdentityHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "adminIdentity",
  (handlers) =>
    Effect.map(Identity.Identity, (identity) =>
      handlers
        .handle("login", ({ payload, request }) =>
          identity.adminLogin(payload, originOf(request)).pipe(
            Effect.tap((session) => Audit.noteActor({ _tag: "Admin", username: session.username }))
          ))
        .handle(
          "logout",
          ({ request }) =>
            Effect.flatMap(Principal.CurrentAdmin, (admin) => identity.adminLogout(admin, originOf(request)))
        )
        .handle(
          "rotateToken",
          ({ request }) =>
            Effect.flatMap(Principal.CurrentAdmin, (admin) => identity.adminRotate(admin, originOf(request)))
        ))
)

export const TenantIdentityHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "tenantIdentity",
  (handlers) =>
    Effect.map(Identity.Identity, (identity) =>
      handlers
        .handle("login", ({ payload, request }) =>
          identity.tenantLogin(payload, originOf(request)).pipe(
            Effect.tap((session) => Audit.noteActor({ _tag: "Tenant", tenant_id: session.id, name: session.name }))
          ))
        .handle(
          "logout",
          ({ request }) =>
            Effect.flatMap(Principal.CurrentTenant, (tenant) => identity.tenantLogout(tenant, originOf(request)))
        )
        .handle("rotateToken", ({ path, request }) =>
          Effect.flatMap(
            Principal.CurrentPrincipal,
            (caller) => identity.tenantRotate(caller, path.tenant_id, originOf(request))
          )))
)
