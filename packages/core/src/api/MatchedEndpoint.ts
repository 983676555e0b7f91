/**
 * The first middleware of every endpoint, run once the platform's router has matched the
 * request: where the server learns which endpoint it is (for its metrics, logs and audit entry,
 * and for the error the endpoint refuses bad input with) without matching it again, and where a
 * body sent to an endpoint that takes none is refused as input the endpoint cannot decode.
 */
import { HttpApiError, HttpApiMiddleware } from "@effect/platform"

export class MatchedEndpoint extends HttpApiMiddleware.Tag<MatchedEndpoint>()("MatchedEndpoint", {
  failure: HttpApiError.HttpApiDecodeError
}) {}
