/**
 * The whole API on the Kubernetes orchestrator: the reference server, its real client calls,
 * and the recording API server in place of a cluster, granting only the shipped ClusterRole's
 * rules. What a tenant does through the API becomes Kube-OVN and Kubernetes objects; what the
 * cluster reports comes back in the API.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, layer } from "@effect/vitest"
import { Names, Permissions } from "@tenet/adapters-k8s"
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

describe("the API on Kubernetes", () =>
  layer(onCluster(FakeApiServer.layer()), { excludeTestServices: true })((it) => {
    it.effect("a tenant's network, rules and pod become cluster objects; the pod's VIP is the Service's", () =>
      Effect.gen(function*() {
        const fake = yield* FakeApiServer.Fake
        const { creds, headers } = yield* signUp
        const vpc = yield* call("POST", "/vpcs", headers, { ...creds, name: "prod", enable_internet: true })
        expect(vpc.body).toMatchObject({ applied: true, apply_error: null })
        const subnet = yield* webSubnet(vpc.body.id, creds, headers)
        expect(subnet.status).toBe(200)
        const rule = yield* call("POST", "/security-rules", headers, {
          vpc_id: vpc.body.id,
          name: "https in",
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          ports: "443,8000-8080",
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0",
          target_type: "vpc"
        })
        expect(rule.status).toBe(201)
        const pod = yield* call("POST", "/pods", headers, {
          ...creds,
          vpc_id: vpc.body.id,
          subnet_id: subnet.body.id,
          name: "api",
          container_image: "nginx:1.27",
          replica_count: 2,
          env_vars: { MODE: "prod" }
        })
        expect(pod.status).toBe(200)

        const kubeSubnet = fake.objects.get(`Subnet//${Names.subnet(subnet.body.id)}`)!
        expect(kubeSubnet.spec).toMatchObject({
          vpc: Names.vpc(vpc.body.id),
          cidrBlock: "10.10.0.0/24",
          gateway: "10.10.0.1"
        })
        expect(kubeSubnet.spec.acls).toContainEqual({
          direction: "to-lport",
          priority: 1889,
          match:
            "ip4 && ip4.dst == 10.10.0.0/24 && ip4.src == 0.0.0.0/0 && tcp && (tcp.dst == 443 || (tcp.dst >= 8000 && tcp.dst <= 8080))",
          action: "allow-related"
        })
        expect(fake.objects.get(`OvnSnatRule//${Names.subnetEgress(subnet.body.id)}`)).toBeDefined()
        const service = fake.objects.get(`Service/${Names.namespace(vpc.body.id)}/${Names.workload(pod.body.id)}`)!
        const listed = yield* call("GET", "/pods", headers)
        const shown = (listed.body as unknown as Array<Json>).find((p) => p.id === pod.body.id)
        expect(JSON.stringify(shown)).toContain(`"${service.spec.clusterIP}"`)
        const deployment = fake.objects.get(
          `Deployment/${Names.namespace(vpc.body.id)}/${Names.workload(pod.body.id)}`
        )!
        expect(deployment.spec.replicas).toBe(2)
      }))
  }))

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
            (r) => (r.body as unknown as Array<Json>).find((p) => p.id === pod.body.id)!.status as Json
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

// The ClusterRole without the rule for Kube-OVN subnets: the cluster refuses the apply, as a real one would.
const withoutSubnets = Permissions.rules.map((rule) =>
  rule.apiGroups.includes("kubeovn.io") ? { ...rule, resources: rule.resources.filter((r) => r !== "subnets") } : rule
)

describe("the API on Kubernetes, with one rule less than the shipped ClusterRole", () =>
  layer(onCluster(FakeApiServer.layer({ rules: withoutSubnets })), { excludeTestServices: true })((it) => {
    it.effect("a subnet is saved but not applied, and the VPC says the cluster forbade it", () =>
      Effect.gen(function*() {
        const { creds, headers } = yield* signUp
        const vpc = yield* call("POST", "/vpcs", headers, { ...creds, name: "prod", enable_internet: false })
        const subnet = yield* webSubnet(vpc.body.id, creds, headers)
        expect(subnet.status).toBe(200)
        const vpcs = (yield* call("GET", "/vpcs", headers)).body as unknown as Array<Json>
        expect(vpcs.find((v) => v.id === vpc.body.id)).toMatchObject({
          applied: false,
          apply_error: expect.stringMatching(/403 .* cannot \w+ resource "subnets" in API group "kubeovn.io"/)
        })
      }))
  }))
