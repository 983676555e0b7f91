/** Shared helpers: the real client against the real server, plus raw requests for wire checks. */
import { HttpApiClient, HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import { PgEmbedded, PgTesting } from "@tenet/adapters-postgres"
import { Api } from "@tenet/core"
import type { MetricState } from "effect"
import { Effect, FiberRef, Layer, Metric, Stream } from "effect"
import { request as httpRequest } from "node:http"
import { expect, inject } from "vitest"
import { TestServer } from "../src/index.js"
import * as KubeOvnCrds from "./KubeOvnCrds.js"

/**
 * Which store the API suite runs on: memory by default; PostgreSQL (a database of its own per
 * server, on TENET_TEST_DATABASE_URL) or embedded PostgreSQL as TENET_TEST_STORE says.
 */
export const storeUnderTest = process.env.TENET_TEST_STORE === "postgres"
  ? "postgres"
  : process.env.TENET_TEST_STORE === "embedded"
  ? "embedded"
  : "memory"

/** Kube-OVN's CRDs: `TENET_KUBE_OVN_CRDS`, else beside the checkout in `shared/`. */
export const kubeOvnCrds = KubeOvnCrds.path

/**
 * Which cluster the API suite runs on: the simulated one by default; with
 * TENET_TEST_ORCHESTRATOR=kubernetes a real API server (`LocalCluster`), one per test project,
 * started by its global setup (`ClusterSetup.ts`); each file's servers own tenants of their own.
 */
export const orchestratorUnderTest = process.env.TENET_TEST_ORCHESTRATOR === "kubernetes" ? "kubernetes" : "simulated"
const sharedCluster = orchestratorUnderTest === "kubernetes"
  ? LocalCluster.asTenet(inject("tenetKubeconfig"))
  : undefined

const onStore = (options: TestServer.Options) => {
  switch (storeUnderTest) {
    case "memory":
      return TestServer.layer(options)
    case "postgres":
      return TestServer.layer({
        ...options,
        store: PgTesting.layerFreshDatabase(
          process.env.TENET_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
        )
      })
    case "embedded":
      return TestServer.layer({ ...options, store: PgEmbedded.layer().pipe(Layer.orDie) })
  }
}

/** A real server for a test file, on the store and the cluster under test. */
export const testServer = (options: TestServer.Options = {}) =>
  onStore(
    sharedCluster === undefined ? options : { ...options, orchestrator: LocalCluster.orchestrator(sharedCluster) }
  )

/** The headers a typed call sends: set around each call of a client made by `client`. */
const callHeaders = FiberRef.unsafeMake<Record<string, string>>({})

/**
 * Building a typed client derives every endpoint's codecs from the contract: a quarter of a
 * file's CPU when each test built several. One per test server, shared by every `client`.
 */
const makeTypedClient = HttpApiClient.make(Api.TenetApi, {
  transformClient: HttpClient.mapRequestEffect((request) =>
    Effect.map(FiberRef.get(callHeaders), (headers) => HttpClientRequest.setHeaders(request, headers))
  )
})
const typedClients = new WeakMap<HttpClient.HttpClient, Effect.Effect.Success<typeof makeTypedClient>>()
const typedClient = Effect.gen(function*() {
  const http = yield* HttpClient.HttpClient
  const known = typedClients.get(http)
  if (known !== undefined) return known
  const made = yield* makeTypedClient
  typedClients.set(http, made)
  return made
})

/** Every call of a client (its groups' endpoints) sends `headers`. */
const sending = <A>(calls: A, headers: Record<string, string>): A =>
  typeof calls === "function"
    ? ((...args: Array<unknown>) => Effect.locally(calls(...args), callHeaders, headers)) as A
    : Object.fromEntries(Object.entries(calls as object).map(([name, inner]) => [name, sending(inner, headers)])) as A

/** The typed client, with extra headers on every request. */
export const client = (headers: Record<string, string> = {}) =>
  Effect.map(typedClient, (typed) => sending(typed, headers))

export const adminLogin = Effect.flatMap(client(), (c) =>
  c.adminIdentity.login({
    payload: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD }
  }))

export const asAdmin = Effect.flatMap(adminLogin, (session) => client({ "x-admin-token": session.api_token }))

/** A tunnel provider account, for provider configurations that need one. */
export const EDGE_ACCOUNT = { edge_account_id: "acct", edge_api_token: "edge-token", edge_domain: "apps.example.com" }

/** The provider configuration most tests need (external and peering subnets), with extra fields. */
export const setProviderConfig = (extra: Record<string, unknown> = {}) =>
  Effect.flatMap(adminLogin, (admin) =>
    raw("POST", "/provider-config", {
      headers: { "x-admin-token": admin.api_token },
      body: {
        external_subnet_cidr: "203.0.113.0/24",
        external_subnet_gateway: "203.0.113.1",
        peering_subnet_cidr: "100.64.0.0/16",
        ...extra
      }
    }))

/** A rule allowing HTTPS in from anywhere to the whole VPC: the body of `POST /security-rules`. */
/** Security plans applied to the cluster so far in this process, of any VPC. */
export const planApplies = Effect.map(
  Metric.snapshot,
  (pairs) =>
    pairs.filter((pair) =>
      pair.metricKey.name === "tenet_cluster_calls" &&
      pair.metricKey.tags.some((t) => t.key === "operation" && t.value === "applySecurityPlan")
    ).reduce((n, pair) => n + (pair.metricState as MetricState.MetricState.Counter<number>).count, 0)
)

export const httpsIn = (vpc_id: string) => ({
  vpc_id,
  name: "https in",
  direction: "ingress",
  action: "allow",
  priority: 100,
  protocol: "tcp",
  ports: "443",
  remote_type: "cidr",
  remote_cidr: "0.0.0.0/0",
  target_type: "vpc"
})

/** A rule allowing SSH in from an address set to the whole VPC: the body of `POST /security-rules`. */
export const sshFromSet = (vpc_id: string, setId: string, overrides: Record<string, unknown> = {}) => ({
  vpc_id,
  name: "ssh from offices",
  direction: "ingress",
  action: "allow",
  priority: 100,
  protocol: "tcp",
  ports: "22",
  remote_type: "address_set",
  remote_address_set_id: setId,
  ...overrides
})

/** A unique DNS-label name, so tests sharing one server never collide. */
export const uniqueName = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`

export const TENANT_PASSWORD = "correct horse battery"

/** Creates a tenant as admin and logs in as it. */
export const newTenant = (prefix = "t") =>
  Effect.gen(function*() {
    const admin = yield* asAdmin
    const tenant = yield* admin.tenants.create({
      payload: { name: uniqueName(prefix) as never, password: TENANT_PASSWORD, description: null }
    })
    const anonymous = yield* client()
    const session = yield* anonymous.tenantIdentity.login({ payload: { name: tenant.name, password: TENANT_PASSWORD } })
    const api = yield* client({ "x-auth-token": session.api_token })
    return { tenant, session, api }
  })

export interface RawResponse {
  readonly status: number
  readonly body: unknown
  readonly text: string
  readonly contentType: string | undefined
  readonly headers: Readonly<Record<string, string | undefined>>
}

/**
 * Every refusal of bad input lists its problems (`errors`, each with its field), semantic ones
 * too: held on every answer the suite reads on the wire. A 422 whose `detail` is text is a
 * reused idempotency key, not bad input.
 */
const expectProblemsListed = (status: number, body: unknown) => {
  const refusal = body as { readonly detail?: unknown; readonly errors?: unknown } | undefined
  if (status !== 400 && !(status === 422 && typeof refusal?.detail === "object")) return
  expect(refusal?.errors, `a ${status} without errors: ${JSON.stringify(body)}`).toEqual(
    expect.arrayContaining([{ field: expect.any(String), message: expect.any(String) }])
  )
}

/** A request exactly as written, for checking statuses and bodies on the wire. */
export const raw = (
  method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT",
  path: string,
  options: { readonly headers?: Record<string, string>; readonly body?: string | unknown } = {}
) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(options.headers ?? {}))
    if (options.body !== undefined) {
      request = typeof options.body === "string"
        ? HttpClientRequest.bodyText(request, options.body, options.headers?.["content-type"] ?? "application/json")
        : yield* HttpClientRequest.bodyJson(request, options.body)
    }
    const response = yield* http.execute(request)
    // A change stream never ends: what it sends in its first moments is its answer here.
    const text = response.headers["content-type"]?.startsWith("text/event-stream") === true
      ? yield* response.stream.pipe(
        Stream.decodeText(),
        Stream.interruptAfter("300 millis"),
        Stream.runFold("", (all, chunk) => all + chunk)
      )
      : yield* response.text
    let body: unknown = undefined
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    expectProblemsListed(response.status, body)
    return {
      status: response.status,
      body,
      text,
      contentType: response.headers["content-type"],
      headers: response.headers
    } satisfies RawResponse
  }).pipe(Effect.scoped)

/**
 * A JSON POST from another loopback address (`127.0.0.2`, ...): what the server sees as the
 * request's source, for what depends on where a request comes from (login throttling).
 */
export const postFrom = (address: string, path: string, body: unknown) =>
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const port = server.address._tag === "TcpAddress" ? server.address.port : 0
    const text = JSON.stringify(body)
    return yield* Effect.async<
      { status: number; body: any; headers: Record<string, string | Array<string> | undefined> }
    >(
      (resume) => {
        const request = httpRequest(
          {
            host: "127.0.0.1",
            port,
            localAddress: address,
            method: "POST",
            path,
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(text) }
          },
          (response) => {
            let received = ""
            response.on("data", (chunk) => received += chunk)
            response.on("end", () =>
              resume(Effect.succeed({
                status: response.statusCode ?? 0,
                body: received === "" ? undefined : JSON.parse(received),
                headers: response.headers
              })))
          }
        )
        request.on("error", (error) => resume(Effect.die(error)))
        request.end(text)
      }
    )
  })

/**
 * A tenant with one VPC and one subnet in it (`10.0.1.0/24`), and helpers that carry its
 * token in the header and, for creates, in the body.
 */
export const workspace = Effect.gen(function*() {
  const t = yield* newTenant()
  const headers = { "x-auth-token": t.session.api_token }
  const creds = { token: t.session.api_token, tenant_id: t.tenant.id }
  const newVpc = (name = uniqueName("vpc")) =>
    Effect.map(
      raw("POST", "/vpcs", { headers, body: { ...creds, name, enable_internet: true } }),
      (r) => r.body as Record<string, any>
    )
  const vpc = yield* newVpc()
  const subnet = (yield* raw("POST", "/subnets", {
    headers,
    body: { ...creds, vpc_id: vpc.id, name: "apps", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" }
  })).body as Record<string, any>
  const createPod = (overrides: Record<string, unknown> = {}) =>
    raw("POST", "/pods", {
      headers,
      body: {
        ...creds,
        vpc_id: vpc.id,
        subnet_id: subnet.id,
        name: uniqueName("pod"),
        container_image: "nginx:1.27",
        ...overrides
      }
    })
  return { ...t, headers, creds, vpc, subnet, newVpc, createPod }
})
