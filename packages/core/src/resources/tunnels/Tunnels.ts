/**
 * Tunnels (tenant): a pod's port published at `<subdomain>.<domain>` through the tunnel
 * provider. The domain is the provider configuration's `edge_domain` unless the tenant names
 * one the admin assigned to it. The tunnel is saved first; when the provider cannot publish
 * it yet (not configured, down, the pod has no address yet) it is kept with a non-active
 * status and the reason, and the reconciler retries.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { creating, Pipeline, removing, updatingLatest } from "../../changes/Pipeline.js"
import * as Hostname from "../../domain/Hostname.js"
import { randomUuid, TunnelId } from "../../domain/Ids.js"
import type { PodId, TenantId } from "../../domain/Ids.js"
import type { DnsLabel } from "../../domain/Net.js"
import { DomainName } from "../../domain/Net.js"
import type { PodRecord } from "../../domain/Pod.js"
import type { TenantPrincipal } from "../../domain/Principal.js"
import type { Tunnel, TunnelAutoCreate, TunnelCreate, TunnelRecord } from "../../domain/Tunnel.js"
import { etagOf, toTunnel } from "../../domain/Tunnel.js"
import { Conflict, Forbidden, InvalidInput, NotFound, PreconditionFailed, ServiceUnavailable } from "../../Errors.js"
import type { IdempotencyKeyReused, InternalError } from "../../Errors.js"
import type { EdgeRoute } from "../../ports/EdgeTunnels.js"
import { EdgeTunnels } from "../../ports/EdgeTunnels.js"
import { storeUnavailable } from "../../ports/Failures.js"
import { Constraints, Store } from "../../ports/Store.js"
import { ReadModel } from "../../readmodel/ReadModel.js"
import type { TenantState } from "../../readmodel/TenantState.js"
import { ProviderConfigs } from "../../usecases/ProviderConfigs.js"
import { Resources } from "../Resources.js"

type Failure = NotFound | Conflict | Forbidden | InvalidInput | ServiceUnavailable | InternalError

export interface TunnelsShape {
  readonly createForPod: (
    caller: TenantPrincipal,
    podId: PodId,
    input: TunnelCreate
  ) => Effect.Effect<Tunnel, Failure | IdempotencyKeyReused>
  readonly createDerived: (
    caller: TenantPrincipal,
    podId: PodId,
    input: typeof TunnelAutoCreate.Type
  ) => Effect.Effect<Tunnel, Failure | IdempotencyKeyReused>
  readonly listForPod: (
    caller: TenantPrincipal,
    podId: PodId
  ) => Effect.Effect<ReadonlyArray<Tunnel>, NotFound | ServiceUnavailable>
  readonly list: (caller: TenantPrincipal) => Effect.Effect<ReadonlyArray<Tunnel>, ServiceUnavailable>
  /** `ifMatch`: the tunnel's `etag` the delete was made against; 412 when it moved since. */
  readonly delete: (
    caller: TenantPrincipal,
    id: TunnelId,
    ifMatch?: string
  ) => Effect.Effect<void, NotFound | PreconditionFailed | ServiceUnavailable | InternalError>
  /** Checks tunnels given inline with a pod before the pod exists, so a bad one creates nothing. */
  readonly check: (caller: TenantPrincipal, inputs: ReadonlyArray<TunnelCreate>) => Effect.Effect<void, Failure>
  /** Creates tunnels for a new pod (already checked). */
  readonly createAll: (
    caller: TenantPrincipal,
    pod: PodRecord,
    inputs: ReadonlyArray<TunnelCreate>
  ) => Effect.Effect<ReadonlyArray<Tunnel>, Failure>
  /** Withdraws a pod's tunnels at the provider (best effort: the pod is going away). */
  readonly withdrawAll: (
    tunnels: ReadonlyArray<TunnelRecord>
  ) => Effect.Effect<void, ServiceUnavailable | InternalError>
  /**
   * Publishes the pod's tunnels again at its virtual IP, when the pod got one or a new one after
   * its tunnels were made (a pod whose convergence outlasted its request's wait).
   */
  readonly follow: (pod: PodRecord) => Effect.Effect<void, ServiceUnavailable | InternalError>
  /** Publishes again every tunnel that is not active; returns how many are now active. */
  readonly reconcile: Effect.Effect<number, ServiceUnavailable | InternalError>
  /**
   * Publishes again a tunnel the provider no longer serves as published: `status: "error"` with
   * the drift first (the change stream says what happened), then the publish's own outcome.
   */
  readonly repair: (
    tunnel: TunnelRecord,
    drift: string
  ) => Effect.Effect<TunnelRecord, ServiceUnavailable | InternalError>
}

const SCHEME = { http: "http", https: "https", ssh: "ssh", tcp: "tcp", udp: "udp" } as const

/** The route the provider is to serve for the tunnel: none while its pod has no virtual IP. */
export const routeOf = (tunnel: TunnelRecord, pod: PodRecord | undefined): EdgeRoute | null =>
  pod === undefined || pod.vip === null ? null : {
    key: tunnel.id,
    hostname: tunnel.hostname,
    protocol: tunnel.protocol_type,
    service_url: `${SCHEME[tunnel.protocol_type]}://${pod.vip}:${tunnel.service_port}`,
    vpc: { tenant_id: tunnel.tenant_id, vpc_id: tunnel.vpc_id }
  }

export class Tunnels extends Context.Tag("@tenet/core/Tunnels")<Tunnels, TunnelsShape>() {
  static readonly layer = Layer.effect(
    Tunnels,
    Effect.gen(function*() {
      const store = yield* Store
      const edge = yield* EdgeTunnels
      const configs = yield* ProviderConfigs
      const resources = yield* Resources
      const pipeline = yield* Pipeline
      const readModel = yield* ReadModel

      const stateOf = (tenantId: TenantId) => readModel.stateOf(tenantId).pipe(storeUnavailable)

      const ownedPod = (caller: TenantPrincipal, id: PodId) => resources.get(caller.tenant_id, "pods", id)

      /** The domain a tunnel lives under: the tenant's own, or the platform's default. */
      const domainFor = (caller: TenantPrincipal, requested: DomainName | null) =>
        Effect.gen(function*() {
          if (requested === null) {
            const config = yield* configs.current
            const fallback = Option.flatMap(config, (c) => Option.fromNullable(c.edge_domain))
            if (Option.isNone(fallback)) {
              return yield* InvalidInput.field(
                "domain",
                "required, since the provider configuration has no edge_domain"
              )
            }
            return fallback.value
          }
          const config = yield* configs.current
          if (Option.isSome(config) && config.value.edge_domain === requested) return requested
          const own = (yield* stateOf(caller.tenant_id)).domains
          if (!own.some((d) => d.domain === requested)) {
            return yield* new Forbidden({ detail: `domain ${requested} is not assigned to your tenant` })
          }
          return requested
        })

      /** Asks the provider to publish the tunnel; records whatever happened. */
      const publish = (tunnel: TunnelRecord) =>
        Effect.gen(function*() {
          const route = routeOf(tunnel, (yield* stateOf(tunnel.tenant_id)).pod(tunnel.pod_id))
          const config = yield* configs.current
          const account = Option.isSome(config) ? yield* configs.edgeAccount(config.value) : Option.none()
          let outcome: { status: TunnelRecord["status"]; error: string | null }
          if (Option.isNone(account)) {
            outcome = {
              status: "pending",
              error: "the tunnel provider is not configured (edge_account_id, edge_api_token)"
            }
          } else if (route === null) {
            outcome = { status: "pending", error: "waiting for the pod's virtual IP" }
          } else {
            const published = yield* edge.publish(account.value, route).pipe(Effect.either)
            outcome = published._tag === "Right"
              ? { status: "active", error: null }
              : { status: "error", error: published.left.message }
          }
          const saved = yield* pipeline.record(
            tunnel.tenant_id,
            (state) => {
              const latest = state.tunnel(tunnel.id)
              // Published meanwhile by the pod's convergence, which found the address this did not.
              const overtaken = route === null && latest?.status === "active" && state.pod(tunnel.pod_id)?.vip !== null
              return Effect.succeed(
                updatingLatest("tunnels", tunnel.id, overtaken ? undefined : latest, (l) => ({ ...l, ...outcome }))
              )
            }
          )
          // A tunnel deleted meanwhile had nothing to record; one overtaken reads as it was published.
          return saved.result ?? (yield* stateOf(tunnel.tenant_id)).tunnel(tunnel.id) ?? { ...tunnel, ...outcome }
        })

      /** A hostname a tenant may not take: one of the platform's own names (`Hostname.isReserved`). */
      const refuseReserved = (hostname: DomainName) =>
        Effect.flatMap(
          configs.current,
          (config) =>
            Hostname.isReserved(hostname, Option.match(config, { onNone: () => null, onSome: (c) => c.edge_domain }))
              ? Effect.fail(new Conflict({ detail: `hostname ${hostname} is reserved for the platform` }))
              : Effect.void
        )

      /**
       * Saves a new tunnel; `keyed`: with the request's idempotency key (a tunnel asked for on its
       * own). Its hostname is taken in the commit (the store's one index of routed hostnames), so
       * a clash with any tunnel, a tenant's or the platform's, is refused exactly: 409, "in use",
       * without saying whose.
       */
      const insert = (record: TunnelRecord, keyed: boolean) => {
        const decide = (state: TenantState) =>
          state.pod(record.pod_id) === undefined
            ? Effect.fail(new NotFound({ detail: `pod ${record.pod_id} not found` }))
            : Effect.succeed(creating({ part: "tunnels", record }))
        return Effect.zipRight(
          refuseReserved(record.hostname),
          (keyed
            ? pipeline.record(record.tenant_id, decide, "keyed", ["UniqueViolation"])
            : pipeline.record(record.tenant_id, decide, undefined, ["UniqueViolation"])).pipe(
              Effect.catchTag("UniqueViolation", (e) =>
                new Conflict({
                  detail: e.constraint === Constraints.tunnelName
                    ? `you already have a tunnel named '${record.tunnel_name}'`
                    : `hostname ${record.hostname} is in use`
                }))
            )
        )
      }

      const build = (
        caller: TenantPrincipal,
        pod: PodRecord,
        input: {
          tunnel_name: DnsLabel
          subdomain: DnsLabel
          protocol_type: TunnelRecord["protocol_type"]
          service_port: number
        },
        domain: DomainName
      ) =>
        Effect.map(DateTime.now, (now): TunnelRecord => ({
          id: TunnelId.make(randomUuid()),
          tenant_id: caller.tenant_id,
          pod_id: pod.id,
          vpc_id: pod.vpc_id,
          tunnel_name: input.tunnel_name,
          subdomain: input.subdomain,
          domain,
          hostname: DomainName.make(`${input.subdomain}.${domain}`),
          protocol_type: input.protocol_type,
          service_port: input.service_port,
          status: "pending",
          error: "not yet published",
          created_at: now
        }))

      const createOne = (caller: TenantPrincipal, pod: PodRecord, input: TunnelCreate, keyed: boolean) =>
        Effect.gen(function*() {
          const domain = yield* domainFor(caller, input.domain)
          const record = yield* build(caller, pod, input, domain)
          yield* insert(record, keyed)
          return toTunnel(yield* publish(record))
        })

      /** The tunnel an earlier request with this request's `Idempotency-Key` made, published again. */
      const replayed = (caller: TenantPrincipal) =>
        Effect.flatMap(
          resources.replay(caller.tenant_id, "tunnels"),
          Option.match({
            onNone: () => Effect.succeedNone,
            onSome: (tunnel) => Effect.map(publish(tunnel), (published) => Option.some(toTunnel(published)))
          })
        )

      const activePod = (caller: TenantPrincipal, podId: PodId) =>
        Effect.flatMap(ownedPod(caller, podId), (pod) =>
          pod.lifecycle === "deleting"
            ? Effect.fail(new Conflict({ detail: `pod ${podId} is being deleted` }))
            : Effect.succeed(pod))

      const createDerived = Effect.fn("Tunnels.createDerived")(
        function*(caller: TenantPrincipal, podId: PodId, input: typeof TunnelAutoCreate.Type) {
          const earlier = yield* replayed(caller)
          if (Option.isSome(earlier)) return earlier.value
          const pod = yield* activePod(caller, podId)
          const taken = new Set<string>((yield* stateOf(caller.tenant_id)).tunnels.map((t) => t.tunnel_name))
          // The pod's name, or the pod's name with the first free suffix (labels stay within 63).
          let name = pod.name as string
          for (let n = 2; taken.has(name); n++) name = `${pod.name.slice(0, 63 - `-${n}`.length)}-${n}`
          const subdomain = input?.subdomain ?? `${name}-${caller.name}`.slice(0, 63).replace(/-+$/, "")
          const domain = yield* domainFor(caller, input?.domain ?? null)
          const record = yield* build(caller, pod, {
            tunnel_name: name as DnsLabel,
            subdomain: subdomain as DnsLabel,
            protocol_type: input?.protocol_type ?? "http",
            service_port: input?.service_port ?? pod.service_port
          }, domain)
          yield* insert(record, true)
          return toTunnel(yield* publish(record))
        }
      )

      const check = (caller: TenantPrincipal, inputs: ReadonlyArray<TunnelCreate>) =>
        Effect.gen(function*() {
          const names = new Set<string>()
          for (const input of inputs) {
            if (names.has(input.tunnel_name)) {
              return yield* InvalidInput.field("tunnels", `'${input.tunnel_name}' is named twice`)
            }
            names.add(input.tunnel_name)
            const hostname = DomainName.make(`${input.subdomain}.${yield* domainFor(caller, input.domain)}`)
            yield* refuseReserved(hostname)
            // Known taken now: refused before the pod is made (the commit still decides exactly).
            if (Option.isSome(yield* store.hostnames.holder(hostname).pipe(storeUnavailable))) {
              return yield* new Conflict({ detail: `hostname ${hostname} is in use` })
            }
          }
          const existing = (yield* stateOf(caller.tenant_id)).tunnels
          const clash = existing.find((t) => names.has(t.tunnel_name))
          if (clash !== undefined) {
            return yield* new Conflict({ detail: `you already have a tunnel named '${clash.tunnel_name}'` })
          }
        })

      const withdraw = (tunnel: TunnelRecord) =>
        Effect.gen(function*() {
          const config = yield* configs.current
          const account = Option.isSome(config) ? yield* configs.edgeAccount(config.value) : Option.none()
          if (Option.isSome(account)) {
            yield* edge.unpublish(account.value, {
              key: tunnel.id,
              hostname: tunnel.hostname,
              protocol: tunnel.protocol_type,
              vpc_id: tunnel.vpc_id
            })
          }
        })

      const remove = Effect.fn("Tunnels.delete")(function*(caller: TenantPrincipal, id: TunnelId, ifMatch?: string) {
        const tunnel = yield* resources.get(caller.tenant_id, "tunnels", id)
        // Checked before the provider is asked (a stale version withdraws nothing), and again in the decision.
        const unmoved = (current: TunnelRecord) => PreconditionFailed.unmoved(`tunnel ${id}`, etagOf(current), ifMatch)
        yield* unmoved(tunnel)
        // Withdraw first: while the provider is down the tunnel stays, so the delete can be retried.
        yield* withdraw(tunnel).pipe(
          Effect.catchTag(
            "EdgeError",
            (e) => new ServiceUnavailable({ detail: `the tunnel provider could not withdraw the tunnel: ${e.message}` })
          )
        )
        yield* pipeline.record(
          caller.tenant_id,
          (state) => removing(state, "tunnels", id, `tunnel ${id} not found`, tunnel.vpc_id, unmoved)
        )
      })

      const reconcile = Effect.gen(function*() {
        const pending = yield* store.tunnels.listInactive.pipe(storeUnavailable)
        const results = yield* Effect.forEach(pending, publish)
        return results.filter((t) => t.status === "active").length
      }).pipe(Effect.withSpan("Tunnels.reconcile"))

      const repair = Effect.fn("Tunnels.repair")(function*(tunnel: TunnelRecord, drift: string) {
        const drifted = { status: "error", error: `${drift}; republishing` } as const
        const saved = yield* pipeline.record(
          tunnel.tenant_id,
          (state) =>
            Effect.succeed(
              updatingLatest("tunnels", tunnel.id, state.tunnel(tunnel.id), (latest) => ({ ...latest, ...drifted }))
            )
        )
        // Deleted meanwhile (its delete withdrew it): nothing to publish.
        return saved.result === undefined ? { ...tunnel, ...drifted } : yield* publish(saved.result)
      })

      return Tunnels.of({
        createForPod: (caller, podId, input) =>
          Effect.flatMap(replayed(caller), (earlier) =>
            Option.isSome(earlier)
              ? Effect.succeed(earlier.value)
              : Effect.flatMap(activePod(caller, podId), (pod) => createOne(caller, pod, input, true))),
        createDerived,
        listForPod: (caller, podId) =>
          Effect.flatMap(
            ownedPod(caller, podId),
            (pod) => Effect.map(stateOf(caller.tenant_id), (state) => state.tunnelsOf(pod.id).map(toTunnel))
          ),
        list: (caller) => Effect.map(stateOf(caller.tenant_id), (state) => state.tunnels.map(toTunnel)),
        delete: remove,
        check,
        // The pod's own create records its key; its tunnels are part of that request.
        createAll: (caller, pod, inputs) => Effect.forEach(inputs, (input) => createOne(caller, pod, input, false)),
        withdrawAll: (tunnels) =>
          Effect.forEach(tunnels, (t) =>
            withdraw(t).pipe(
              Effect.catchTag(
                "EdgeError",
                (e) => Effect.logWarning("withdrawing a deleted pod's tunnel failed", t.hostname, e.message)
              )
            ), { discard: true }),
        follow: (pod) =>
          Effect.flatMap(
            stateOf(pod.tenant_id),
            (state) => Effect.forEach(state.tunnelsOf(pod.id), publish, { discard: true })
          ).pipe(
            Effect.withSpan("Tunnels.follow", { attributes: { "tenet.pod_id": pod.id } })
          ),
        reconcile,
        repair
      })
    })
  )
}
