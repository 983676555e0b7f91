/** How port failures surface to callers: one mapping, used by every use-case. */
import { Duration, Effect } from "effect"
import * as DeleteMark from "../domain/DeleteMark.js"
import { InternalError, ServiceUnavailable } from "../Errors.js"
import { OrchestratorError } from "./Orchestrator.js"
import type { StoreUnavailable } from "./Store.js"
import type { VaultError } from "./Vault.js"

/** The store being down is the caller's 503: nothing was written and a retry may succeed. */
export const storeUnavailable = <A, E, R>(
  self: Effect.Effect<A, E | StoreUnavailable, R>
): Effect.Effect<A, Exclude<E, StoreUnavailable> | ServiceUnavailable, R> =>
  Effect.catchIf(
    self,
    (e): e is StoreUnavailable => (e as { _tag?: unknown })?._tag === "StoreUnavailable",
    (e) => new ServiceUnavailable({ detail: `the store is unavailable: ${e.detail}` })
  ) as Effect.Effect<A, Exclude<E, StoreUnavailable> | ServiceUnavailable, R>

/** A secret that no longer decrypts means the server's encryption key changed: an operator problem. */
export const vaultFailure = <A, E, R>(
  self: Effect.Effect<A, E | VaultError, R>
): Effect.Effect<A, Exclude<E, VaultError> | InternalError, R> =>
  Effect.catchIf(
    self,
    (e): e is VaultError => (e as { _tag?: unknown })?._tag === "VaultError",
    (e) =>
      Effect.logError("stored secret could not be decrypted", e.detail).pipe(
        Effect.zipRight(
          Effect.fail(
            new InternalError({
              detail: "a stored secret could not be decrypted; the server's encryption key may have changed"
            })
          )
        )
      )
  ) as Effect.Effect<A, Exclude<E, VaultError> | InternalError, R>

/**
 * A marked delete's cluster call, as the marking request waits on it: one the cluster does not
 * answer within `DeleteMark.CLUSTER_WAIT` is refused, inside the mark's lease.
 */
export const clusterWaited = <A, R>(
  operation: string,
  self: Effect.Effect<A, OrchestratorError, R>
): Effect.Effect<A, OrchestratorError, R> =>
  Effect.timeoutFail(self, {
    duration: DeleteMark.CLUSTER_WAIT,
    onTimeout: () =>
      new OrchestratorError({
        operation,
        detail: `no answer within ${Duration.format(DeleteMark.CLUSTER_WAIT)}`
      })
  })
