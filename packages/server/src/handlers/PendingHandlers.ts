/**
 * Endpoints of the contract whose use-cases have not landed yet (workloads: issue #4). They authenticate like the rest and answer 501, so the OpenAPI
 * document is complete and clients see an honest status instead of a 404.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Api, Errors } from "@tenet/core"
import { Effect } from "effect"

const pending = (what: string) => () =>
  Effect.fail(new Errors.NotImplemented({ detail: `${what} are not served by this server version yet` }))

export const TopologyPending = HttpApiBuilder.group(
  Api.TenetApi,
  "topology",
  (handlers) => handlers.handle("deploy", pending("topologies")).handle("get", pending("topologies"))
)
