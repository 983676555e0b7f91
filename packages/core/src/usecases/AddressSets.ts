/**
 * Address sets (`domain/AddressSet.ts`): a tenant's named lists of networks, each the tenant's
 * own to create, read, change and delete. The decisions are `AddressSetStrategy`'s; every
 * write goes through the pipeline, with its audit entry, event and idempotency key.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { Idempotency } from "../changes/Idempotency.js"
import { Pipeline } from "../changes/Pipeline.js"
import type { AddressSet, AddressSetCreate, AddressSetPatch, AddressSetRecord } from "../domain/AddressSet.js"
import { viewOf } from "../domain/AddressSet.js"
import { AddressSetId, randomUuid } from "../domain/Ids.js"
import type { TenantPrincipal } from "../domain/Principal.js"
import type { IdempotencyKeyReused, NotFound, PreconditionFailed, ServiceUnavailable } from "../Errors.js"
import { Conflict } from "../Errors.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import * as AddressSetStrategy from "./AddressSetStrategy.js"
import { storeUnavailable } from "./Failures.js"
import { found } from "./Ownership.js"

type Failure = NotFound | ServiceUnavailable

export interface AddressSetsShape {
  /** 409 when the tenant has a set of that name, or `AddressSetStrategy.MAX_ADDRESS_SETS`. */
  readonly create: (
    caller: TenantPrincipal,
    input: AddressSetCreate
  ) => Effect.Effect<AddressSet, ServiceUnavailable | Conflict | IdempotencyKeyReused>
  /** The caller's sets, oldest first. */
  readonly list: (caller: TenantPrincipal) => Effect.Effect<ReadonlyArray<AddressSet>, ServiceUnavailable>
  /** One of the caller's sets; another tenant's is not found. */
  readonly get: (caller: TenantPrincipal, id: AddressSetId) => Effect.Effect<AddressSet, Failure>
  /** `ifMatch`: the set's `etag` the change was made against; 412 when it moved since. */
  readonly update: (
    caller: TenantPrincipal,
    id: AddressSetId,
    patch: AddressSetPatch,
    ifMatch?: string
  ) => Effect.Effect<AddressSet, Failure | PreconditionFailed>
  readonly delete: (
    caller: TenantPrincipal,
    id: AddressSetId,
    ifMatch?: string
  ) => Effect.Effect<void, Failure | PreconditionFailed>
}

/**
 * What the pipeline's checks cannot refuse in a set's write while no rule names a set (no VPC's
 * verdicts, blocks or rule count move with it), nor the store (no name changes): defects.
 */
const unrefused = { UniqueViolation: Effect.die, Conflict: Effect.die, GuardrailViolated: Effect.die } as const

export class AddressSets extends Context.Tag("@tenet/core/AddressSets")<AddressSets, AddressSetsShape>() {
  static readonly layer = Layer.effect(
    AddressSets,
    Effect.gen(function*() {
      const readModel = yield* ReadModel
      const pipeline = yield* Pipeline
      const idempotency = yield* Idempotency
      const stateOf = (caller: TenantPrincipal) => readModel.stateOf(caller.tenant_id).pipe(storeUnavailable)

      return AddressSets.of({
        create: Effect.fn("AddressSets.create")(function*(caller: TenantPrincipal, input: AddressSetCreate) {
          const earlier = yield* idempotency.replay(
            caller.tenant_id,
            (id) => Effect.map(stateOf(caller), (state) => Option.fromNullable(state.addressSet(id)))
          )
          if (Option.isSome(earlier)) return viewOf(earlier.value)
          const now = yield* DateTime.now
          const record: AddressSetRecord = {
            id: AddressSetId.make(randomUuid()),
            tenant_id: caller.tenant_id,
            name: input.name,
            description: input.description,
            entries: input.entries.map((e) => ({ cidr: e.cidr, description: e.description })),
            created_at: now,
            updated_at: now
          }
          const { result } = yield* pipeline.create(caller.tenant_id, AddressSetStrategy.create(record)).pipe(
            // A new set is in no rule yet: no verdict, so no guardrail, can move with it.
            Effect.catchTag("GuardrailViolated", Effect.die),
            Effect.catchTag(
              "UniqueViolation",
              () => new Conflict({ detail: `an address set named '${input.name}' exists` })
            )
          )
          return viewOf(result)
        }),
        list: Effect.fn("AddressSets.list")(function*(caller: TenantPrincipal) {
          return (yield* stateOf(caller)).addressSets.map(viewOf)
        }),
        get: Effect.fn("AddressSets.get")(function*(caller: TenantPrincipal, id: AddressSetId) {
          return viewOf(yield* found((yield* stateOf(caller)).addressSet(id), `address set ${id}`))
        }),
        update: Effect.fn("AddressSets.update")(
          function*(caller: TenantPrincipal, id: AddressSetId, patch: AddressSetPatch, ifMatch?: string) {
            const now = yield* DateTime.now
            const { result } = yield* pipeline.commit(
              caller.tenant_id,
              AddressSetStrategy.update(id, patch, ifMatch, now)
            ).pipe(Effect.catchTags(unrefused))
            return viewOf(result)
          }
        ),
        delete: Effect.fn("AddressSets.delete")(function*(caller: TenantPrincipal, id: AddressSetId, ifMatch?: string) {
          yield* pipeline.commit(caller.tenant_id, AddressSetStrategy.remove(id, ifMatch)).pipe(
            Effect.catchTags(unrefused)
          )
        })
      })
    })
  )
}
