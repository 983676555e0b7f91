/**
 * A victim tenant with one of everything, the contract's endpoints enumerated from the HttpApi
 * (with their security and documented example bodies), and how to aim a request at the
 * victim's resources. Shared by the isolation matrix and the hostile-input fuzzing.
 */
import { OpenApi } from "@effect/platform"
import { Api } from "@tenet/core"
import { Effect } from "effect"
import { asAdmin, EDGE_ACCOUNT, raw, setProviderConfig, workspace } from "./Harness.js"

export type Json = Record<string, any>

/** The OpenAPI document as the server serves it: JSON. */
const document: {
  paths: Record<
    string,
    Record<string, {
      security?: Array<Record<string, unknown>>
      parameters?: Array<{ name: string; in: string }>
      requestBody?: { content: { "application/json": { schema: { $ref?: string } } } }
    }>
  >
  components: { schemas: Record<string, { examples?: Array<unknown> } & Json> }
} = JSON.parse(JSON.stringify(OpenApi.fromApi(Api.TenetApi)))

export interface Endpoint {
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

export const endpoints: ReadonlyArray<Endpoint> = Object.values(Api.TenetApi.groups).flatMap((group) =>
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

export const headersFor = (schemes: ReadonlyArray<string>, token: string) =>
  Object.fromEntries(schemes.map((s) => [HEADER[s]!, token]))

/** The victim: a tenant with one of everything, and the ids the matrix aims at. */
export const victim = Effect.gen(function*() {
  const admin = yield* asAdmin
  yield* setProviderConfig(EDGE_ACCOUNT)
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
  const guardrail = (yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
    headers,
    body: {
      name: "no telnet",
      require: "deny",
      direction: "ingress",
      protocol: "tcp",
      ports: "23",
      remote_cidr: "192.0.2.0/24"
    }
  })).body as Json
  const addressSet = yield* Effect.map(
    raw("POST", "/address-sets", { headers, body: { name: "victim-offices", entries: [{ cidr: "198.51.100.0/24" }] } }),
    (made) => {
      if (made.status !== 201) throw new Error(`the victim's address set: ${made.status} ${made.text}`)
      return made.body as Json
    }
  )
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
    guardrail,
    addressSet,
    pod,
    tunnel,
    domain,
    serviceTunnel
  }
})

/** Requests aimed at the victim's resources, what must never leak, and its observable state. */
export const target = (v: Effect.Effect.Success<typeof victim>, admin: Effect.Effect.Success<typeof asAdmin>) => {
  const victimIds: Record<string, string> = {
    tenant_id: v.tenant.id,
    vpc_id: v.vpc.id,
    rule_id: v.rule.id,
    guardrail_id: v.guardrail.id,
    address_set_id: v.addressSet.id,
    pod_id: v.pod.id,
    // A flow to explain: from the internet to the victim's pod.
    from: "internet",
    to: v.pod.id,
    protocol: "tcp",
    port: "443",
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
  // What the cluster reports of a pod (from the informers, a moment after an accepted change is
  // answered); a change to the pod's record shows in its etag.
  const RUNTIME = ["phase", "ready_replicas", "desired_replicas", "last_error", "stale_since"]
  // What of the victim's must never reach a caller that is not the victim or the admin.
  const secrets = [v.token, v.revoked, "victim-env-secret", "victim-registry-secret", v.pod.name, v.vpc.name]
    .filter((s) => s.length > 6)

  /**
   * The victim's state as its reads show it, less a pod's runtime: what the cluster reports
   * (a real one's replicas come up while the test runs) is not something a request changed.
   */
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
      yield* admin.domains.list({ path: { tenant_id: v.tenant.id }, urlParams: {} }),
      (yield* admin.serviceTunnels.list({ urlParams: {} })).map((s) => s.id)
    ], (key, value) => RUNTIME.includes(key) ? undefined : value)
  })
  return { victimIds, aimedAtVictim, secrets, snapshot }
}
