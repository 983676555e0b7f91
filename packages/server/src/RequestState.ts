/**
 * What the server learns about a request while it is handled: its id and arrival, from the
 * outermost middleware (`RequestContext`); the endpoint the platform's router matched and its
 * audit entry, from the contract's first middleware of every endpoint (`Endpoints`). Read once
 * the answer is known, for the request's log line, metrics and audit entry. Information flows
 * one way: set on the way in, read on the way out.
 */
import type { Audit } from "@tenet/core"
import { FiberRef } from "effect"
import { globalValue } from "effect/GlobalValue"
import type { Endpoint } from "./Endpoints.js"

export class RequestState {
  /** The contract's endpoint, once the platform's router has matched one. */
  endpoint: Endpoint | undefined = undefined
  /** The audit entry, when the endpoint changes something. */
  audit: Audit.Pending | undefined = undefined

  constructor(
    /** The caller's `X-Request-Id` when sane, a fresh UUID otherwise. */
    readonly id: string,
    /** `performance.now()` at arrival. */
    readonly started: number
  ) {}

  /** The error a failure carries, as the audit entry's outcome. */
  failed(error: unknown): void {
    if (this.audit !== undefined && typeof error === "object" && error !== null && "_tag" in error) {
      if (typeof error._tag === "string") this.audit.failure = error._tag
    }
  }
}

/** The request being handled by this fiber; none outside requests. */
export const Current = globalValue(
  Symbol.for("@tenet/server/RequestState/Current"),
  () => FiberRef.unsafeMake<RequestState | undefined>(undefined)
)
