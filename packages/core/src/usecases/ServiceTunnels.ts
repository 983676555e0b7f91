/**
 * Platform service tunnels (admin): publish the API, or a GUI the operator runs, at
 * `<subdomain>.<domain>` through the tunnel provider.
 *
 * The record is saved before the provider is asked, so a provider failure is reported on the
 * tunnel (`status: "error"`, `error`) rather than losing the request.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { Idempotency } from "../changes/Idempotency.js"
import { Pipeline } from "../changes/Pipeline.js"
import { ADMIN_SCOPE } from "../domain/IdempotencyKey.js"
import { randomUuid, ServiceTunnelId } from "../domain/Ids.js"
import { DomainName } from "../domain/Net.js"
import type { ProviderConfigRecord } from "../domain/ProviderConfig.js"
import { ServiceUrl, toServiceTunnel } from "../domain/ServiceTunnel.js"
import type { ServiceTunnel, ServiceTunnelCreate, ServiceTunnelRecord } from "../domain/ServiceTunnel.js"
import { Conflict, InvalidInput, NotFound, ServiceUnavailable } from "../Errors.js"
import type { IdempotencyKeyReused, InternalError } from "../Errors.js"
import type { EdgeAccount, EdgeRoute } from "../ports/EdgeTunnels.js"
import { EdgeTunnels } from "../ports/EdgeTunnels.js"
import { storeUnavailable } from "../ports/Failures.js"
import { Constraints, Store } from "../ports/Store.js"
import { ProviderConfigs } from "./ProviderConfigs.js"
import { ServerInfo } from "./ServerInfo.js"

type Failure = Conflict | InvalidInput | ServiceUnavailable | InternalError

type CreateFailure = Failure | IdempotencyKeyReused

export interface ServiceTunnelsShape {
  readonly create: (input: ServiceTunnelCreate) => Effect.Effect<ServiceTunnel, CreateFailure>
  readonly list: Effect.Effect<ReadonlyArray<ServiceTunnel>, ServiceUnavailable>
  readonly delete: (id: ServiceTunnelId) => Effect.Effect<void, NotFound | Failure>
  /**
   * Publishes the service tunnel again (one the provider does not serve as published, or whose
   * last publish failed) and records the outcome; `drift` says why first, when there is one.
   */
  readonly republish: (
    record: ServiceTunnelRecord,
    drift: string | null
  ) => Effect.Effect<ServiceTunnelRecord, Failure>
}

/** The route the provider is to serve for a service tunnel. */
export const routeOf = (record: ServiceTunnelRecord): EdgeRoute => ({
  key: record.id,
  hostname: record.hostname,
  protocol: "https",
  service_url: record.target_url,
  vpc: null
})

export class ServiceTunnels extends Context.Tag("@tenet/core/ServiceTunnels")<ServiceTunnels, ServiceTunnelsShape>() {
  static readonly layer = Layer.effect(
    ServiceTunnels,
    Effect.gen(function*() {
      const store = yield* Store
      const edge = yield* EdgeTunnels
      const configs = yield* ProviderConfigs
      const info = yield* ServerInfo
      const idempotency = yield* Idempotency
      const pipeline = yield* Pipeline

      /** The provider account, or a 409 telling the admin what to configure first. */
      const requireAccount = Effect.gen(function*() {
        const config = yield* configs.current
        if (Option.isNone(config)) {
          return yield* new Conflict({ detail: "set the provider configuration (POST /provider-config) first" })
        }
        const account = yield* configs.edgeAccount(config.value)
        if (Option.isNone(account)) {
          return yield* new Conflict({
            detail: "the provider configuration has no edge_account_id and edge_api_token"
          })
        }
        return { config: config.value, account: account.value }
      })

      const create = Effect.fn("ServiceTunnels.create")(function*(input: ServiceTunnelCreate) {
        const { account, config } = yield* requireAccount
        const earlier = yield* idempotency.replay(
          ADMIN_SCOPE,
          (id) => store.serviceTunnels.find(ServiceTunnelId.make(id)).pipe(storeUnavailable)
        )
        const pending = Option.isSome(earlier) ? earlier.value : yield* insert(input, config)
        return toServiceTunnel(yield* publish(account, pending))
      })

      /** Asks the provider to publish; records whatever happened. */
      const publish = (account: EdgeAccount, pending: ServiceTunnelRecord) =>
        Effect.gen(function*() {
          const outcome = yield* edge.publish(account, routeOf(pending)).pipe(Effect.either)
          const record: ServiceTunnelRecord = outcome._tag === "Right"
            ? { ...pending, status: "active", error: null }
            : { ...pending, status: "error", error: outcome.left.message }
          yield* pipeline.commitGlobal(store.serviceTunnels.update(record), () => record.id)
          return record
        })

      const republish = Effect.fn("ServiceTunnels.republish")(
        function*(record: ServiceTunnelRecord, drift: string | null) {
          const { account } = yield* requireAccount
          const next: ServiceTunnelRecord = drift === null
            ? record
            : { ...record, status: "error", error: `${drift}; republishing` }
          // Deleted meanwhile (its delete withdrew it): nothing to publish.
          const there = drift === null
            ? Option.isSome(yield* store.serviceTunnels.find(record.id).pipe(storeUnavailable))
            : yield* pipeline.commitGlobal(store.serviceTunnels.update(next), () => record.id)
          return there ? yield* publish(account, next) : next
        }
      )

      /** Who holds a hostname, in words for the admin (who may know every tenant). */
      const holderOf = (hostname: string) =>
        Effect.gen(function*() {
          const holder = yield* store.hostnames.holder(hostname).pipe(storeUnavailable)
          if (Option.isNone(holder)) return "another tunnel"
          const held = holder.value
          if (held.kind === "service") return `the service tunnel for '${held.service}'`
          const tenant = yield* store.tenants.find(held.tenant_id).pipe(storeUnavailable)
          const name = Option.match(tenant, { onNone: () => held.tenant_id, onSome: (t) => `'${t.name}'` })
          return `the tunnel '${held.tunnel_name}' (${held.tunnel_id}) of tenant ${name}`
        })

      /**
       * Saves a new service tunnel, not yet published, with the request's idempotency key. Its
       * hostname is taken in the same write (the store's one index of routed hostnames): a
       * hostname a tenant's tunnel holds is refused (409, naming the holder to the admin), never
       * left for the provider to refuse after a 201.
       */
      const insert = Effect.fn("ServiceTunnels.insert")(
        function*(input: ServiceTunnelCreate, config: ProviderConfigRecord) {
          const domain = input.domain ?? config.edge_domain
          if (domain === null) {
            return yield* InvalidInput.field("domain", "required when the provider configuration has no edge_domain")
          }
          const hostname = DomainName.make(`${input.subdomain}.${domain}`)
          const pending: ServiceTunnelRecord = {
            id: ServiceTunnelId.make(randomUuid()),
            service: input.service,
            hostname,
            target_url: input.target_url ?? ServiceUrl.make(info.publicUrl),
            status: "error",
            error: "not yet published",
            created_at: yield* DateTime.now
          }
          yield* pipeline.commitGlobal(
            Effect.zipRight(store.serviceTunnels.insert(pending), idempotency.record(ADMIN_SCOPE, pending.id)),
            () => pending.id
          ).pipe(
            Effect.catchTag("UniqueViolation", (e) =>
              e.constraint === Constraints.serviceTunnelService
                ? new Conflict({ detail: `a service tunnel for '${input.service}' already exists` })
                : Effect.flatMap(holderOf(hostname), (holder) =>
                  new Conflict({ detail: `hostname ${hostname} is in use by ${holder}` })))
          )
          return pending
        }
      )

      const remove = Effect.fn("ServiceTunnels.delete")(function*(id: ServiceTunnelId) {
        const record = yield* store.serviceTunnels.find(id).pipe(storeUnavailable)
        if (Option.isNone(record)) return yield* new NotFound({ detail: `service tunnel ${id} not found` })
        const { account } = yield* requireAccount
        // Withdraw at the provider first: if it is down, the record stays so the delete can be retried.
        yield* edge.unpublish(account, { key: id, hostname: record.value.hostname, protocol: "https", vpc_id: null })
          .pipe(
            Effect.mapError((e) => new ServiceUnavailable({ detail: `the tunnel provider refused: ${e.message}` }))
          )
        yield* pipeline.commitGlobal(store.serviceTunnels.delete(id), () => id)
      })

      return ServiceTunnels.of({
        create,
        list: store.serviceTunnels.list.pipe(Effect.map((records) => records.map(toServiceTunnel)), storeUnavailable),
        delete: remove,
        republish
      })
    })
  )
}
