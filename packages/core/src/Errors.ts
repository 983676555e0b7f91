/**
 * Every failure a caller can see, as tagged errors, and the one place where each is given
 * its HTTP status and wire form.
 *
 * On the wire every error is `{"detail": ...}` (the spec's contract), and bad input also
 * lists each field's problem in `errors` (`[{field, message}]`, every field at once): the
 * `_tag` stays in process. Each error has a `Wire` schema that encodes the class to that body
 * with its status, and decodes the body back to the class, so the server, the OpenAPI
 * document and the client share one definition.
 */
import { HttpApiSchema } from "@effect/platform"
import { Either, Schema } from "effect"
import * as Etag from "./domain/Etag.js"
import { Problem, summary } from "./domain/InputProblems.js"
import { GuardrailViolation } from "./domain/SecurityRule.js"

const Detail = Schema.Struct({ detail: Schema.String })

const wire = <Self extends { readonly detail: string }, Encoded>(
  self: Schema.Schema<Self, Encoded, never> & (new(props: { readonly detail: string }) => Self),
  status: number,
  identifier: string,
  description: string
) =>
  Schema.transform(Detail, Schema.typeSchema(self), {
    strict: true,
    decode: ({ detail }) => new self({ detail }),
    encode: ({ detail }) => ({ detail })
  }).annotations({ ...HttpApiSchema.annotations({ status }), identifier, description })

/** Every field's problem: bad input always names the field (or `body`, a header) each problem is in. */
const FieldProblems = Schema.Array(Problem).annotations({
  description: "Each field's problem, every field at once"
})

/** 400: the request is malformed or names invalid values. */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  detail: Schema.String,
  errors: FieldProblems
}) {
  override get message() {
    return this.detail
  }
  /** Problems (at least one), all of them in `detail`'s one line. */
  static of(problems: ReadonlyArray<Problem>): InvalidInput {
    return new InvalidInput({ detail: summary(problems), errors: problems })
  }
  /** One field's problem: `detail` says it as `field: message`. */
  static field(field: string, message: string): InvalidInput {
    return InvalidInput.of([{ field, message }])
  }
  static readonly Wire = Schema.transform(
    Schema.Struct({ detail: Schema.String, errors: FieldProblems }),
    Schema.typeSchema(InvalidInput),
    {
      strict: true,
      decode: (body) => new InvalidInput(body),
      encode: ({ detail, errors }) => ({ detail, errors })
    }
  ).annotations({
    ...HttpApiSchema.annotations({ status: 400 }),
    identifier: "InvalidInput",
    description: "Invalid parameters"
  })
}

/** 401: the token is missing, malformed, revoked or wrong. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", { detail: Schema.String }) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(Unauthorized, 401, "Unauthorized", "Missing or invalid token")
}

/** 403: the caller is authenticated but may not do this. */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", { detail: Schema.String }) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(Forbidden, 403, "Forbidden", "Not allowed for this caller")
}

/** 404: no such resource, or one the caller may not see (indistinguishable on purpose). */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { detail: Schema.String }) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(NotFound, 404, "NotFound", "Resource not found")
}

/** 409: the request conflicts with the current state (duplicates, limits, lifecycle). */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { detail: Schema.String }) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(Conflict, 409, "Conflict", "Conflict with the current state")
}

/** 412: the request's `If-Match` names a version of the resource that is no longer current. */
export class PreconditionFailed extends Schema.TaggedError<PreconditionFailed>()("PreconditionFailed", {
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(
    PreconditionFailed,
    412,
    "PreconditionFailed",
    "The resource changed since the version If-Match names"
  )

  /**
   * Refused unless `ifMatch` (an `If-Match` header, when sent) names `etag`, the object's
   * version now (none: the object is gone, which the decision answers itself).
   */
  static unmoved(
    what: string,
    etag: string | undefined,
    ifMatch: string | undefined
  ): Either.Either<void, PreconditionFailed> {
    if (ifMatch === undefined || etag === undefined || Etag.matches(ifMatch, etag)) return Either.void
    const why = Etag.unmatched(ifMatch, etag)
    return Either.left(
      new PreconditionFailed({
        detail: why === undefined
          ? `${what} changed since ${Etag.named(ifMatch)}: it is now at ${etag}`
          : `${what}: ${why}`
      })
    )
  }
}

/**
 * 409: the change would leave a guardrail broken; `violations` names each, with a flow of its
 * region that would get the forbidden verdict and the rule that would decide it. Nothing changed.
 */
export class GuardrailViolated extends Schema.TaggedError<GuardrailViolated>()("GuardrailViolated", {
  detail: Schema.String,
  violations: Schema.Array(GuardrailViolation)
}) {
  override get message() {
    return this.detail
  }
  static readonly Wire = Schema.transform(
    Schema.Struct({ detail: Schema.String, violations: Schema.Array(GuardrailViolation) }),
    Schema.typeSchema(GuardrailViolated),
    {
      strict: true,
      decode: (body) => new GuardrailViolated(body),
      encode: ({ detail, violations }) => ({ detail, violations })
    }
  ).annotations({
    ...HttpApiSchema.annotations({ status: 409 }),
    identifier: "GuardrailViolated",
    description: "The change would break a guardrail"
  })
}

/**
 * 411: a body sent without `Content-Length` (chunked). The length is checked against the body
 * limit before anything is read, so the server can refuse an oversized body with a proper 413.
 */
export class LengthRequired extends Schema.TaggedError<LengthRequired>()("LengthRequired", {
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(LengthRequired, 411, "LengthRequired", "Request body sent without Content-Length")
}

/** 413: the request body is larger than the server accepts. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(PayloadTooLarge, 413, "PayloadTooLarge", "Request body too large")
}

/** 415: the request has a body that is not JSON. */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", {
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(UnsupportedMediaType, 415, "UnsupportedMediaType", "Request body is not JSON")
}

/**
 * 429: too many failed logins for this name or address; try again later. `retry_after` (seconds)
 * is sent as the `Retry-After` header, not in the body.
 */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  detail: Schema.String,
  retry_after: Schema.optional(Schema.Int)
}) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(TooManyRequests, 429, "TooManyRequests", "Too many attempts")
}

/**
 * 410: a watch asked to resume from a revision the store no longer keeps: list again, then watch
 * from the revision of the list's first bookmark (as Kubernetes clients relist).
 */
export class Gone extends Schema.TaggedError<Gone>()("Gone", {
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(Gone, 410, "Gone", "The revision is too old to resume from")
}

/** 500: a bug. Never expected; the body never carries internals. */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", { detail: Schema.String }) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(InternalError, 500, "InternalError", "Unexpected server error")
}

/** 503: a dependency (the store) is unavailable; the request changed nothing and may be retried. */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(ServiceUnavailable, 503, "ServiceUnavailable", "A dependency is unavailable")
}

/**
 * 422 in the security-rule endpoints: `detail` is `{field, message}` naming the offending
 * field (the spec's section 4, rule 5); `errors` lists every field's problem (the first is
 * `detail`'s).
 */
export class RuleValidation extends Schema.TaggedError<RuleValidation>()("RuleValidation", {
  field: Schema.String,
  message: Schema.String,
  errors: FieldProblems
}) {
  /** One field's problem. */
  static field(field: string, message: string): RuleValidation {
    return new RuleValidation({ field, message, errors: [{ field, message }] })
  }
  static readonly Wire = Schema.transform(
    Schema.Struct({ detail: Problem, errors: FieldProblems }),
    Schema.typeSchema(RuleValidation),
    {
      strict: true,
      decode: ({ detail, errors }) => new RuleValidation({ ...detail, errors }),
      encode: ({ errors, field, message }) => ({ detail: { field, message }, errors })
    }
  ).annotations({
    ...HttpApiSchema.annotations({ status: 422 }),
    identifier: "RuleValidation",
    description: "Security-rule validation failure naming the offending field"
  })
}

/**
 * 422: an `Idempotency-Key` sent again with a different request (another body, path or
 * method). The key names one request; a new request needs a new key.
 */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
  static readonly Wire = wire(
    IdempotencyKeyReused,
    422,
    "IdempotencyKeyReused",
    "The Idempotency-Key was already used for a different request"
  )
}

/** Every error a caller can receive. */
export type TenetError =
  | InvalidInput
  | Unauthorized
  | Forbidden
  | NotFound
  | Conflict
  | GuardrailViolated
  | PreconditionFailed
  | LengthRequired
  | PayloadTooLarge
  | UnsupportedMediaType
  | TooManyRequests
  | Gone
  | InternalError
  | ServiceUnavailable
  | RuleValidation
  | IdempotencyKeyReused

/**
 * Bad input as an endpoint refuses it, from its problems (at least one): `RuleValidation`
 * (422, `detail` the first problem) where the endpoint declares it, `InvalidInput` (400,
 * `detail` all of them in one line) elsewhere; `errors` lists them all either way. The server
 * and the client refuse with this, so a caller meets the same error and words from both.
 */
export const refusal = (
  error: "RuleValidation" | "InvalidInput",
  problems: ReadonlyArray<Problem>
): RuleValidation | InvalidInput =>
  error === "RuleValidation"
    ? new RuleValidation({ ...problems[0]!, errors: problems })
    : InvalidInput.of(problems)
