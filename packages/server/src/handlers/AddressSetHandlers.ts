import { HttpApiBuilder } from "@effect/platform"
import type { AddressSet } from "@tenet/core"
import { AddressSets, Api, Page } from "@tenet/core"
import { Effect } from "effect"
import * as Pages from "../Pages.js"
import * as ResponseJson from "../ResponseJson.js"
import { asTenant } from "./AsTenant.js"

/** A set (or its edit) as the answer, with its version as the ETag header. */
const withEtag = <A extends AddressSet.AddressSet, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    self,
    (set) => Effect.map(ResponseJson.answer(Effect.succeed(set)), ResponseJson.withHeaders({ etag: set.etag }))
  )

export const AddressSetsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "addressSets",
  (handlers) =>
    Effect.map(AddressSets.AddressSets, (sets) =>
      handlers
        .handle("create", ({ payload }) => asTenant((caller) => sets.create(caller, payload)).pipe(ResponseJson.answer))
        .handle("list", ({ urlParams }) =>
          Pages.paged(
            urlParams,
            Page.byCreation,
            asTenant((caller) => sets.list(caller)),
            (page) => ResponseJson.answer(Effect.succeed(page))
          ))
        .handle("get", ({ path }) => withEtag(asTenant((caller) => sets.get(caller, path.address_set_id))))
        .handle("usage", ({ path }) => asTenant((caller) => sets.usage(caller, path.address_set_id)))
        .handle("update", ({ headers, path, payload, urlParams }) =>
          urlParams.dry_run === true
            ? asTenant((caller) => sets.plan(caller, path.address_set_id, payload, headers["if-match"])).pipe(
              ResponseJson.answer
            )
            : withEtag(asTenant((caller) => sets.update(caller, path.address_set_id, payload, headers["if-match"]))))
        .handle(
          "delete",
          ({ headers, path }) => asTenant((caller) => sets.delete(caller, path.address_set_id, headers["if-match"]))
        ))
)
