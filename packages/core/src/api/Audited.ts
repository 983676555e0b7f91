/**
 * What an endpoint that changes something leaves in the audit trail (`changes/Audit.ts`),
 * declared on the endpoint itself as an annotation: the kind of resource it changes and where
 * that resource's id comes from. The contract's reflection (`Api.endpoints`) reads it, so an
 * endpoint and its audit subject cannot drift apart; an endpoint without one changes nothing.
 */
import { Context } from "effect"
import type { ResourceKind } from "../domain/AuditLog.js"

/** Where an action's resource id comes from. */
export type Subject =
  /** A parameter of the request's path. */
  | { readonly kind: ResourceKind; readonly from: "path"; readonly param: string }
  /** The change the request commits: what it makes or the resource it is about (the pipeline names it). */
  | { readonly kind: ResourceKind; readonly from: "change" }
  /** The caller itself (logins, logouts, the admin's rotation). */
  | { readonly kind: ResourceKind; readonly from: "actor" }
  /** Nothing with an id (the provider configuration). */
  | { readonly kind: ResourceKind; readonly from: "none" }

export class Audited extends Context.Tag("@tenet/core/api/Audited")<Audited, Subject>() {}

/** The resource the path's `param` names. */
export const path = (kind: ResourceKind, param: string): Subject => ({ kind, from: "path", param })

/** The resource the request's change makes or is about. */
export const made = (kind: ResourceKind): Subject => ({ kind, from: "change" })

/** The caller itself. */
export const actor = (kind: ResourceKind): Subject => ({ kind, from: "actor" })

/** A resource without an id. */
export const unnamed = (kind: ResourceKind): Subject => ({ kind, from: "none" })
