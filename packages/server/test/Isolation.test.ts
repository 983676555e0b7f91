/**
 * The isolation matrix. Every endpoint of the contract (enumerated from it, so new endpoints
 * are covered without editing this file) is called with no token, a malformed token, a revoked
 * token, another tenant's token aimed at this tenant's resources, and a tenant token on admin
 * endpoints. None may succeed against the victim, leak the victim's data, or change its state.
 */
import { OpenApi } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Api } from "@tenet/core"
import { Effect } from "effect"
import { TestServer } from "../src/index.js"
import { asAdmin, newTenant, raw, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

const document = OpenApi.fromApi(Api.TenetApi) as unknown as {
  paths: Record<
    string,
    Record<string, {
      security?: Array<Record<string, unknown>>
      parameters?: Array<{ name: string; in: string }>
      requestBody?: { content: { "application/json": { schema: { $ref?: string } } } }
    }>
  >
  components: { schemas: Record<string, { examples?: Array<unknown> } & Json> }
}

interface Endpoint {
  readonly id: string
  readonly method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT"
  readonly path: string
  /** The security schemes that admit a caller; empty for public endpoints. */
  readonly schemes: ReadonlyArray<string>
  readonly query: ReadonlyArray<string>
  /** The request body's documented example, when it has a body. */
  readonly example: unknown
}

/** The first documented example anywhere in a schema (a union keeps it on a member). */
const firstExample = (schema: unknown): unknown => {
  if (typeof schema !== "object" || schema === null) return undefined
  const examples = (schema as Json).examples
  if (Array.isArray(examples) && examples.length > 0) return examples[0]
  for (const value of Object.values(schema)) {
    const found = firstExample(value)
    if (found !== undefined) return found
  }
  return undefined
}

const endpoints: ReadonlyArray<Endpoint> = Object.values(Api.TenetApi.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => {
    const openApiPath = endpoint.path.replace(/:(\w+)/g, "{$1}")
    const operation = document.paths[openApiPath]![endpoint.method.toLowerCase()]!
    const body = operation.requestBody?.content["application/json"].schema
    const schema = body?.$ref === undefined ? body : document.components.schemas[body.$ref.split("/").pop()!]
    const example = firstExample(schema)
    return {
      id: `${group.identifier}.${endpoint.name}`,
      method: endpoint.method as Endpoint["method"],
      path: endpoint.path,
      schemes: (operation.security ?? []).flatMap((s) => Object.keys(s)),
      query: (operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
      example: body === undefined ? undefined : example ?? {}
    }
  })
)

const HEADER: Record<string, string> = {
  adminToken: "x-admin-token",
  tenantToken: "x-auth-token",
  tenantLogoutToken: "x-api-token"
}

const headersFor = (schemes: ReadonlyArray<string>, token: string) =>
  Object.fromEntries(schemes.map((s) => [HEADER[s]!, token]))

/** The victim: a tenant with one of everything, and the ids the matrix aims at. */
const victim = Effect.gen(function*() {
  const admin = yield* asAdmin
  yield* admin.providerConfig.put({
    payload: {
      external_subnet_cidr: "203.0.113.0/24",
      external_subnet_gateway: "203.0.113.1",
      peering_subnet_cidr: "100.64.0.0/16",
      pod_dns_nameservers: [],
      pod_dns_ndots: null,
      edge_account_id: "acct",
      edge_api_token: "edge-token",
      edge_domain: "apps.example.com"
    } as never
  })
  const w = yield* workspace
  const { creds, headers } = w
  const rule = ((yield* raw("POST", "/security-rules", {
    headers,
    body: {
      vpc_id: w.vpc.id,
      name: "https",
      direction: "ingress",
      action: "allow",
      priority: 100,
      protocol: "tcp",
      ports: "443",
      remote_type: "cidr",
      remote_cidr: "0.0.0.0/0"
    }
  })).body as Json).rule as Json
  const pod = (yield* w.createPod({ env_vars: { SECRET_VALUE: "victim-env-secret" } })).body as Json
  const tunnel = (yield* raw("POST", `/pods/${pod.id}/tunnel`, {
    headers,
    body: { tunnel_name: "victim", subdomain: `victim-${w.tenant.name}`, protocol_type: "http" }
  })).body as Json
  yield* raw("POST", `/tenants/${w.tenant.id}/registry-credentials`, {
    headers,
    body: { name: "victim-registry", server: "registry.example.com", username: "u", password: "victim-registry-secret" }
  })
  const domain = `${w.tenant.name}.example.net`
  yield* admin.domains.assign({ path: { tenant_id: w.tenant.id }, payload: { domain: domain as never } })
  const serviceTunnel = yield* admin.serviceTunnels.create({
    payload: {
      service: `svc-${w.tenant.name}` as never,
      subdomain: `svc-${w.tenant.name}` as never,
      domain: null,
      target_url: null
    }
  })
  // A token of the victim's that no longer works.
  const revoked = w.session.api_token
  const rotated = ((yield* raw("POST", `/tenants/${w.tenant.id}/rotate-token`, { headers })).body as Json)
    .api_token as string
  return {
    ...w,
    headers: { "x-auth-token": rotated },
    creds: { ...creds, token: rotated },
    token: rotated,
    revoked,
    rule,
    pod,
    tunnel,
    domain,
    serviceTunnel
  }
})

layer(testServer(), { excludeTestServices: true })("isolation matrix", (it) => {
  it.effect(
    "no endpoint admits a missing, malformed, revoked or foreign token, or a tenant on admin routes",
    () =>
      Effect.gen(function*() {
        const v = yield* victim
        const intruder = yield* newTenant("intruder")
        const intruderToken = intruder.session.api_token
        // The admin's token before a rotation: revoked by it.
        const revokedAdmin = ((yield* raw("POST", "/admin/login", {
          body: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD }
        })).body as Json).api_token as string
        yield* raw("POST", "/admin/rotate-token", { headers: { "x-admin-token": revokedAdmin } })
        const admin = yield* asAdmin

        const victimIds: Record<string, string> = {
          tenant_id: v.tenant.id,
          vpc_id: v.vpc.id,
          rule_id: v.rule.id,
          pod_id: v.pod.id,
          tunnel_id: v.tunnel.id,
          name: "victim-registry",
          domain: v.domain,
          service_tunnel_id: v.serviceTunnel.id
        }
        // The example bodies' sample ids, mapped onto the victim's.
        const sampleIds: Record<string, string> = {
          "2f9c6a1e-4b7d-4c3a-9e8f-1a2b3c4d5e6f": v.tenant.id,
          "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a": v.vpc.id,
          "c1a2b3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d": v.subnet.id,
          "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e": v.rule.id,
          "9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c6b": v.rule.id
        }
        const aimedAtVictim = (endpoint: Endpoint, token: string) => {
          const path = endpoint.path.replace(/:(\w+)/g, (_, p: string) => encodeURIComponent(victimIds[p]!))
          const query = endpoint.query.filter((q) => victimIds[q] !== undefined).map((q) => `${q}=${victimIds[q]}`)
          let body = endpoint.example === undefined ? undefined : JSON.stringify(endpoint.example)
          for (const [sample, real] of Object.entries(sampleIds)) body = body?.replaceAll(sample, real)
          body = body?.replaceAll("{token}", token)
          return {
            url: query.length === 0 ? path : `${path}?${query.join("&")}`,
            body: body === undefined ? undefined : JSON.parse(body)
          }
        }
        // What of the victim's must never reach a caller that is not the victim or the admin.
        const secrets = [v.token, v.revoked, "victim-env-secret", "victim-registry-secret", v.pod.name, v.vpc.name]
          .filter((s) => s.length > 6)

        const snapshot = Effect.gen(function*() {
          const headers = v.headers
          return JSON.stringify([
            yield* admin.tenants.get({ path: { tenant_id: v.tenant.id } }),
            (yield* raw("GET", "/vpcs", { headers })).body,
            (yield* raw("GET", "/subnets", { headers })).body,
            (yield* raw("GET", `/security-rules?vpc_id=${v.vpc.id}`, { headers })).body,
            (yield* raw("GET", "/pods", { headers })).body,
            (yield* raw("GET", "/tunnels", { headers })).body,
            (yield* raw("GET", `/tenants/${v.tenant.id}/registry-credentials`, { headers })).body,
            yield* admin.domains.list({ path: { tenant_id: v.tenant.id } }),
            (yield* admin.serviceTunnels.list()).map((s) => s.id)
          ])
        })
        const before = yield* snapshot
        const failures: Array<string> = []
        let calls = 0

        for (const endpoint of endpoints.filter((e) => e.schemes.length > 0)) {
          const tenantScheme = endpoint.schemes.some((s) => s !== "adminToken")
          const adminOnly = endpoint.schemes.every((s) => s === "adminToken")
          const cases: Array<readonly [string, Record<string, string>, string, ReadonlyArray<number>]> = [
            ["no token", {}, "", [401]],
            ["malformed token", headersFor(endpoint.schemes, "tenet_not-a-real-token"), "tenet_not-a-real-token", [401]]
          ]
          if (tenantScheme) {
            cases.push(["revoked tenant token", headersFor(endpoint.schemes, v.revoked), v.revoked, [401]])
          }
          if (endpoint.schemes.includes("adminToken")) {
            cases.push(["revoked admin token", { "x-admin-token": revokedAdmin }, revokedAdmin, [401]])
          }
          if (adminOnly) {
            cases.push([
              "tenant token on an admin route",
              { "x-auth-token": v.token, "x-admin-token": v.token },
              v.token,
              [401, 403]
            ])
          }
          if (tenantScheme) {
            cases.push([
              "another tenant's token",
              headersFor(endpoint.schemes, intruderToken),
              intruderToken,
              [401, 403, 404]
            ])
          }

          for (const [name, headers, token, statuses] of cases) {
            const { body, url } = aimedAtVictim(endpoint, token)
            const response = yield* raw(endpoint.method, url, {
              headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
              ...(body === undefined ? {} : { body })
            })
            calls++
            const leaked = secrets.filter((s) => response.text.includes(s))
            // Another tenant may use endpoints that name nothing of the victim's: on its own data.
            const ownData = name === "another tenant's token" && response.status < 300 &&
              !Object.values(victimIds).some((id) => url.includes(id) || JSON.stringify(body ?? "").includes(id))
            if (leaked.length > 0) failures.push(`${endpoint.id} (${name}): leaked ${leaked.join(", ")}`)
            if (!ownData && !statuses.includes(response.status)) {
              failures.push(`${endpoint.id} (${name}): ${response.status} ${response.text.slice(0, 120)}`)
            }
            if (
              response.status >= 400 && (typeof response.body !== "object" || !("detail" in (response.body as Json)))
            ) {
              failures.push(`${endpoint.id} (${name}): error without a JSON detail`)
            }
          }
        }
        expect(failures).toEqual([])
        expect(calls).toBeGreaterThan(150)
        expect(yield* snapshot).toBe(before)
      }),
    { timeout: 120_000 }
  )
})
