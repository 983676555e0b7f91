/**
 * Logs are JSON lines, each written while handling a request carries that request's id, and
 * no secret a client ever sent (passwords, tokens, env var values, registry passwords, the
 * provider token) appears in a log line or in a response where the spec hides it.
 */
import { HttpClient } from "@effect/platform"
import { describe, expect, layer } from "@effect/vitest"
import { ClusterController } from "@tenet/core"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { STATUS_CODES } from "node:http"
import { JsonLogs, TestServer } from "../src/index.js"
import type { RawResponse } from "./Harness.js"
import { raw, testServer, uniqueName } from "./Harness.js"

const lines: Array<string> = []
/** The binary's own log format, recorded. */
const recording = Logger.replace(
  Logger.defaultLogger,
  Logger.map(JsonLogs.logger, (line) => {
    lines.push(line)
  })
)

type Json = Record<string, any>

/** A secret no other test or fixture uses, so finding it anywhere means it leaked. */
const secret = (what: string) => `${what}-${uniqueName("s3cret")}`

describe("logs and secrets", () => {
  layer(testServer({ logLevel: LogLevel.All }).pipe(Layer.provide(recording)), { timeout: 60_000 })((it) => {
    it.effect("a whole scenario logs every line with a request id and leaks no secret", () =>
      Effect.gen(function*() {
        // The controller's own line ("leading the cluster controller") is no request's: the
        // scenario starts once this replica leads (on PostgreSQL the lock may come a moment late).
        const controller = yield* ClusterController.ClusterController
        while (!controller.leading()) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        lines.length = 0
        const responses: Array<{ readonly request: string; readonly response: RawResponse }> = []
        const call = (
          method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT",
          path: string,
          options: { readonly headers?: Record<string, string>; readonly body?: unknown } = {}
        ) =>
          Effect.tap(raw(method, path, options), (response) => {
            responses.push({ request: `${method} ${path}`, response })
          })

        const tenantPassword = secret("tenant-password")
        const wrongPassword = secret("wrong-password")
        const edgeToken = secret("edge-token")
        const registryPassword = secret("registry-password")
        const envValue = secret("env-value")
        const envValueLater = secret("env-value-later")

        const admin = (yield* call("POST", "/admin/login", {
          body: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD }
        })).body as Json
        const adminHeaders = { "x-admin-token": admin.api_token }
        yield* call("POST", "/admin/login", { body: { username: TestServer.ADMIN_USERNAME, password: wrongPassword } })
        yield* call("POST", "/provider-config", {
          headers: adminHeaders,
          body: {
            external_subnet_cidr: "203.0.113.0/24",
            external_subnet_gateway: "203.0.113.1",
            peering_subnet_cidr: "100.64.0.0/16",
            edge_account_id: "account",
            edge_api_token: edgeToken,
            edge_domain: "apps.example.com"
          }
        })
        yield* call("GET", "/provider-config", { headers: adminHeaders })

        const name = uniqueName("logs")
        const tenant = (yield* call("POST", "/tenants", {
          headers: adminHeaders,
          body: { name, password: tenantPassword }
        })).body as Json
        yield* call("POST", "/tenants/login", { body: { name, password: wrongPassword } })
        const session = (yield* call("POST", "/tenants/login", { body: { name, password: tenantPassword } }))
          .body as Json
        const headers = { "x-auth-token": session.api_token }
        const creds = { token: session.api_token, tenant_id: tenant.id }

        const vpc = (yield* call("POST", "/vpcs", { headers, body: { ...creds, name: "web" } })).body as Json
        const subnet = (yield* call("POST", "/subnets", {
          headers,
          body: { ...creds, vpc_id: vpc.id, name: "apps", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" }
        })).body as Json
        yield* call("POST", `/tenants/${tenant.id}/registry-credentials`, {
          headers,
          body: { name: "ghcr", server: "ghcr.io", username: "bot", password: registryPassword }
        })
        // A malformed body that carries a secret: the error names the field, not the value.
        yield* call("POST", `/tenants/${tenant.id}/registry-credentials`, {
          headers,
          body: { name: "Not A Dns Label", server: "ghcr.io", username: "bot", password: registryPassword }
        })
        const pod = (yield* call("POST", "/pods", {
          headers,
          body: {
            ...creds,
            vpc_id: vpc.id,
            subnet_id: subnet.id,
            name: "api",
            container_image: "ghcr.io/acme/api:1",
            env_vars: { API_KEY: envValue }
          }
        })).body as Json
        yield* call("PATCH", `/pods/${pod.id}/config`, { headers, body: { env_vars: { API_KEY: envValueLater } } })
        yield* call("POST", `/pods/${pod.id}/tunnel`, {
          headers,
          body: { tunnel_name: "api", subdomain: uniqueName("api"), protocol_type: "http" }
        })
        for (
          const path of ["/vpcs", "/pods", `/pods/${pod.id}`, "/tunnels", `/tenants/${tenant.id}/registry-credentials`]
        ) {
          yield* call("GET", path, { headers })
        }
        yield* call("GET", `/tenants/${tenant.id}/topology`, { headers })
        const rotated = (yield* call("POST", `/tenants/${tenant.id}/rotate-token`, { headers })).body as Json
        yield* call("POST", "/tenants/logout", { headers: { "x-api-token": rotated.api_token } })
        for (const path of ["/tenants", `/tenants/${tenant.id}`, "/operations-log"]) {
          yield* call("GET", path, { headers: adminHeaders })
        }
        const adminRotated = (yield* call("POST", "/admin/rotate-token", { headers: adminHeaders })).body as Json

        expect(responses.every((r) => r.response.status < 500)).toBe(true)
        expect(rotated.api_token).toEqual(expect.any(String))
        expect(adminRotated.api_token).toEqual(expect.any(String))

        const neverShown = [
          TestServer.ADMIN_PASSWORD,
          tenantPassword,
          wrongPassword,
          edgeToken,
          registryPassword,
          envValue,
          envValueLater
        ]
        const tokens = [admin.api_token, session.api_token, rotated.api_token, adminRotated.api_token]

        // Logs: JSON, with a request id, and no secret of any kind.
        expect(lines.length).toBeGreaterThanOrEqual(responses.length)
        for (const line of lines) {
          const entry = JSON.parse(line) as Json
          expect(entry.request_id, line).toEqual(expect.any(String))
          expect(typeof entry.message, line).toBe("string")
          // Nothing an operator has to skip over.
          for (const noise of ["spans", "fiberId", "annotations"]) expect(entry, line).not.toHaveProperty(noise)
          for (const s of [...neverShown, ...tokens]) expect(line, "a secret in the logs").not.toContain(s)
        }
        const ids = new Set(lines.map((l) => (JSON.parse(l) as Json).request_id))
        expect(ids.size).toBe(responses.length)

        // Each request's line: method, route template, status, duration, and for a refusal what it said.
        const answered = lines.map((l) => JSON.parse(l) as Json).filter((l) => typeof l.status === "number")
        expect(answered).toHaveLength(responses.length)
        for (const entry of answered) {
          expect(entry).toMatchObject({
            method: expect.any(String),
            url: expect.any(String),
            duration_ms: expect.any(Number)
          })
          expect(entry.message).toBe(
            `${entry.method} ${entry.url} ${entry.status} ${STATUS_CODES[entry.status]} (${entry.duration_ms} ms)`
          )
          const response = responses.find((r) => r.response.headers["x-request-id"] === entry.request_id)!
          expect(entry.detail).toEqual(
            entry.status >= 400 && entry.status < 500 ? (response.response.body as Json).detail : undefined
          )
        }
        expect(answered.find((e) => e.url === "/vpcs")?.route).toBe("/vpcs")

        // Responses: passwords, env values and the provider token never; tokens only where the
        // spec returns them (logins, rotations, the admin's view of a tenant).
        const mayShowTokens = /^(POST \/admin\/login|POST \/tenants\/login|POST .*\/rotate-token|GET \/tenants\/[^/]+)$/
        for (const { request, response } of responses) {
          for (const s of neverShown) expect(response.text, `${request} shows a secret`).not.toContain(s)
          if (!mayShowTokens.test(request)) {
            for (const t of tokens) expect(response.text, `${request} shows a token`).not.toContain(t)
          }
        }
      }))

    it.effect("a sane X-Request-Id from the caller is kept; anything else is replaced", () =>
      Effect.gen(function*() {
        const sent = (id: string) =>
          Effect.gen(function*() {
            lines.length = 0
            const http = yield* HttpClient.HttpClient
            const response = yield* http.get("/healthz", { headers: { "x-request-id": id } })
            return { header: response.headers["x-request-id"], logged: lines.map((l) => JSON.parse(l) as Json) }
          }).pipe(Effect.scoped)
        const kept = yield* sent("trace-42.a:b")
        expect(kept.header).toBe("trace-42.a:b")
        expect(kept.logged.map((l) => l.request_id)).toContain("trace-42.a:b")
        const injected = yield* sent("x\" injected=1 " + "y".repeat(200))
        expect(injected.header).toMatch(/^[0-9a-f-]{36}$/)
        expect(injected.logged.map((l) => l.request_id)).toContain(injected.header)
      }))
  })
})
