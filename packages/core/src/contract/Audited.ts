/**
 * What an endpoint that changes something leaves in the audit trail (`changes/Audit.ts`),
 * declared on the endpoint itself as an annotation: the kind of resource it changes and where
 * that resource's id comes from. The contract's reflection (`Api.endpoints`) reads it, so an
 * endpoint and its audit subject cannot drift apart; an endpoint without one changes nothing.
 */
import { Context } from "effect"
import type { ResourceKind, Subject } from "../domain/AuditLog.js"

export type { Subject } from "../domain/AuditLog.js"

export class Audited extends Context.Tag("@tenet/core/api/Audited")<Audited, Subject>() {}

/** The resource the path's `param` names. */
export const path = (kind: ResourceKind, param: string): Subject => ({ kind, from: "path", param })

/** The resource the request's change makes or is about. */
export const made = (kind: ResourceKind): Subject => ({ kind, from: "change" })

/** The caller itself. */
export const actor = (kind: ResourceKind): Subject => ({ kind, from: "actor" })

/** A resource without an id. */
export const unnamed = (kind: ResourceKind): Subject => ({ kind, from: "none" })
