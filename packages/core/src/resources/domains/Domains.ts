/** Custom tunnel domains: the admin assigns, lists and removes them; a tenant lists its own. */
import { Context, DateTime, Effect, Either, Layer, Option } from "effect"
import { Idempotency } from "../../changes/Idempotency.js"
import { creating, Pipeline, removing } from "../../changes/Pipeline.js"
import type { DomainRecord } from "../../domain/Domain.js"
import { ADMIN_SCOPE } from "../../domain/IdempotencyKey.js"
import { DomainId, randomUuid } from "../../domain/Ids.js"
import type { TenantId } from "../../domain/Ids.js"
import type { DomainName } from "../../domain/Net.js"
import type { Principal } from "../../domain/Principal.js"
import { Conflict, NotFound } from "../../Errors.js"
import type { IdempotencyKeyReused, ServiceUnavailable } from "../../Errors.js"
import { storeUnavailable } from "../../ports/Failures.js"
import { Store } from "../../ports/Store.js"
import { ownTenant } from "../../readmodel/Ownership.js"

export interface DomainsShape {
  readonly assign: (
    tenantId: TenantId,
    domain: DomainName
  ) => Effect.Effect<DomainRecord, NotFound | Conflict | IdempotencyKeyReused | ServiceUnavailable>
  /** The admin's view of any tenant's domains, or a tenant's of its own (another's is `NotFound`). */
  readonly list: (
    caller: Principal,
    tenantId: TenantId
  ) => Effect.Effect<ReadonlyArray<DomainRecord>, NotFound | ServiceUnavailable>
  readonly remove: (tenantId: TenantId, domain: DomainName) => Effect.Effect<void, NotFound | ServiceUnavailable>
}

export class Domains extends Context.Tag("@tenet/core/Domains")<Domains, DomainsShape>() {
  static readonly layer = Layer.effect(
    Domains,
    Effect.gen(function*() {
      const store = yield* Store
      const idempotency = yield* Idempotency
      const pipeline = yield* Pipeline

      const requireTenant = (tenantId: TenantId) =>
        Effect.flatMap(
          store.tenants.find(tenantId),
          (tenant) =>
            Option.isSome(tenant) ? Effect.void : Effect.fail(new NotFound({ detail: `tenant ${tenantId} not found` }))
        )

      const assign = Effect.fn("Domains.assign")(function*(tenantId: TenantId, domain: DomainName) {
        const earlier = yield* idempotency.replay(ADMIN_SCOPE, (id) =>
          store.domains.findByDomain(domain).pipe(
            Effect.map(Option.filter((row) => row.id === id)),
            storeUnavailable
          ))
        if (Option.isSome(earlier)) return earlier.value
        const row: DomainRecord = {
          id: DomainId.make(randomUuid()),
          tenant_id: tenantId,
          domain,
          created_at: yield* DateTime.now
        }
        yield* requireTenant(tenantId).pipe(storeUnavailable)
        yield* pipeline.record(
          tenantId,
          () =>
            Effect.succeed({ ...creating({ part: "domains", record: row }), subject: row.domain, scope: ADMIN_SCOPE }),
          "keyed",
          ["UniqueViolation"]
        ).pipe(
          Effect.catchTag(
            "UniqueViolation",
            () => new Conflict({ detail: `domain ${domain} is already assigned to a tenant` })
          )
        )
        return row
      })

      const list = Effect.fn("Domains.list")(function*(caller: Principal, tenantId: TenantId) {
        if (caller._tag === "Tenant") yield* ownTenant(caller, tenantId)
        yield* requireTenant(tenantId).pipe(storeUnavailable)
        return yield* store.domains.listByTenant(tenantId).pipe(storeUnavailable)
      })

      const remove = Effect.fn("Domains.remove")(function*(tenantId: TenantId, domain: DomainName) {
        yield* requireTenant(tenantId).pipe(storeUnavailable)
        const row = yield* store.domains.findByDomain(domain).pipe(storeUnavailable)
        if (Option.isNone(row) || row.value.tenant_id !== tenantId) {
          return yield* new NotFound({ detail: `domain ${domain} is not assigned to tenant ${tenantId}` })
        }
        yield* pipeline.record(
          tenantId,
          (state) =>
            Either.map(
              removing(state, "domains", row.value.id, `domain ${domain} is not assigned to tenant ${tenantId}`),
              (decision) => ({ ...decision, subject: domain })
            )
        )
      })

      return Domains.of({ assign, list, remove })
    })
  )
}
