/**
 * Idempotent writes. A request that carries an `Idempotency-Key` (the server puts it in
 * `CurrentRequest`) records the key with what it made, in the transaction of its write
 * (`record`). The same request sent again with the key is found by `replay` before anything
 * is written, and answers with what the first one made instead of doing it again; the same
 * key with a different request is refused with 422.
 *
 * What is replayed is the resource the first request made or changed, as it is now: the
 * answer a lost response would have carried, brought up to date. Keys are per scope (the
 * tenant, or the admin) and forgotten after `IdempotencyKey.RETENTION`.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import type { IdempotencyKeyRecord, Scope } from "../domain/IdempotencyKey.js"
import { ADMIN_SCOPE, RETENTION } from "../domain/IdempotencyKey.js"
import type { Principal } from "../domain/Principal.js"
import type { ServiceUnavailable } from "../Errors.js"
import { Conflict, IdempotencyKeyReused } from "../Errors.js"
import { storeUnavailable } from "../ports/Failures.js"
import type * as Store from "../ports/Store.js"
import type { StoreUnavailable } from "../ports/Store.js"
import { Store as StoreTag } from "../ports/Store.js"
import { Vault } from "../ports/Vault.js"
import * as Audit from "./Audit.js"

/** The request being handled, when it carries an `Idempotency-Key`. */
export interface KeyedRequest {
  readonly key: string
  /**
   * Everything that makes the request this request (method, path, body), as one text: worked
   * out only when a keyed write asks for it.
   */
  readonly request: Effect.Effect<string>
}

export class CurrentRequest extends Context.Reference<CurrentRequest>()("@tenet/core/Idempotency/CurrentRequest", {
  defaultValue: (): Option.Option<KeyedRequest> => Option.none()
}) {}

/** A commit found the request's key held by another request's live record. */
export const keyInUse = () =>
  new Conflict({
    detail: "another request with this Idempotency-Key is in progress or has just finished; retry in a moment"
  })

/** Whose keys a caller's are. */
export const scopeOf = (caller: Principal): Scope => caller._tag === "Admin" ? ADMIN_SCOPE : caller.tenant_id

export interface IdempotencyShape {
  /**
   * When the current request repeats one that already made its change: that change's
   * resource, found with `find` by the id `record` was given. None for a new request (or
   * one without a key). Fails with 422 when the key was used for another request, and with
   * 409 when what the first request made has since been deleted.
   */
  readonly replay: <A, E>(
    scope: Scope,
    find: (resourceId: string) => Effect.Effect<Option.Option<A>, E>
  ) => Effect.Effect<Option.Option<A>, E | IdempotencyKeyReused | Conflict | ServiceUnavailable>
  /**
   * Records the current request's key as having made `resourceId`; nothing without a key.
   * Must run in the write's transaction: if another request with the key got there first,
   * it fails with 409 and the transaction rolls back.
   */
  readonly record: (scope: Scope, resourceId: string) => Effect.Effect<void, Conflict | StoreUnavailable>
  /**
   * What a commit records for the current request's key, as having made `resourceId` (null
   * without a key): the store refuses the commit when a live record holds the key.
   */
  readonly claimOf: (scope: Scope, resourceId: string) => Effect.Effect<Store.KeyClaim | null>
  /** Forgets the keys older than the retention period; answers how many. */
  readonly purgeExpired: Effect.Effect<number, ServiceUnavailable>
}

export class Idempotency extends Context.Tag("@tenet/core/Idempotency")<Idempotency, IdempotencyShape>() {
  static readonly layer = Layer.effect(
    Idempotency,
    Effect.gen(function*() {
      const store = yield* StoreTag
      const vault = yield* Vault

      const liveSince = Effect.map(DateTime.now, DateTime.subtractDuration(RETENTION))

      const isLive = (record: IdempotencyKeyRecord, since: DateTime.Utc) =>
        DateTime.greaterThanOrEqualTo(record.created_at, since)

      const replay: IdempotencyShape["replay"] = (scope, find) =>
        Effect.gen(function*() {
          const current = yield* CurrentRequest
          if (Option.isNone(current)) return Option.none()
          const { key, request } = current.value
          const found = yield* store.idempotencyKeys.find(scope, key).pipe(storeUnavailable)
          if (Option.isNone(found) || !isLive(found.value, yield* liveSince)) return Option.none()
          if (found.value.fingerprint !== vault.digest(yield* request)) {
            return yield* new IdempotencyKeyReused({
              detail: "this Idempotency-Key was already used for a different request; send a new key with a new request"
            })
          }
          const made = yield* find(found.value.resource_id)
          yield* Audit.noteResource(found.value.resource_id)
          if (Option.isNone(made)) {
            return yield* new Conflict({
              detail:
                "the request with this Idempotency-Key was carried out, but what it made has since been deleted; send a new key to do it again"
            })
          }
          return made
        })

      const claimOf: IdempotencyShape["claimOf"] = (scope, resourceId) =>
        Effect.gen(function*() {
          const current = yield* CurrentRequest
          if (Option.isNone(current)) return null
          return {
            record: {
              scope,
              key: current.value.key,
              fingerprint: vault.digest(yield* current.value.request),
              resource_id: resourceId,
              created_at: yield* DateTime.now
            },
            liveSince: yield* liveSince
          }
        })

      const record: IdempotencyShape["record"] = (scope, resourceId) =>
        Effect.flatMap(claimOf(scope, resourceId), (claim) =>
          claim === null
            ? Effect.void
            : Effect.flatMap(
              store.idempotencyKeys.claim(claim.record, claim.liveSince),
              (claimed) => claimed ? Effect.void : Effect.fail(keyInUse())
            ))

      return Idempotency.of({
        replay,
        record,
        claimOf,
        purgeExpired: Effect.flatMap(liveSince, store.idempotencyKeys.purge).pipe(storeUnavailable)
      })
    })
  )
}
