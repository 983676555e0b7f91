/**
 * Tenants (admin): create, list, view, delete. Deleting a tenant is the one place its
 * cascade happens: its tunnels are withdrawn at the provider, the store removes what it owns
 * in one step, then the cluster is told to forget the tenant.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import * as Events from "../changes/Events.js"
import { Idempotency } from "../changes/Idempotency.js"
import { Pipeline } from "../changes/Pipeline.js"
import { ADMIN_SCOPE } from "../domain/IdempotencyKey.js"
import { randomUuid, TenantId } from "../domain/Ids.js"
import * as Page from "../domain/Page.js"
import * as Quota from "../domain/Quota.js"
import { etagOf, TenantDetail, toTenant } from "../domain/Tenant.js"
import type { Tenant, TenantCreate, TenantRecord } from "../domain/Tenant.js"
import { toTunnel } from "../domain/Tunnel.js"
import { toVpc } from "../domain/Vpc.js"
import { Conflict, NotFound, PreconditionFailed } from "../Errors.js"
import type { IdempotencyKeyReused, InternalError, ServiceUnavailable } from "../Errors.js"
import { storeUnavailable } from "../ports/Failures.js"
import { Orchestrator } from "../ports/Orchestrator.js"
import { Store } from "../ports/Store.js"
import type { StoreUnavailable } from "../ports/Store.js"
import { Vault } from "../ports/Vault.js"
import { ReadModel } from "../readmodel/ReadModel.js"
import { Pods } from "../resources/pods/Pods.js"
import { Tunnels } from "../resources/tunnels/Tunnels.js"

export interface TenantsShape {
  readonly create: (input: TenantCreate) => Effect.Effect<Tenant, Conflict | IdempotencyKeyReused | ServiceUnavailable>
  readonly list: Effect.Effect<ReadonlyArray<Tenant>, ServiceUnavailable>
  /** The `limit` tenants after `after` in `Page.byCreation` order, read by the store as one range. */
  readonly page: (after: Page.Key | undefined, limit: number) => Effect.Effect<Page.Slice<Tenant>, ServiceUnavailable>
  readonly get: (id: TenantId) => Effect.Effect<TenantDetail, NotFound | ServiceUnavailable>
  /** `ifMatch`: the tenant's `etag` the delete was asked against (412 when the tenant moved since). */
  readonly delete: (
    id: TenantId,
    ifMatch?: string
  ) => Effect.Effect<void, NotFound | PreconditionFailed | ServiceUnavailable | InternalError>
}

export class Tenants extends Context.Tag("@tenet/core/Tenants")<Tenants, TenantsShape>() {
  static readonly layer = Layer.effect(
    Tenants,
    Effect.gen(function*() {
      const store = yield* Store
      const vault = yield* Vault
      const orchestrator = yield* Orchestrator
      const pods = yield* Pods
      const tunnels = yield* Tunnels
      const idempotency = yield* Idempotency
      const pipeline = yield* Pipeline
      const readModel = yield* ReadModel

      const notFound = (id: string) => new NotFound({ detail: `tenant ${id} not found` })

      const create = Effect.fn("Tenants.create")(function*(input: TenantCreate) {
        const earlier = yield* idempotency.replay(
          ADMIN_SCOPE,
          (id) => store.tenants.find(TenantId.make(id)).pipe(storeUnavailable)
        )
        if (Option.isSome(earlier)) return toTenant(earlier.value)
        const passwordHash = yield* vault.hashPassword(input.password)
        const token = yield* vault.newToken
        const record = {
          id: TenantId.make(randomUuid()),
          name: input.name,
          description: input.description,
          created_at: yield* DateTime.now,
          password_hash: passwordHash,
          token_hash: vault.hashToken(token),
          token_ciphertext: yield* vault.encrypt(token),
          quotas: Quota.NONE
        }
        yield* pipeline.commitGlobal(
          Effect.zipRight(store.tenants.insert(record), idempotency.record(ADMIN_SCOPE, record.id)).pipe(
            Effect.zipRight(store.events.append([Events.ofTenant("ADDED", record)]))
          ),
          () => record.id
        ).pipe(
          Effect.catchTag(
            "UniqueViolation",
            () => new Conflict({ detail: `a tenant named '${input.name}' already exists` })
          )
        )
        return toTenant(record)
      })

      const get = Effect.fn("Tenants.get")(function*(id: TenantId) {
        const record = yield* store.tenants.find(id).pipe(storeUnavailable)
        if (Option.isNone(record)) return yield* notFound(id)
        const { pods: podRecords, tunnels: tunnelRecords, vpcs } = yield* readModel.stateOf(id).pipe(storeUnavailable)
        return TenantDetail.make({
          ...toTenant(record.value),
          vpcs: vpcs.map(toVpc),
          pods: yield* Effect.forEach(podRecords, pods.view, { concurrency: 16 }),
          tunnels: tunnelRecords.map(toTunnel)
        })
      })

      const remove = Effect.fn("Tenants.delete")(function*(id: TenantId, ifMatch?: string) {
        const exists = yield* store.tenants.find(id).pipe(storeUnavailable)
        if (Option.isNone(exists)) return yield* notFound(id)
        const unmoved = (record: TenantRecord) => PreconditionFailed.unmoved(`tenant ${id}`, etagOf(record), ifMatch)
        // Asked against another version: refused before anything is withdrawn.
        yield* unmoved(exists.value)
        // Public hostnames first: they are what outlives a tenant if forgotten.
        yield* tunnels.withdrawAll((yield* readModel.stateOf(id).pipe(storeUnavailable)).tunnels)
        // The version is checked on the row the delete took: a rotation meanwhile rolls it back.
        // The event is appended once that row is held, as in every commit: after whatever the
        // tenant's commits before it appended, which the change stream numbers first.
        yield* pipeline.commitGlobal(
          Effect.flatMap(
            store.tenants.delete(id),
            (deleted): Effect.Effect<void, NotFound | PreconditionFailed | StoreUnavailable> =>
              Option.isNone(deleted)
                ? notFound(id)
                : Effect.zipRight(
                  unmoved(deleted.value),
                  store.events.append([Events.ofTenant("DELETED", exists.value)])
                )
          ),
          () => id
        )
        // The store is the source of truth and the tenant is gone from it; leftovers in the
        // cluster are logged, not surfaced, since the caller cannot act on them.
        yield* orchestrator.deleteTenant(id).pipe(
          Effect.catchAll((error) => Effect.logWarning("cluster cleanup of a deleted tenant failed", error.message))
        )
      })

      return Tenants.of({
        create,
        list: store.tenants.list.pipe(Effect.map((records) => records.map(toTenant)), storeUnavailable),
        page: (after, limit) =>
          store.tenants.page(after, limit).pipe(
            Effect.map((rows) => Page.fromLookahead(rows, limit, Page.byCreation, toTenant)),
            storeUnavailable
          ),
        get,
        delete: remove
      })
    })
  )
}
