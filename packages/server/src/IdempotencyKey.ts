/**
 * The `Idempotency-Key` request header: checked, and handed to the use-cases (as
 * `Idempotency.CurrentRequest`) together with what makes the request this request (its method,
 * path, query and body), so that a repeat can be told from a different request under the key.
 */
import type { HttpServerRequest } from "@effect/platform"
import { Errors, Idempotency, IdempotencyKey } from "@tenet/core"
import { Effect, Option } from "effect"

export const HEADER = "idempotency-key"

/** JSON with every object's keys in order: bodies that differ only in key order or spacing are one request. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.keys(value).sort().map((k) =>
      `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`
    )
    return `{${entries.join(",")}}`
  }
  return JSON.stringify(value)
}

/** The body as one text, whatever its key order and spacing (as sent, when it is not JSON). */
const canonicalBody = (text: string): string => {
  if (text.trim() === "") return ""
  try {
    return canonical(JSON.parse(text))
  } catch {
    return text
  }
}

/**
 * Runs `app` with the request's key, when it is a POST or DELETE that carries one (other
 * methods are idempotent by nature, and the header is ignored there). A malformed key is
 * refused with 400 before anything runs. The request's fingerprint is worked out only when a
 * write asks for it, from the body the platform has read (its text is read once and kept).
 */
export const within = <A, E, R>(
  request: HttpServerRequest.HttpServerRequest,
  app: Effect.Effect<A, E, R>
): Effect.Effect<A, E | Errors.InvalidInput, R> => {
  const key = request.headers[HEADER]
  if (key === undefined || (request.method !== "POST" && request.method !== "DELETE")) return app
  if (!IdempotencyKey.KEY.test(key)) {
    return Effect.fail(
      Errors.InvalidInput.field("Idempotency-Key", "must be 1 to 255 visible ASCII characters, such as a UUID")
    )
  }
  const fingerprint = Effect.map(
    Effect.orElseSucceed(request.text, () => ""),
    (text) => `${request.method} ${request.url}\n${canonicalBody(text)}`
  )
  return Effect.provideService(app, Idempotency.CurrentRequest, Option.some({ key, request: fingerprint }))
}
