import { HttpApiBuilder } from "@effect/platform"
import { AddressSets, Api, Page } from "@tenet/core"
import { Effect } from "effect"
import * as Pages from "../Pages.js"
import * as ResponseJson from "../ResponseJson.js"
import { asTenant } from "./AsTenant.js"

export const AddressSetsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "addressSets",
  (handlers) =>
    Effect.map(AddressSets.AddressSets, (sets) =>
      handlers
        .handle(
          "create",
          ({ payload }) => asTenant((caller) => sets.create(caller, payload)).pipe(ResponseJson.answerWithEtag)
        )
        .handle("list", ({ urlParams }) =>
          Pages.paged(
            urlParams,
            Page.byCreation,
            asTenant((caller) => sets.list(caller)),
            (page) => ResponseJson.answer(Effect.succeed(page))
          ))
        .handle(
          "get",
          ({ path }) => asTenant((caller) => sets.get(caller, path.address_set_id)).pipe(ResponseJson.answerWithEtag)
        )
        .handle("usage", ({ path }) => asTenant((caller) => sets.usage(caller, path.address_set_id)))
        .handle("update", ({ headers, path, payload, urlParams }) =>
          urlParams.dry_run === true
            ? asTenant((caller) => sets.plan(caller, path.address_set_id, payload, headers["if-match"])).pipe(
              ResponseJson.answer
            )
            : asTenant((caller) => sets.update(caller, path.address_set_id, payload, headers["if-match"])).pipe(
              ResponseJson.answerWithEtag
            ))
        .handle(
          "delete",
          ({ headers, path }) => asTenant((caller) => sets.delete(caller, path.address_set_id, headers["if-match"]))
        ))
)
