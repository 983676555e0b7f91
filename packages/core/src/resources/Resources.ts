/**
 * What every kind's service does alike, said once over the registry (kube-apiserver's generic
 * `registry.Store` for get and list): a tenant's rows of a kind from the read model, one of them
 * or 404 in the kind's words (`Kind.noun`), and the row a repeated create made (its idempotency
 * key's). A tenant's state holds only its own rows, so another tenant's row is not found.
 */
import { Context, Effect, Layer, Option } from "effect"
import { Idempotency } from "../changes/Idempotency.js"
import type { Scope } from "../domain/IdempotencyKey.js"
import type { TenantId } from "../domain/Ids.js"
import type { Conflict, IdempotencyKeyReused, NotFound, ServiceUnavailable } from "../Errors.js"
import * as Kind from "../kinds/Kind.js"
import { storeUnavailable } from "../ports/Failures.js"
import { found } from "../readmodel/Ownership.js"
import { ReadModel } from "../readmodel/ReadModel.js"

export interface ResourcesShape {
  /** The tenant's rows of `part`, in the store's order. */
  readonly list: <P extends Kind.Part>(
    tenant: TenantId,
    part: P
  ) => Effect.Effect<ReadonlyArray<Kind.RecordOf<P>>, ServiceUnavailable>
  /** The tenant's row of `part` keyed `key`, or 404 saying what is not found. */
  readonly get: <P extends Kind.Part>(
    tenant: TenantId,
    part: P,
    key: string
  ) => Effect.Effect<Kind.RecordOf<P>, NotFound | ServiceUnavailable>
  /**
   * When the request repeats a create that already committed: the row it made (`Idempotency.replay`;
   * `scope`: whose key, the tenant's unless given). None for a new request.
   */
  readonly replay: <P extends Kind.Part>(
    tenant: TenantId,
    part: P,
    scope?: Scope
  ) => Effect.Effect<Option.Option<Kind.RecordOf<P>>, IdempotencyKeyReused | Conflict | ServiceUnavailable>
}

export class Resources extends Context.Tag("@tenet/core/Resources")<Resources, ResourcesShape>() {
  static readonly layer = Layer.effect(
    Resources,
    Effect.gen(function*() {
      const readModel = yield* ReadModel
      const idempotency = yield* Idempotency
      const stateOf = (tenant: TenantId) => readModel.stateOf(tenant).pipe(storeUnavailable)
      return Resources.of({
        list: (tenant, part) => Effect.map(stateOf(tenant), (state) => state.list(part)),
        get: (tenant, part, key) =>
          Effect.flatMap(stateOf(tenant), (state) => found(state.row(part, key), Kind.of(part).noun(key))),
        replay: (tenant, part, scope) =>
          idempotency.replay(
            scope ?? tenant,
            (key) => Effect.map(stateOf(tenant), (state) => Option.fromNullable(state.row(part, key)))
          )
      })
    })
  )
}
