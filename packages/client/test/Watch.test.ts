/**
 * The change stream through the SDK: `watch()` as a Stream (resumed from the last revision when
 * the connection is cut), the Promise client's async iterator, and the waiters built on it.
 */
import { FetchHttpClient, HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { createTenetClient, Errors, TenetClient } from "@tenet/client"
import { ChangeFeed } from "@tenet/core"
import { TestServer } from "@tenet/server"
import { Chunk, Effect, Fiber, Stream } from "effect"

const baseUrl = Effect.map(
  HttpServer.HttpServer,
  (server) => server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : ""
)

layer(TestServer.layer({ watch: { retention: "1 millis" } }), { excludeTestServices: true })(
  "watch through the SDK",
  (it) => {
    it.effect(
      "watch() streams a tenant's changes; waiters answer once the VPC is applied and the pod runs",
      () =>
        Effect.gen(function*() {
          const url = yield* baseUrl
          const admin = yield* TenetClient.loginAdmin({
            baseUrl: url,
            username: TestServer.ADMIN_USERNAME,
            password: TestServer.ADMIN_PASSWORD
          })
          yield* admin.tenants.create({
            payload: { name: "watcher" as never, password: "watch-password", description: null }
          })
          const tenet = yield* TenetClient.loginTenant({ baseUrl: url, name: "watcher", password: "watch-password" })

          const watching = yield* Effect.fork(
            Stream.runCollect(
              tenet.watch().pipe(Stream.filter((i) => i.type !== "BOOKMARK"), Stream.take(3))
            )
          )
          yield* Effect.sleep("300 millis")
          const vpc = yield* tenet.vpcs.create({ payload: { name: "watched", enable_internet: false } })
          const events = Chunk.toReadonlyArray(yield* Fiber.join(watching))
          expect(events[0]).toMatchObject({ type: "ADDED", kind: "vpc", id: vpc.id })
          expect(events.every((e) => e.revision !== "")).toBe(true)

          const rule = yield* tenet.securityRules.create({
            payload: {
              vpc_id: vpc.id,
              name: "https",
              direction: "ingress",
              action: "allow",
              priority: 100,
              protocol: "tcp",
              ports: "443",
              remote_type: "cidr",
              remote_cidr: "203.0.113.0/24"
            }
          })
          yield* tenet.waitUntilApplied({ vpc_id: rule.rule!.vpc_id }, { timeout: "10 seconds" })
          const subnet = yield* tenet.subnets.create({
            payload: { vpc_id: vpc.id, name: "apps", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" }
          })
          const pod = yield* tenet.pods.create({
            payload: { vpc_id: vpc.id, subnet_id: subnet.id, name: "web", container_image: "nginx:1.27" }
          })
          const running = yield* tenet.waitUntilRunning(pod, { timeout: "10 seconds" })
          expect(running.status.phase).toBe("running")

          // Resumed from a revision, the Promise client's iterator sends what came after it.
          const all = yield* Stream.runCollect(
            tenet.watch({ since: "0" }).pipe(Stream.takeUntil((i) => i.type === "BOOKMARK"))
          ).pipe(Effect.either)
          const promised = createTenetClient({
            baseUrl: url,
            tenantToken: (yield* relogin(url)),
            tenantId: vpc.tenant_id
          })
          const iterated = yield* Effect.promise(async () => {
            const seen: Array<string> = []
            for await (const item of promised.watch({ since: "0" })) {
              if (item.type === "BOOKMARK") break
              seen.push(`${item.type} ${item.kind}`)
            }
            await promised.close()
            return seen
          })
          expect(all._tag).toBe("Right")
          expect(iterated).toContain("ADDED vpc")
          expect(iterated).toContain("ADDED pod")

          // A rotated token ends the stream: Unauthorized, typed, not resumed with the old token.
          const revoked = yield* Effect.fork(Effect.flip(Stream.runDrain(tenet.watch())))
          yield* Effect.sleep("300 millis")
          yield* admin.tenantIdentity.rotateToken({ path: { tenant_id: vpc.tenant_id } })
          expect(yield* Fiber.join(revoked)).toBeInstanceOf(Errors.Unauthorized)

          // Compacted away: Gone, typed, for the caller to list again.
          yield* Effect.sleep("10 millis")
          yield* Effect.flatMap(ChangeFeed.ChangeFeed, (feed) => feed.compact)
          const current = yield* TenetClient.make({
            baseUrl: url,
            tenantToken: yield* relogin(url),
            tenantId: vpc.tenant_id
          })
          const gone = yield* Effect.flip(Stream.runDrain(current.watch({ since: "1" })))
          expect(gone).toBeInstanceOf(Errors.Gone)
        }).pipe(Effect.provide(FetchHttpClient.layer)),
      { timeout: 60_000 }
    )
  }
)

const relogin = (url: string) =>
  Effect.map(
    Effect.flatMap(TenetClient.make({ baseUrl: url }), (c) =>
      c.tenantIdentity.login({ payload: { name: "watcher", password: "watch-password" } })),
    (session) =>
      session.api_token
  )
