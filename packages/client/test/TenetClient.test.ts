import { FetchHttpClient, HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { TenetClient } from "@tenet/client"
import { TestServer } from "@tenet/server"
import { Effect } from "effect"

/** The address the test server listens on. */
const baseUrl = Effect.map(
  HttpServer.HttpServer,
  (server) => server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : ""
)

/** A client on plain fetch, as a program outside this process would have. */
const connect = (options: TenetClient.Options) => TenetClient.make(options).pipe(Effect.provide(FetchHttpClient.layer))

layer(TestServer.layer(), { excludeTestServices: true })(
  "TenetClient",
  (it) => {
    it.effect("logs in as admin, creates a tenant and acts as it, with typed errors", () =>
      Effect.gen(function*() {
        const url = yield* baseUrl
        const anonymous = yield* connect({ baseUrl: url })
        const session = yield* anonymous.adminIdentity.login({
          payload: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD }
        })
        const admin = yield* connect({ baseUrl: url, adminToken: session.api_token })
        const tenant = yield* admin.tenants.create({
          payload: { name: "client-test" as never, password: "client-password", description: null }
        })
        const login = yield* anonymous.tenantIdentity.login({
          payload: { name: tenant.name, password: "client-password" }
        })
        const asTenant = yield* connect({ baseUrl: url, tenantToken: login.api_token })
        yield* asTenant.tenantIdentity.logout()
        const conflict = yield* Effect.flip(admin.tenants.create({
          payload: { name: "client-test" as never, password: "client-password", description: null }
        }))
        expect(conflict._tag).toBe("Conflict")
        const denied = yield* Effect.flip(anonymous.tenants.list())
        expect(denied._tag).toBe("Unauthorized")
      }).pipe(Effect.scoped))
  }
)
