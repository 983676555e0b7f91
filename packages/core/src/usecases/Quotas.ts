/**
 * A tenant's quotas (`domain/Quota.ts`): what holds for it and how much of each it uses (the
 * admin, or the tenant itself), and the administrator's setting of them. Creates check them in
 * the write path (`Pipeline`, `Invariants.check`); change streams as they open (`ChangeFeed`).
 */
import { Context, Effect, Layer, Option } from "effect"
import { countsOf } from "../changes/Invariants.js"
import { Pipeline } from "../changes/Pipeline.js"
import type { TenantId } from "../domain/Ids.js"
import type { Principal } from "../domain/Principal.js"
import * as Quota from "../domain/Quota.js"
import { NotFound } from "../Errors.js"
import type { ServiceUnavailable } from "../Errors.js"
import { storeUnavailable } from "../ports/Failures.js"
import { Store } from "../ports/Store.js"
import { ReadModel } from "../readmodel/ReadModel.js"

export interface QuotasShape {
  /**
   * The tenant's quotas with what it uses of each; `openStreams`: its change streams open on
   * this replica. A tenant asks only of its own (another's is not found, as every other's).
   */
  readonly get: (
    caller: Principal,
    tenantId: TenantId,
    openStreams: number
  ) => Effect.Effect<Quota.TenantQuotas, NotFound | ServiceUnavailable>
  /** Sets the tenant's own quotas (admin); null keeps the server's default. */
  readonly set: (
    tenantId: TenantId,
    overrides: Quota.QuotaOverrides,
    openStreams: number
  ) => Effect.Effect<Quota.TenantQuotas, NotFound | ServiceUnavailable>
  /** What holds for the tenant now; none when there is no such tenant. */
  readonly limitsOf: (tenantId: TenantId) => Effect.Effect<Option.Option<Quota.Limits>, ServiceUnavailable>
}

export class Quotas extends Context.Tag("@tenet/core/Quotas")<Quotas, QuotasShape>() {
  static readonly layer = Layer.effect(
    Quotas,
    Effect.gen(function*() {
      const store = yield* Store
      const readModel = yield* ReadModel
      const pipeline = yield* Pipeline
      const defaults = yield* Quota.Defaults

      const notFound = (id: TenantId) => new NotFound({ detail: `tenant ${id} not found` })

      const answer = (tenantId: TenantId, overrides: Quota.QuotaOverrides, openStreams: number) =>
        Effect.map(readModel.stateOf(tenantId).pipe(storeUnavailable), (state) => {
          const limits = Quota.limitsOf(overrides, defaults)
          const used = { ...countsOf(state), watchers: openStreams }
          const usage = (kind: Quota.Kind) => ({
            limit: limits[kind],
            used: used[kind],
            default: overrides[kind] === null
          })
          return Quota.TenantQuotas.make({
            tenant_id: tenantId,
            vpcs: usage("vpcs"),
            subnets: usage("subnets"),
            pods: usage("pods"),
            watchers: usage("watchers")
          })
        })

      const get: QuotasShape["get"] = (caller, tenantId, openStreams) =>
        Effect.gen(function*() {
          if (caller._tag === "Tenant" && caller.tenant_id !== tenantId) return yield* notFound(tenantId)
          const record = yield* store.tenants.find(tenantId).pipe(storeUnavailable)
          if (Option.isNone(record)) return yield* notFound(tenantId)
          return yield* answer(tenantId, record.value.quotas, openStreams)
        })

      const set: QuotasShape["set"] = (tenantId, overrides, openStreams) =>
        Effect.gen(function*() {
          // Not found inside the transaction: the audit trail records the refusal, not a success.
          const record = yield* pipeline.commitGlobal(
            Effect.flatMap(
              store.tenants.setQuotas(tenantId, overrides),
              Option.match({ onNone: () => Effect.fail(notFound(tenantId)), onSome: Effect.succeed })
            ),
            () => tenantId
          )
          return yield* answer(tenantId, record.quotas, openStreams)
        })

      const limitsOf: QuotasShape["limitsOf"] = (tenantId) =>
        store.tenants.find(tenantId).pipe(
          storeUnavailable,
          Effect.map(Option.map((record) => Quota.limitsOf(record.quotas, defaults)))
        )

      return Quotas.of({ get, set, limitsOf })
    })
  )
}
