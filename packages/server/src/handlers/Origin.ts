import type { HttpServerRequest } from "@effect/platform"
import type { Principal } from "@tenet/core"
import { Option } from "effect"

/** The request facts use-cases record: where it came from. */
export const originOf = (request: HttpServerRequest.HttpServerRequest): Principal.RequestOrigin => ({
  source_address: Option.getOrNull(request.remoteAddress)
})
