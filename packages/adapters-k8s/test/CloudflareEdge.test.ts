import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { CloudflareEdge, Names } from "@tenet/adapters-k8s"
import type { Ids } from "@tenet/core"
import { EdgeTunnels } from "@tenet/core"
import { EdgeTunnelsContract, Fixtures } from "@tenet/core/testing"
import { Effect, Layer } from "effect"
import { afterAll, afterEach, beforeAll } from "vitest"
import * as CloudflareSchema from "./CloudflareSchema.js"
import * as FakeApiServer from "./FakeApiServer.js"
import * as FakeProvider from "./FakeProvider.js"

// Every test talks to its stand-in provider through Prism, validating against Cloudflare's
// published schema; after each, what the stand-in received is checked for what the schema
// does not name.
let prism: CloudflareSchema.Proxy
let provider: FakeProvider.FakeProvider | undefined
beforeAll(async () => {
  prism = await CloudflareSchema.start()
}, 60_000)
afterAll(() => prism.close())
afterEach(() => {
  const sent = provider?.requests ?? []
  provider = undefined
  expect(sent.flatMap((r) => CloudflareSchema.unnamed(prism.document, r))).toEqual([])
})

const edgeLayer = Layer.unwrapEffect(
  Effect.map(FakeProvider.Provider, (fake) => {
    provider = fake
    prism.upstream = fake.url
    return CloudflareEdge.layer({
      api: { baseUrl: prism.url, retries: 3, retryBase: "5 millis" },
      externalIpWait: { attempts: 3, spacingMillis: 10 }
    })
  })
).pipe(
  Layer.provideMerge(FakeApiServer.layer()),
  Layer.provideMerge(FakeProvider.layer),
  Layer.provide(FetchHttpClient.layer)
)

const account = { account_id: FakeProvider.ACCOUNT, api_token: FakeProvider.TOKEN }

/** A VPC in the fake cluster, with its namespace, for routes to live in. */
const inVpc = Effect.gen(function*() {
  const fake = yield* FakeApiServer.Fake
  const { vpc } = Fixtures.network()
  fake.put({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: Names.namespace(vpc.vpc_id), labels: {} }
  })
  return { tenant_id: vpc.tenant_id, vpc_id: vpc.vpc_id as Ids.VpcId }
})

const route = (
  vpc: EdgeTunnels.EdgeRoute["vpc"],
  key: string,
  hostname: string,
  protocol: EdgeTunnels.EdgeRoute["protocol"] = "http"
): EdgeTunnels.EdgeRoute => ({
  key,
  hostname,
  protocol,
  service_url: `${protocol}://10.96.0.20:8080`,
  vpc
})

describe("CloudflareEdge", () => {
  EdgeTunnelsContract.run("cloudflare (provider and API server fakes)", () => edgeLayer)

  it.effect("a VPC's routes share one tunnel: CNAMEs to it, ingress in order with the catch-all last, one connector", () =>
    Effect.gen(function*() {
      const edge = yield* EdgeTunnels.EdgeTunnels
      const provider = yield* FakeProvider.Provider
      const cluster = yield* FakeApiServer.Fake
      const vpc = yield* inVpc
      // Published at once: the configuration PUTs must not overwrite each other.
      yield* Effect.forEach(
        Array.from({ length: 8 }, (_, i) => route(vpc, `k${i}`, `r${i}.example.com`)),
        (r) => edge.publish(account, r),
        { concurrency: "unbounded" }
      )
      const tunnels = [...provider.tunnels.values()].filter((t) => !t.deleted)
      expect(tunnels.map((t) => t.name)).toEqual([Names.edgeTunnel(vpc.vpc_id)])
      const ingress = tunnels[0]!.ingress
      expect(ingress.at(-1)).toEqual({ service: "http_status:404" })
      expect(ingress.slice(0, -1).map((r) => r.hostname).sort()).toEqual(
        Array.from({ length: 8 }, (_, i) => `r${i}.example.com`).sort()
      )
      for (const record of provider.records.values()) {
        expect(record).toMatchObject({ type: "CNAME", content: `${tunnels[0]!.id}.cfargotunnel.com`, proxied: true })
      }
      const connector = cluster.objects.get(`Deployment/${Names.namespace(vpc.vpc_id)}/tunnel-connector`)!
      expect(connector.spec.template.metadata.annotations["ovn.kubernetes.io/logical_switch"]).toBe("tenet-peering")
      const secret = cluster.objects.get(`Secret/${Names.namespace(vpc.vpc_id)}/tunnel-connector`)!
      expect(Buffer.from(secret.data.TUNNEL_TOKEN, "base64").toString()).toBe(tunnels[0]!.token)
    }).pipe(Effect.provide(edgeLayer)))

  it.effect("withdrawing the last route stops the connector and deletes the tunnel and its records", () =>
    Effect.gen(function*() {
      const edge = yield* EdgeTunnels.EdgeTunnels
      const provider = yield* FakeProvider.Provider
      const cluster = yield* FakeApiServer.Fake
      const vpc = yield* inVpc
      const a = route(vpc, "a", "a.example.com")
      const b = route(vpc, "b", "b.apps.example.net", "ssh")
      yield* edge.publish(account, a)
      yield* edge.publish(account, b)
      yield* edge.unpublish(account, EdgeTunnels.withdrawalOf(a))
      const tunnel = [...provider.tunnels.values()][0]!
      expect(tunnel.ingress).toEqual([{ hostname: "b.apps.example.net", service: "ssh://10.96.0.20:8080" }, {
        service: "http_status:404"
      }])
      tunnel.connections = 2
      yield* edge.unpublish(account, EdgeTunnels.withdrawalOf(b))
      expect(tunnel.deleted).toBe(true)
      expect([...provider.records.values()]).toEqual([])
      expect(cluster.ofKind("Deployment")).toEqual([])
    }).pipe(Effect.provide(edgeLayer)))

  it.live("rate limits and server errors are retried; what persists is unavailable", () =>
    Effect.gen(function*() {
      const edge = yield* EdgeTunnels.EdgeTunnels
      const provider = yield* FakeProvider.Provider
      provider.failNext(2, 429, 971)
      yield* edge.publish(account, route(null, "k", "ok.example.com"))
      provider.failNext(10, 503, 1000)
      const error = yield* Effect.flip(edge.publish(account, route(null, "k2", "down.example.com")))
      expect(error).toMatchObject({ reason: "unavailable" })
    }).pipe(Effect.provide(edgeLayer)))

  it.effect("the provider's errors become clear statuses", () =>
    Effect.gen(function*() {
      const edge = yield* EdgeTunnels.EdgeTunnels
      const provider = yield* FakeProvider.Provider
      // A hostname someone else already points somewhere.
      provider.addRecord({
        zone: "zone-example",
        type: "A",
        name: "taken.example.com",
        content: "192.0.2.1",
        proxied: false,
        comment: null
      })
      expect(yield* Effect.flip(edge.publish(account, route(null, "k", "taken.example.com")))).toMatchObject({
        reason: "conflict"
      })
      // A wrong token.
      expect(yield* Effect.flip(edge.publish({ ...account, api_token: "wrong" }, route(null, "k", "x.example.com"))))
        .toMatchObject({ reason: "unauthorized" })
      // No zone of the account holds the hostname.
      expect(yield* Effect.flip(edge.publish(account, route(null, "k", "x.elsewhere.org")))).toMatchObject({
        reason: "rejected"
      })
      // The tunnel was created meanwhile by another writer: its name is taken (1013), so it is used.
      const vpc = yield* inVpc
      provider.hideOnce(Names.edgeTunnel(vpc.vpc_id))
      yield* edge.publish(account, route(vpc, "k1", "one.example.com"))
      provider.hideOnce(Names.edgeTunnel(vpc.vpc_id))
      yield* edge.publish(account, route(vpc, "k2", "two.example.com"))
      expect([...provider.tunnels.values()].filter((t) => t.name === Names.edgeTunnel(vpc.vpc_id))).toHaveLength(1)
      // A tunnel with live connections that cannot be dropped yet is retried later.
      provider.failNext(1, 400, 1022, (r) =>
        r.method === "DELETE" && !r.path.endsWith("/connections") && r.path.includes("cfd_tunnel"))
      yield* edge.unpublish(account, EdgeTunnels.withdrawalOf(route(vpc, "k1", "one.example.com")))
      const busy = yield* Effect.flip(
        edge.unpublish(account, EdgeTunnels.withdrawalOf(route(vpc, "k2", "two.example.com")))
      )
      expect(busy).toMatchObject({ reason: "unavailable" })
      expect(busy.detail).toContain("active connections")
      yield* edge.unpublish(account, EdgeTunnels.withdrawalOf(route(vpc, "k2", "two.example.com")))
    }).pipe(Effect.provide(edgeLayer)))

  it.effect("DNS records are made as the provider's contract asks, and a replica's identical record is adopted", () =>
    Effect.gen(function*() {
      const edge = yield* EdgeTunnels.EdgeTunnels
      const provider = yield* FakeProvider.Provider
      const vpc = yield* inVpc
      // Every create carries a ttl (the fake refuses one without, as Cloudflare's schema does),
      // and lists filter by `name.exact`.
      yield* edge.publish(account, route(vpc, "k1", "first.example.com"))
      const creates = provider.requests.filter((r) => r.method === "POST" && r.path.endsWith("/dns_records"))
      expect(creates.map((r) => (r.body as { ttl?: unknown }).ttl)).toEqual([1])
      // Another replica makes the same record between this one's list and create (81057).
      provider.raceNextRecord()
      yield* edge.publish(account, route(vpc, "k2", "second.example.com"))
      const second = [...provider.records.values()].filter((r) => r.name === "second.example.com")
      expect(second).toHaveLength(1)
      expect(second[0]!.type).toBe("CNAME")
      // Only this route's record is withdrawn with it.
      yield* edge.unpublish(account, EdgeTunnels.withdrawalOf(route(vpc, "k2", "second.example.com")))
      expect([...provider.records.values()].map((r) => r.name)).toEqual(["first.example.com"])
    }).pipe(Effect.provide(edgeLayer)))

  it.effect("held reads every page of tunnels and records, and sees a route removed or changed outside Tenet", () =>
    Effect.gen(function*() {
      const edge = yield* EdgeTunnels.EdgeTunnels
      const provider = yield* FakeProvider.Provider
      const vpc = yield* inVpc
      // More routes than one page of records holds (50), and a record of someone else's.
      const routes = Array.from({ length: 53 }, (_, i) => route(vpc, `k${i}`, `r${i}.example.com`))
      yield* Effect.forEach(routes, (r) => edge.publish(account, r), { discard: true })
      provider.addRecord({
        zone: "zone-example",
        type: "A",
        name: "theirs.example.com",
        content: "192.0.2.1",
        proxied: false,
        comment: "made by hand"
      })
      const held = yield* edge.held(account)
      expect(held.map((h) => h.key).sort()).toEqual(routes.map((r) => r.key).sort())
      expect(held.every((h) => h.vpc_id === vpc.vpc_id && h.service_url === "http://10.96.0.20:8080")).toBe(true)
      const lists = provider.requests.filter((r) => r.method === "GET" && r.path.endsWith("/dns_records"))
      expect(lists.length).toBeGreaterThanOrEqual(2)
      // Behind Tenet's back: one record deleted, one hostname's ingress sent elsewhere, one removed.
      const tunnel = [...provider.tunnels.values()].find((t) => !t.deleted)!
      const record = [...provider.records.values()].find((r) => r.name === "r0.example.com")!
      provider.records.delete(record.id)
      tunnel.ingress = tunnel.ingress
        .filter((r) => r.hostname !== "r2.example.com")
        .map((r) => r.hostname === "r1.example.com" ? { ...r, service: "http://203.0.113.9:80" } : r)
      const after = new Map((yield* edge.held(account)).map((h) => [h.key, h]))
      expect(after.has("k0")).toBe(false)
      expect(after.get("k1")).toMatchObject({ hostname: "r1.example.com", service_url: "http://203.0.113.9:80" })
      expect(after.get("k2")).toMatchObject({ hostname: "r2.example.com", service_url: null })
      // Publishing again puts each back.
      yield* Effect.forEach(routes.slice(0, 3), (r) => edge.publish(account, r), { discard: true })
      const repaired = new Map((yield* edge.held(account)).map((h) => [h.key, h]))
      for (const key of ["k0", "k1", "k2"]) {
        expect(repaired.get(key)?.service_url).toBe("http://10.96.0.20:8080")
      }
    }).pipe(Effect.provide(edgeLayer)))

  it.effect("udp routes get an external IP, a DNAT to the VIP and an A record", () =>
    Effect.gen(function*() {
      const edge = yield* EdgeTunnels.EdgeTunnels
      const provider = yield* FakeProvider.Provider
      const cluster = yield* FakeApiServer.Fake
      const vpc = yield* inVpc
      const game = route(vpc, "udp1", "game.example.com", "udp")
      yield* edge.publish(account, game)
      const eip = cluster.objects.get(`OvnEip//${Names.udpRoute("udp1")}`)!
      expect(cluster.objects.get(`OvnDnatRule//${Names.udpRoute("udp1")}`)!.spec).toMatchObject({
        protocol: "udp",
        v4Ip: "10.96.0.20",
        internalPort: "8080",
        externalPort: "8080",
        vpc: Names.vpc(vpc.vpc_id)
      })
      expect([...provider.records.values()]).toMatchObject([
        { type: "A", name: "game.example.com", content: eip.status.v4Ip, proxied: false }
      ])
      expect([...provider.tunnels.values()]).toEqual([])
      expect(yield* edge.held(account)).toEqual([
        { key: "udp1", hostname: "game.example.com", protocol: "udp", vpc_id: null, service_url: null }
      ])
      yield* edge.unpublish(account, EdgeTunnels.withdrawalOf(game))
      expect([...provider.records.values()]).toEqual([])
      expect(cluster.ofKind("OvnDnatRule")).toEqual([])
    }).pipe(Effect.provide(edgeLayer)))
})

describe("CloudflareEdge against Cloudflare's published schema", () => {
  const operations = () =>
    Object.entries(prism.document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`)
    )

  /** The document's operation a request the stand-in received is an instance of. */
  const operationOf = (request: FakeProvider.Request) =>
    operations().find((op) => {
      const [method, template] = op.split(" ")
      return method === request.method && new RegExp(`^${template!.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(request.path)
    })

  it.effect("every operation the document holds is called, for every protocol, published and withdrawn", () =>
    Effect.gen(function*() {
      const edge = yield* EdgeTunnels.EdgeTunnels
      const fake = yield* FakeProvider.Provider
      const vpc = yield* inVpc
      const protocols: ReadonlyArray<EdgeTunnels.EdgeRoute["protocol"]> = ["http", "https", "ssh", "tcp", "udp"]
      const routes = protocols.map((p) => route(vpc, `k-${p}`, `${p}.example.com`, p))
      yield* Effect.forEach(routes, (r) => edge.publish(account, r), { discard: true })
      expect((yield* edge.held(account)).map((h) => h.protocol).sort()).toEqual([...protocols].sort())
      for (const tunnel of fake.tunnels.values()) tunnel.connections = 1
      yield* Effect.forEach(routes, (r) => edge.unpublish(account, EdgeTunnels.withdrawalOf(r)), { discard: true })
      expect([...fake.records.values()]).toEqual([])
      expect([...fake.tunnels.values()].every((t) => t.deleted)).toBe(true)
      expect(new Set(fake.requests.map(operationOf))).toEqual(new Set(operations()))
    }).pipe(Effect.provide(edgeLayer)))

  it.live("Prism refuses a request the schema does not allow, and a field it does not name is found", () =>
    Effect.gen(function*() {
      const fake = yield* FakeProvider.Provider
      const zone = fake.zones[0]!.id
      const create = (body: unknown) =>
        Effect.promise(() =>
          fetch(`${prism.url}/zones/${zone}/dns_records`, {
            method: "POST",
            headers: { authorization: `Bearer ${FakeProvider.TOKEN}`, "content-type": "application/json" },
            body: JSON.stringify(body)
          })
        )
      // No ttl: Cloudflare's current contract requires one (the errata's `dns-create-ttl`).
      const refused = yield* create({ type: "CNAME", name: "x.example.com", content: "t.cfargotunnel.com" })
      expect(refused.status).toBe(422)
      expect(fake.requests).toEqual([])
      const sent = { type: "CNAME", name: "x.example.com", content: "t.cfargotunnel.com", ttl: 1, colour: "blue" }
      expect((yield* create(sent)).status).toBe(200)
      expect(fake.requests.flatMap((r) => CloudflareSchema.unnamed(prism.document, r))).toEqual([
        `POST /zones/${zone}/dns_records: body.colour`
      ])
      fake.requests.length = 0
    }).pipe(Effect.provide(edgeLayer)))
})
