/**
 * The API on the Kubernetes orchestrator when the cluster misbehaves in ways a real API server
 * cannot be made to (its watches dropped and refused): the recording API server in its place.
 * Everything else is tested on a real one (`KubernetesReal.test.ts`, `server-on-kubernetes`).
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, layer } from "@effect/vitest"
import { FakeApiServer } from "@tenet/adapters-k8s/testing"
import { TestServer } from "@tenet/server"
import { Effect, Layer } from "effect"

type Json = Record<string, any>

const call = (method: "GET" | "POST", path: string, headers: Record<string, string>, body?: unknown) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    const request = HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(headers))
    const response = yield* http.execute(
      body === undefined ? request : yield* HttpClientRequest.bodyJson(request, body)
    )
    return { status: response.status, body: (yield* response.json) as Json }
  })

/** The admin sets up the provider and a tenant; the tenant's headers and body credentials. */
const signUp = Effect.gen(function*() {
  const admin = yield* call("POST", "/admin/login", {}, {
    username: TestServer.ADMIN_USERNAME,
    password: TestServer.ADMIN_PASSWORD
  })
  const asAdmin = { "x-admin-token": admin.body.api_token }
  expect(
    (yield* call("POST", "/provider-config", asAdmin, {
      external_subnet_cidr: "203.0.113.0/29",
      external_subnet_gateway: "203.0.113.1",
      peering_subnet_cidr: "100.64.0.0/16"
    })).status
  ).toBe(200)
  const tenant = yield* call("POST", "/tenants", asAdmin, { name: "acme", password: "correct horse battery" })
  const login = yield* call("POST", "/tenants/login", {}, { name: "acme", password: "correct horse battery" })
  return {
    headers: { "x-auth-token": login.body.api_token },
    creds: { token: login.body.api_token, tenant_id: tenant.body.id }
  }
})

/** The subnet `web` (10.10.0.0/24) in the VPC. */
const webSubnet = (vpcId: string, creds: Record<string, string>, headers: Record<string, string>) =>
  call("POST", "/subnets", headers, {
    ...creds,
    vpc_id: vpcId,
    name: "web",
    cidr: "10.10.0.0/24",
    gateway_ip: "10.10.0.1"
  })

/** The server on a fake cluster; the test sees the same fake (layers are memoized). */
const onCluster = (cluster: ReturnType<typeof FakeApiServer.layer>) =>
  Layer.merge(TestServer.layer({ orchestrator: cluster }), cluster)

describe("the API on Kubernetes, when the cluster's watches break", () =>
  layer(onCluster(FakeApiServer.layer({ orchestrator: { watchBackoff: "50 millis" } })), { excludeTestServices: true })(
    (it) => {
      it.effect("GET /pods shows the last status seen with stale_since, then current again", () =>
        Effect.gen(function*() {
          const fake = yield* FakeApiServer.Fake
          const { creds, headers } = yield* signUp
          const vpc = yield* call("POST", "/vpcs", headers, { ...creds, name: "prod", enable_internet: false })
          const subnet = yield* webSubnet(vpc.body.id, creds, headers)
          const pod = yield* call("POST", "/pods", headers, {
            ...creds,
            vpc_id: vpc.body.id,
            subnet_id: subnet.body.id,
            name: "api",
            container_image: "nginx:1.27"
          })
          const statusOf = Effect.map(
            call("GET", "/pods", headers),
            (r) => (r.body as Array<Json>).find((p) => p.id === pod.body.id)!.status as Json
          )
          expect(yield* statusOf).toMatchObject({ phase: "running", stale_since: null })
          fake.failNext(9, 503, (method, path) => method === "GET" && !path.includes("/namespaces/"))
          fake.dropWatches()
          const stale = yield* Effect.repeat(statusOf, { until: (s) => s.stale_since !== null })
          expect(stale).toMatchObject({ phase: "running", stale_since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) })
          const current = yield* Effect.repeat(statusOf, { until: (s) => s.stale_since === null })
          expect(current.phase).toBe("running")
        }))
    }
  ))
