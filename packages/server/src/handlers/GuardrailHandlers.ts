import { HttpApiBuilder } from "@effect/platform"
import { Api, Guardrails, Page } from "@tenet/core"
import { Effect } from "effect"
import * as Pages from "../Pages.js"
import * as ResponseJson from "../ResponseJson.js"
import { asTenant } from "./AsTenant.js"

export const GuardrailsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "guardrails",
  (handlers) =>
    Effect.map(Guardrails.Guardrails, (guardrails) => {
      return handlers
        .handle("create", ({ path, payload }) =>
          asTenant((caller) =>
            guardrails.create(caller, path.vpc_id, payload)
          ).pipe(ResponseJson.answerWithEtag))
        .handle("list", ({ path, urlParams }) =>
          Pages.paged(
            urlParams,
            Page.byCreation,
            asTenant((caller) => guardrails.list(caller, path.vpc_id)),
            (page) => ResponseJson.answer(Effect.succeed(page)),
            { vpc_id: path.vpc_id }
          ))
        .handle(
          "delete",
          ({ headers, path }) => asTenant((caller) => guardrails.delete(caller, path.guardrail_id, headers["if-match"]))
        )
    })
)

export const TenantGuardrailsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "tenantGuardrails",
  (handlers) =>
    Effect.map(Guardrails.Guardrails, (guardrails) => {
      return handlers
        .handle(
          "create",
          ({ path, payload }) => guardrails.createForTenant(path.tenant_id, payload).pipe(ResponseJson.answerWithEtag)
        )
        .handle("list", ({ path, urlParams }) =>
          Pages.paged(urlParams, Page.byCreation, guardrails.listForTenant(path.tenant_id), (page) =>
            ResponseJson.answer(Effect.succeed(page)), { tenant_id: path.tenant_id }))
        .handle(
          "delete",
          ({ headers, path }) =>
            guardrails.deleteForTenant(path.tenant_id, path.guardrail_id, headers["if-match"])
        )
    })
)
