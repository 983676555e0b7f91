/**
 * Lists through the SDK a page at a time: the Effect client's `pages.page` and `pages.stream`
 * and the Promise client's `pages.all` (an async iterator) follow the server's `Link` headers
 * and together answer the whole list, in order, typed as the list's items.
 */
import { FetchHttpClient, HttpServer } from "@effect/platform"
import { expect, it as plain, layer } from "@effect/vitest"
import { createTenetClient, TenetClient } from "@tenet/client"
import { TestServer } from "@tenet/server"
import { Chunk, Effect, Stream } from "effect"

const baseUrl = Effect.map(
  HttpServer.HttpServer,
  (server) => server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : ""
)

/** Every list of the contract that goes a page at a time, as the type `ListKey` has them: no more, no fewer. */
const PAGED: Record<TenetClient.ListKey, true> = {
  "tenants.list": true,
  "domains.list": true,
  "serviceTunnels.list": true,
  "vpcs.list": true,
  "subnets.list": true,
  "securityRules.list": true,
  "pods.list": true,
  "tunnels.list": true,
  "tunnels.listForPod": true,
  "registryCredentials.list": true,
  "guardrails.list": true,
  "tenantGuardrails.list": true,
  "addressSets.list": true,
  "vpcs.reachability": true
}

plain("the paged lists are read from the contract, the same in its types and at run time", () => {
  expect([...TenetClient.LISTS].sort()).toEqual(Object.keys(PAGED).sort())
})

layer(TestServer.layer(), { excludeTestServices: true })("pages through the SDK", (it) => {
  it.effect("stream, page and async iterator follow the Link headers over the whole list", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const admin = yield* TenetClient.loginAdmin({
        baseUrl: url,
        username: TestServer.ADMIN_USERNAME,
        password: TestServer.ADMIN_PASSWORD
      })
      yield* admin.tenants.create({
        payload: { name: "paged" as never, password: "paged-password", description: null }
      })
      const tenet = yield* TenetClient.loginTenant({ baseUrl: url, name: "paged", password: "paged-password" })
      const made: Array<string> = []
      for (let i = 0; i < 7; i++) {
        made.push((yield* tenet.vpcs.create({ payload: { name: `v${i}`, enable_internet: false } })).name)
      }
      const whole = yield* tenet.vpcs.list()
      expect(whole.map((v) => v.name).sort()).toEqual([...made].sort())

      // Three pages of at most 3: the stream reads them in turn.
      const streamed = yield* Stream.runCollect(tenet.pages.stream("vpcs.list", undefined, { limit: 3 }))
      const names: ReadonlyArray<string> = Chunk.toReadonlyArray(streamed).map((vpc) => vpc.name)
      expect(names).toEqual(whole.map((v) => v.name))

      const first = yield* tenet.pages.page("vpcs.list", undefined, { limit: 5 })
      expect(first.items).toHaveLength(5)
      expect(first.next_page_token).toEqual(expect.any(String))
      const second = yield* tenet.pages.page("vpcs.list", undefined, { limit: 5, page_token: first.next_page_token })
      expect(second.items.map((v) => v.id)).toEqual(whole.slice(5).map((v) => v.id))
      expect(second.next_page_token).toBeUndefined()

      // A rule list pages its `rules`; the request's own fields are kept on every page.
      const vpc = whole[0]!
      for (const port of ["22", "80", "443"]) {
        yield* tenet.securityRules.create({
          payload: {
            vpc_id: vpc.id,
            name: `port-${port}`,
            direction: "ingress",
            action: "allow",
            priority: 100,
            protocol: "tcp",
            ports: port,
            remote_type: "cidr",
            remote_cidr: "203.0.113.0/24"
          }
        })
      }
      const rules = yield* Stream.runCollect(
        tenet.pages.stream("securityRules.list", { urlParams: { vpc_id: vpc.id } }, { limit: 1 })
      )
      expect(Chunk.toReadonlyArray(rules).map((r) => r.name)).toEqual(
        (yield* tenet.securityRules.list({ urlParams: { vpc_id: vpc.id } })).rules.map((r) => r.name)
      )

      // Reachability always goes a page at a time: its pairs, streamed, are the whole matrix.
      yield* tenet.subnets.create({
        payload: { vpc_id: vpc.id, name: "apps", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" }
      })
      const pairs = yield* Stream.runCollect(
        tenet.pages.stream("vpcs.reachability", { path: { vpc_id: vpc.id }, urlParams: { detail: "pods" } }, {
          limit: 2
        })
      )
      const inOne = yield* tenet.vpcs.reachability({ path: { vpc_id: vpc.id }, urlParams: { detail: "pods" } })
      expect(Chunk.toReadonlyArray(pairs).map((p) => [p.from.kind, p.to.kind])).toEqual(
        inOne.pairs.map((p) => [p.from.kind, p.to.kind])
      )
      expect(inOne.pairs.length).toBeGreaterThan(2)

      // The Promise client: an async iterator, timestamps as Dates.
      const promised = createTenetClient({
        baseUrl: url,
        tenantToken: (yield* tenantToken(url)),
        tenantId: vpc.tenant_id
      })
      const promisedPages = yield* Effect.promise(async () => {
        const seen: Array<{ readonly name: string; readonly created_at: Date }> = []
        for await (const item of promised.pages.all("vpcs.list", undefined, { limit: 2 })) seen.push(item)
        // One page at a time, its fields named as the Effect client and the wire name them.
        const first = await promised.pages.page("vpcs.list", undefined, { limit: 5 })
        const second = await promised.pages.page("vpcs.list", undefined, {
          limit: 5,
          page_token: first.next_page_token
        })
        await promised.close()
        return { first, iterated: seen, second }
      })
      const { iterated } = promisedPages
      expect(iterated.map((v) => v.name)).toEqual(whole.map((v) => v.name))
      expect(iterated[0]!.created_at).toBeInstanceOf(Date)
      const pages = [promisedPages.first, promisedPages.second]
      expect(pages.flatMap((p) => p.items).map((v) => v.name)).toEqual(whole.map((v) => v.name))
      expect(pages.map((p) => p.next_page_token)).toEqual([expect.any(String), undefined])
    }).pipe(Effect.provide(FetchHttpClient.layer)))
})

/** The paged tenant's token, by logging in again. */
const tenantToken = (url: string) =>
  Effect.map(
    Effect.flatMap(TenetClient.make({ baseUrl: url }), (c) =>
      c.tenantIdentity.login({ payload: { name: "paged", password: "paged-password" } })),
    (session) =>
      session.api_token
  )
