import { FetchHttpClient, HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { createTenetClient, Errors, TenetClient } from "@tenet/client"
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

    it.effect("a misspelt field is refused before it is sent, in the server's words and with its error", () =>
      Effect.gen(function*() {
        const url = yield* baseUrl
        const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
          Effect.promise(() =>
            fetch(`${url}${path}`, {
              method: "POST",
              headers: { "content-type": "application/json", ...headers },
              body: JSON.stringify(body)
            }).then((r) => r.json() as Promise<any>)
          )
        const admin = yield* post("/admin/login", {
          username: TestServer.ADMIN_USERNAME,
          password: TestServer.ADMIN_PASSWORD
        })
        yield* post("/tenants", { name: "typo-test", password: "typo-password" }, { "x-admin-token": admin.api_token })
        const session = yield* post("/tenants/login", { name: "typo-test", password: "typo-password" })
        const tenet = createTenetClient({ baseUrl: url, tenantToken: session.api_token, tenantId: session.id })
        const rule = {
          name: "web",
          direction: "ingress",
          action: "allow",
          priority: 10,
          protocol: "tcp",
          port: "8080",
          remote_type: "cidr",
          remote_cidr: "10.9.0.0/16"
        } as const
        const { created, deleted, refused, vpc } = yield* Effect.promise(async () => {
          const vpc = await tenet.vpcs.create({ payload: { name: "prod", enable_internet: false } })
          const refused = await tenet.securityRules.create({ payload: { ...rule, vpc_id: vpc.id } as never }).then(
            () => null,
            (e: unknown) => e
          )
          const { port: _, ...rest } = rule
          // A create answers the rule (never null: only a delete answers `rule: null`).
          const created = await tenet.securityRules.create({ payload: { ...rest, ports: "8080", vpc_id: vpc.id } })
          const deleted = await tenet.securityRules.delete({ path: { rule_id: created.rule.id } })
          await tenet.close()
          return { created, deleted, refused, vpc }
        })
        expect(created.rule).toMatchObject({ name: "web", ports: "8080" })
        const nothing: null = deleted.rule
        expect(nothing).toBeNull()
        // Instants are JavaScript Dates for Promise users.
        expect(vpc.created_at).toBeInstanceOf(Date)
        expect(Number.isNaN(vpc.created_at.getTime())).toBe(false)
        const problem = { field: "port", message: "unknown field \"port\"; did you mean \"ports\"?" }
        expect(refused).toBeInstanceOf(Errors.RuleValidation)
        expect(refused).toMatchObject({ ...problem, errors: [problem] })
        // The server answers the same words for the same body sent as it is.
        const server = yield* post("/security-rules", { ...rule, vpc_id: vpc.id }, {
          "x-auth-token": session.api_token
        })
        expect(server).toEqual({ detail: problem, errors: [problem] })
      }))

    it.effect("a misspelt query parameter is refused before it is sent, as the server refuses it, and nothing changes", () =>
      Effect.gen(function*() {
        const url = yield* baseUrl
        const anonymous = yield* connect({ baseUrl: url })
        const session = yield* anonymous.adminIdentity.login({
          payload: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD }
        })
        const admin = yield* connect({ baseUrl: url, adminToken: session.api_token })
        yield* admin.tenants.create({
          payload: { name: "query-typo" as never, password: "query-password", description: null }
        })
        const tenant = yield* TenetClient.loginTenant({ baseUrl: url, name: "query-typo", password: "query-password" })
          .pipe(Effect.provide(FetchHttpClient.layer))
        const vpc = yield* tenant.vpcs.create({ payload: { name: "prod", enable_internet: false } })
        const rule = {
          vpc_id: vpc.id,
          name: "preview",
          direction: "ingress",
          action: "allow",
          priority: 10,
          protocol: "tcp",
          ports: "8080",
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0"
        } as const
        // A JavaScript caller's typo reaches the call at run time; the types refuse it at compile time.
        const refused = yield* Effect.flip(
          tenant.securityRules.create({ payload: rule, urlParams: { dryrun: true } as never })
        )
        const problem = { field: "dryrun", message: "unknown query parameter \"dryrun\"; did you mean \"dry_run\"?" }
        expect(refused).toBeInstanceOf(Errors.InvalidInput)
        expect(refused).toMatchObject({ errors: [problem] })
        const badLimit = yield* Effect.flip(tenant.vpcs.list({ urlParams: { limit: 0 } }))
        expect(badLimit).toMatchObject({
          errors: [{ field: "limit", message: "must be an integer from 1 to 1000; got 0" }]
        })
        // A header too: an If-Match that is no entity-tag is refused before it is sent, as the server refuses it.
        const badTag = yield* Effect.flip(
          tenant.vpcs.delete({ path: { vpc_id: vpc.id }, headers: { "if-match": "hello world" } })
        )
        expect(badTag).toBeInstanceOf(Errors.InvalidInput)
        expect(badTag).toMatchObject({ errors: [{ field: "If-Match", message: expect.stringMatching(/^must be /) }] })
        const tagged = yield* Effect.promise(async () => {
          const login = await fetch(`${url}/tenants/login`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ name: "query-typo", password: "query-password" })
          }).then((r) => r.json() as Promise<{ api_token: string }>)
          return fetch(`${url}/vpcs/${vpc.id}`, {
            method: "DELETE",
            headers: { "x-auth-token": login.api_token, "if-match": "hello world" }
          }).then((r) => r.json())
        })
        expect(tagged).toEqual({
          detail: `If-Match: ${(badTag as Errors.InvalidInput).errors[0]!.message}`,
          errors: (badTag as Errors.InvalidInput).errors
        })
        const rules = yield* tenant.securityRules.list({ urlParams: { vpc_id: vpc.id } })
        expect(rules.rules.map((r) => r.name)).not.toContain("preview")
        // The server answers the same words for the same query sent as it is.
        const server = yield* Effect.promise(() =>
          fetch(`${url}/security-rules?dryrun=true`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-auth-token": "whatever" },
            body: JSON.stringify(rule)
          }).then((r) => r.json())
        )
        expect(server).toEqual({ detail: `dryrun: ${problem.message}`, errors: [problem] })
      }).pipe(Effect.scoped))
  }
)
