/**
 * EdgeTunnels on the provider's remotely-managed tunnels. Each VPC has one provider tunnel
 * (`tenet-<vpc id>`; platform services share `tenet-platform`) whose connector runs in the
 * VPC's namespace; each route is one ingress rule of it (hostname -> service, catch-all last)
 * and one proxied CNAME to `<tunnel id>.cfargotunnel.com`, commented `tenet:<route key>` so
 * Tenet knows the records it owns. The API replaces a tunnel's configuration whole, so the
 * read-modify-write of one tunnel's configuration is serialized.
 *
 * The provider cannot carry UDP on a public hostname: a `udp` route gets an external IP of
 * its own, a DNAT rule from it to the pod's VIP, and an A record.
 */
import type { Ids, Tunnel } from "@tenet/core"
import { EdgeTunnels } from "@tenet/core"
import { Effect, Layer, Option } from "effect"
import * as CloudflareApi from "./CloudflareApi.js"
import { awaitExternalIp, KubeApi } from "./KubeApi.js"
import type { KubeError, Wait } from "./KubeApi.js"
import * as Manifests from "./Manifests.js"
import { Kinds } from "./Manifests.js"
import * as Names from "./Names.js"

export interface Options {
  readonly api?: CloudflareApi.Options
  readonly settings?: Partial<Manifests.Settings>
  /** Where the platform's own connector runs. */
  readonly platformNamespace?: string
  readonly externalIpWait?: Wait
}

const CATCH_ALL: CloudflareApi.IngressRule = { service: "http_status:404" }
const OWNER_TAG = "tenet:"
const ownerComment = (key: string) => `${OWNER_TAG}${key}`
const TUNNEL_TARGET = /^(.+)\.cfargotunnel\.com$/

/** The protocol an ingress rule's service speaks (what a withdraw needs to know: not udp). */
const protocolOf = (service: string | undefined): Tunnel.TunnelProtocol => {
  const scheme = service?.split("://")[0]
  return scheme === "http" || scheme === "ssh" || scheme === "tcp" ? scheme : "https"
}

const kubeFailure = (e: KubeError) =>
  new EdgeTunnels.EdgeError({ reason: "unavailable", detail: `the cluster refused: ${e.message}` })

export const make = Effect.fn("CloudflareEdge.make")(function*(options: Options = {}) {
  const api = yield* CloudflareApi.make(options.api)
  const kube = yield* KubeApi
  const settings: Manifests.Settings = { ...Manifests.defaultSettings, ...options.settings }
  const platformNamespace = options.platformNamespace ?? "tenet-system"
  const eipWait = options.externalIpWait ?? { attempts: 25, spacingMillis: 200 }

  // One writer per provider tunnel: its configuration is replaced as a whole.
  const locks = new Map<string, Effect.Semaphore>()
  const serialized = <A, E>(tunnelName: string, effect: Effect.Effect<A, E>) =>
    Effect.suspend(() => {
      let lock = locks.get(tunnelName)
      if (lock === undefined) {
        lock = Effect.unsafeMakeSemaphore(1)
        locks.set(tunnelName, lock)
      }
      return lock.withPermits(1)(effect)
    })

  const provider = <A>(effect: Effect.Effect<A, CloudflareApi.ProviderFailure>) =>
    Effect.mapError(effect, (e) => e.toEdgeError())

  /** The account's zone the hostname lives in: its longest suffix the account has. */
  const zoneOf = (account: EdgeTunnels.EdgeAccount, hostname: string) =>
    Effect.gen(function*() {
      const labels = hostname.split(".")
      for (let i = 0; i < labels.length - 1; i++) {
        const zone = yield* api.findZone(account, labels.slice(i).join("."))
        if (zone !== undefined) return zone
      }
      return yield* new CloudflareApi.ProviderFailure({
        status: 404,
        codes: [],
        detail: `no zone of the account holds ${hostname}`
      })
    })

  /**
   * Points the hostname at `content`, unless another route or someone else owns its record:
   * then the hostname is taken (conflict).
   */
  const claimRecord = (
    account: EdgeTunnels.EdgeAccount,
    key: string,
    record: Omit<CloudflareApi.NewDnsRecord, "comment">,
    again = true
  ): Effect.Effect<void, CloudflareApi.ProviderFailure> =>
    Effect.gen(function*() {
      const zone = yield* zoneOf(account, record.name)
      const existing = yield* api.dnsRecords(account, zone.id, record.name)
      const foreign = existing.find((r) => r.comment !== ownerComment(key))
      if (foreign !== undefined) {
        return yield* new CloudflareApi.ProviderFailure({
          status: 409,
          codes: [CloudflareApi.ErrorCodes.dnsRecordExists],
          detail: `${record.name} already has a ${foreign.type} record that Tenet did not create for this route`
        })
      }
      const current = existing.find((r) => r.type === record.type && r.content === record.content)
      for (const stale of existing.filter((r) => r !== current)) yield* api.deleteDnsRecord(account, zone.id, stale.id)
      if (current === undefined) {
        yield* api.createDnsRecord(account, zone.id, { ...record, comment: ownerComment(key) }).pipe(
          // Another writer (a replica publishing the same route) made the identical record
          // between the list and the create: claimed again on what is there now, once.
          Effect.catchIf(
            (e) => again && e.has(CloudflareApi.ErrorCodes.dnsRecordIdentical),
            () => claimRecord(account, key, record, false)
          )
        )
      }
    })

  const releaseRecord = (account: EdgeTunnels.EdgeAccount, key: string, hostname: string) =>
    Effect.gen(function*() {
      const zone = yield* zoneOf(account, hostname)
      const records = yield* api.dnsRecords(account, zone.id, hostname)
      for (const r of records.filter((r) => r.comment === ownerComment(key))) {
        yield* api.deleteDnsRecord(account, zone.id, r.id)
      }
    }).pipe(
      // A hostname whose zone left the account has no record of ours to remove.
      Effect.catchIf((e) => e.status === 404, () => Effect.void)
    )

  const findOrCreateTunnel = (account: EdgeTunnels.EdgeAccount, name: string) =>
    Effect.gen(function*() {
      const found = yield* api.findTunnel(account, name)
      if (found !== undefined) return found
      return yield* api.createTunnel(account, name).pipe(
        // Created meanwhile (by another server, or a call that timed out after succeeding).
        Effect.catchIf(
          (e) => e.has(CloudflareApi.ErrorCodes.tunnelNameExists),
          (e) =>
            Effect.flatMap(api.findTunnel(account, name), (t) => t === undefined ? Effect.fail(e) : Effect.succeed(t))
        )
      )
    })

  const scopeOf = (vpcId: Ids.VpcId | null) => ({
    tunnelName: Names.edgeTunnel(vpcId),
    namespace: vpcId === null ? platformNamespace : Names.namespace(vpcId)
  })

  const runConnector = (
    account: EdgeTunnels.EdgeAccount,
    tunnelId: string,
    scope: ReturnType<typeof scopeOf>,
    labels: Record<string, string>
  ) =>
    Effect.gen(function*() {
      const token = yield* provider(api.tunnelToken(account, tunnelId))
      if (scope.namespace === platformNamespace) {
        yield* kube.apply({
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: platformNamespace, labels: { [Names.MANAGED_BY]: Names.MANAGER } }
        }).pipe(Effect.mapError(kubeFailure))
      }
      yield* Effect.forEach(
        Manifests.connector(scope.namespace, labels, token, settings),
        (m) => Effect.mapError(kube.apply(m), kubeFailure),
        { discard: true }
      )
    })

  const publishThroughTunnel = (account: EdgeTunnels.EdgeAccount, route: EdgeTunnels.EdgeRoute) => {
    const scope = scopeOf(route.vpc?.vpc_id ?? null)
    const labels = route.vpc === null
      ? { [Names.MANAGED_BY]: Names.MANAGER, [Names.COMPONENT]: "platform" }
      : Names.labels({ tenant_id: route.vpc.tenant_id, vpc_id: route.vpc.vpc_id })
    return serialized(
      scope.tunnelName,
      Effect.gen(function*() {
        const tunnel = yield* provider(findOrCreateTunnel(account, scope.tunnelName))
        yield* provider(claimRecord(account, route.key, {
          type: "CNAME",
          name: route.hostname,
          content: `${tunnel.id}.cfargotunnel.com`,
          proxied: true
        }))
        const ingress = yield* provider(api.ingress(account, tunnel.id))
        const next = [
          ...ingress.filter((r) => r.hostname !== undefined && r.hostname !== route.hostname),
          { hostname: route.hostname, service: route.service_url },
          CATCH_ALL
        ]
        if (JSON.stringify(next) !== JSON.stringify(ingress)) yield* provider(api.putIngress(account, tunnel.id, next))
        yield* runConnector(account, tunnel.id, scope, labels)
      })
    )
  }

  const withdrawFromTunnel = (account: EdgeTunnels.EdgeAccount, route: EdgeTunnels.PublishedRoute) => {
    const scope = scopeOf(route.vpc_id)
    return serialized(
      scope.tunnelName,
      Effect.gen(function*() {
        yield* provider(releaseRecord(account, route.key, route.hostname))
        const tunnel = yield* provider(api.findTunnel(account, scope.tunnelName))
        if (tunnel === undefined) return
        const ingress = yield* provider(api.ingress(account, tunnel.id))
        const remaining = ingress.filter((r) => r.hostname !== undefined && r.hostname !== route.hostname)
        if (remaining.length > 0) {
          if (remaining.length + 1 !== ingress.length) {
            yield* provider(api.putIngress(account, tunnel.id, [...remaining, CATCH_ALL]))
          }
          return
        }
        // The tunnel's last route: stop its connector and remove the tunnel.
        yield* Effect.forEach(
          [Kinds.Deployment, Kinds.Secret],
          (kind) => Effect.mapError(kube.delete(kind, Manifests.CONNECTOR, scope.namespace), kubeFailure),
          { discard: true }
        )
        yield* provider(api.cleanupConnections(account, tunnel.id))
        yield* provider(api.deleteTunnel(account, tunnel.id))
      })
    )
  }

  const publishUdp = (account: EdgeTunnels.EdgeAccount, route: EdgeTunnels.EdgeRoute) =>
    Effect.gen(function*() {
      const target = /^udp:\/\/([0-9.]+):([0-9]+)$/.exec(route.service_url)
      if (route.vpc === null || target === null) {
        return yield* new EdgeTunnels.EdgeError({
          reason: "rejected",
          detail: "udp routes need a pod in a VPC (udp://<vip>:<port>)"
        })
      }
      yield* Effect.forEach(
        Manifests.udpRoute(
          { key: route.key, tenant_id: route.vpc.tenant_id, vpc_id: route.vpc.vpc_id },
          { vip: target[1]!, port: Number(target[2]) },
          settings
        ),
        (m) => Effect.mapError(kube.apply(m), kubeFailure),
        { discard: true }
      )
      const assigned = yield* awaitExternalIp(kube, Names.udpRoute(route.key), eipWait).pipe(
        Effect.mapError(kubeFailure)
      )
      if (Option.isNone(assigned)) {
        return yield* new EdgeTunnels.EdgeError({
          reason: "unavailable",
          detail: `Kube-OVN has not assigned ${Names.udpRoute(route.key)} an address yet`
        })
      }
      const address = assigned.value
      yield* provider(
        claimRecord(account, route.key, { type: "A", name: route.hostname, content: address, proxied: false })
      )
    })

  const withdrawUdp = (account: EdgeTunnels.EdgeAccount, route: EdgeTunnels.PublishedRoute) =>
    Effect.gen(function*() {
      yield* provider(releaseRecord(account, route.key, route.hostname))
      for (const kind of [Kinds.OvnDnatRule, Kinds.OvnEip]) {
        yield* Effect.mapError(kube.delete(kind, Names.udpRoute(route.key)), kubeFailure)
      }
    })

  /**
   * What the account holds of Tenet's: each DNS record commented with a route's key, with the
   * ingress its tunnel has for the hostname (none when the tunnel or its rule is gone).
   */
  const held = (account: EdgeTunnels.EdgeAccount) =>
    Effect.gen(function*() {
      const tunnels = new Map<string, { vpc_id: Ids.VpcId | null; ingress: ReadonlyArray<CloudflareApi.IngressRule> }>()
      for (const tunnel of yield* api.tunnels(account)) {
        const vpc_id = Names.vpcOfEdgeTunnel(tunnel.name)
        if (vpc_id === undefined) continue
        tunnels.set(tunnel.id, { vpc_id, ingress: yield* api.ingress(account, tunnel.id) })
      }
      const routes: Array<EdgeTunnels.HeldRoute> = []
      for (const zone of yield* api.zones(account)) {
        for (const record of yield* api.dnsRecordsCommented(account, zone.id, OWNER_TAG)) {
          const key = (record.comment ?? "").slice(OWNER_TAG.length)
          if (record.type === "A") {
            routes.push({ key, hostname: record.name, protocol: "udp", vpc_id: null, service_url: null })
            continue
          }
          const tunnel = tunnels.get(TUNNEL_TARGET.exec(record.content)?.[1] ?? "")
          const rule = tunnel?.ingress.find((r) => r.hostname === record.name)
          routes.push({
            key,
            hostname: record.name,
            protocol: protocolOf(rule?.service),
            vpc_id: tunnel?.vpc_id ?? null,
            service_url: rule?.service ?? null
          })
        }
      }
      return routes
    })

  const checkAccount = (account: EdgeTunnels.EdgeAccount) =>
    account.api_token === "" || account.account_id === ""
      ? Effect.fail(
        new EdgeTunnels.EdgeError({ reason: "unauthorized", detail: "no tunnel-provider account or token" })
      )
      : Effect.void

  return EdgeTunnels.EdgeTunnels.of({
    backend: "cloudflare",
    publish: (account, route) =>
      checkAccount(account).pipe(
        Effect.zipRight(route.protocol === "udp" ? publishUdp(account, route) : publishThroughTunnel(account, route)),
        Effect.withSpan("CloudflareEdge.publish", { attributes: { key: route.key, hostname: route.hostname } })
      ),
    unpublish: (account, route) =>
      checkAccount(account).pipe(
        Effect.zipRight(route.protocol === "udp" ? withdrawUdp(account, route) : withdrawFromTunnel(account, route)),
        Effect.withSpan("CloudflareEdge.unpublish", { attributes: { key: route.key } })
      ),
    held: (account) =>
      checkAccount(account).pipe(
        Effect.zipRight(provider(held(account))),
        Effect.withSpan("CloudflareEdge.held")
      )
  })
})

/** EdgeTunnels on the provider's API; needs an HttpClient and the cluster's KubeApi. */
export const layer = (options: Options = {}) => Layer.effect(EdgeTunnels.EdgeTunnels, make(options))
