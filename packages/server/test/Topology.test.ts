import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { NetworkApplier, Pods as PodsUseCase } from "@tenet/core"
import { Effect } from "effect"
import { newTenant, raw, testServer } from "./Harness.js"

type Json = Record<string, any>

const topology = {
  vpcs: [{ name: "prod", enable_internet: true }, { name: "data", enable_internet: false }],
  subnets: [
    { name: "web", vpc_name: "prod", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" },
    { name: "app", vpc_name: "prod", cidr: "10.0.2.0/24", gateway_ip: "10.0.2.1" },
    { name: "db", vpc_name: "data", cidr: "10.1.0.0/24", gateway_ip: "10.1.0.1" }
  ],
  pods: [
    { name: "frontend", vpc_name: "prod", subnet_name: "web", container_image: "nginx:1.27", replica_count: 2 },
    { name: "api", vpc_name: "prod", subnet_name: "app", container_image: "ghcr.io/acme/api:3", auto_scaling: true },
    { name: "postgres", vpc_name: "data", subnet_name: "db", container_image: "postgres:16", service_port: 5432 }
  ]
}

const tenant = Effect.gen(function*() {
  const t = yield* newTenant()
  const headers = { "x-auth-token": t.session.api_token }
  const path = `/tenants/${t.tenant.id}/topology`
  const deploy = (body: Json) => raw("POST", path, { headers, body: { token: t.session.api_token, ...body } })
  const get = Effect.map(raw("GET", path, { headers }), (r) => r.body as Json)
  return { ...t, headers, path, deploy, get }
})

const shape = (view: Json) =>
  view.vpcs.map((v: Json) => ({
    name: v.name,
    subnets: v.subnets.map((s: Json) => ({ name: s.name, pods: s.pods.map((p: Json) => p.name) }))
  }))

layer(testServer(), { excludeTestServices: true })("topology", (it) => {
  it.effect("deploys VPCs, subnets and pods by name and answers the nested topology", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const response = yield* t.deploy(topology)
      expect(response.status).toBe(200)
      const view = response.body as Json
      expect(view.tenant_id).toBe(t.tenant.id)
      expect(shape(view)).toEqual([
        { name: "prod", subnets: [{ name: "web", pods: ["frontend"] }, { name: "app", pods: ["api"] }] },
        { name: "data", subnets: [{ name: "db", pods: ["postgres"] }] }
      ])
      const pods = view.vpcs.flatMap((v: Json) => v.subnets.flatMap((s: Json) => s.pods))
      expect(pods.map((p: Json) => [p.name, p.status.phase, p.replica_count])).toEqual([
        ["frontend", "running", 2],
        ["api", "running", 2],
        ["postgres", "running", 1]
      ])
      expect(pods.find((p: Json) => p.name === "api").auto_healing).toBe(true)
      expect(view.vpcs.every((v: Json) => v.applied)).toBe(true)
      expect(yield* t.get).toEqual(view)
      // Every VPC got its seeded rule.
      const rules = yield* raw("GET", `/security-rules?vpc_id=${view.vpcs[0].id}`, { headers: t.headers })
      expect((rules.body as Json).rules.map((r: Json) => r.name)).toEqual(["Allow internal traffic"])
    }))

  it.effect("posting the same topology again changes nothing", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const first = (yield* t.deploy(topology)).body as Json
      const again = yield* t.deploy(topology)
      expect(again.status).toBe(200)
      expect(shape(again.body as Json)).toEqual(shape(first))
      expect((again.body as Json).vpcs.map((v: Json) => v.id)).toEqual(first.vpcs.map((v: Json) => v.id))
      // And it can grow: one more pod in an existing subnet.
      const grown = yield* t.deploy({
        ...topology,
        pods: [...topology.pods, { name: "worker", vpc_name: "prod", subnet_name: "app", container_image: "busybox:1" }]
      })
      expect(shape(grown.body as Json)[0].subnets[1].pods).toEqual(["api", "worker"])
    }))

  it.effect("any invalid item is 400 naming every problem by its field, and nothing is created", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const response = yield* t.deploy({
        vpcs: [{ name: "prod", enable_internet: true }, { name: "prod", enable_internet: false }],
        subnets: [
          { name: "web", vpc_name: "prod", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" },
          { name: "web2", vpc_name: "prod", cidr: "10.0.1.128/25", gateway_ip: "10.0.1.129" },
          { name: "lost", vpc_name: "nowhere", cidr: "10.9.0.0/24", gateway_ip: "10.9.0.1" },
          { name: "gw", vpc_name: "prod", cidr: "10.0.5.0/24", gateway_ip: "10.0.6.1" }
        ],
        pods: [
          { name: "ok", vpc_name: "prod", subnet_name: "web", container_image: "nginx:1" },
          { name: "orphan", vpc_name: "prod", subnet_name: "missing", container_image: "nginx:1" }
        ]
      })
      expect(response.status).toBe(400)
      const { detail, errors } = response.body as { detail: string; errors: Array<{ field: string; message: string }> }
      expect(errors.map((e) => e.field)).toEqual([
        "vpcs[1].name",
        "subnets[1].cidr",
        "subnets[2].vpc_name",
        "subnets[3].gateway_ip",
        "pods[1].subnet_name"
      ])
      expect(errors[0]!.message).toBe("'prod' is named twice")
      expect(errors[1]!.message).toBe("10.0.1.128/25 overlaps subnet 'web' (10.0.1.0/24)")
      expect(errors[2]!.message).toBe("no VPC named 'nowhere'")
      for (const e of errors) expect(detail).toContain(`${e.field}: ${e.message}`)
      expect((yield* t.get).vpcs).toEqual([])
      expect((yield* raw("GET", "/pods", { headers: t.headers })).body).toEqual([])
    }))

  it.effect("one answer names every problem, the schema's and the deploy's, in the order of the body", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const response = yield* t.deploy({
        vpcs: [{ name: "Prod_", enable_internet: true }, { name: "data", enable_internet: "no", region: "eu" }],
        subnets: [
          { name: "db", vpc_name: "data", cidr: "10.1.0.0/24", gateway_ip: "10.1.0.1" },
          { name: "lost", vpc_name: "nowhere", cidr: "10.9.0.0/24", gateway_ip: "10.9.0.1" },
          { name: "odd", vpc_name: "prod", cidr: "not a block", gateway_ip: "10.0.0.1" }
        ],
        pods: [{ name: "api", vpc_name: "prod", subnet_name: "web", container_image: "api:1" }]
      })
      expect(response.status).toBe(400)
      const { errors } = response.body as { errors: Array<{ field: string; message: string }> }
      expect(errors.map((e) => e.field)).toEqual([
        "vpcs[0].name",
        "vpcs[1].region",
        "vpcs[1].enable_internet",
        // `data` did not decode, so its subnet names no VPC.
        "subnets[0].vpc_name",
        "subnets[1].vpc_name",
        "subnets[2].cidr",
        "pods[0].vpc_name"
      ])
      expect(errors[1]!.message).toMatch(/^unknown field "region"/)
      expect((yield* t.get).vpcs).toEqual([])
      // A body that is no topology at all has only its own problems.
      const notAnObject = yield* raw("POST", t.path, { headers: t.headers, body: [1, 2] })
      expect(notAnObject.status).toBe(400)
      expect((notAnObject.body as Json).errors.length).toBeGreaterThan(0)
    }))

  it.effect("items that exist differently are refused", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      yield* t.deploy(topology)
      const response = yield* t.deploy({
        vpcs: [{ name: "prod", enable_internet: false }],
        subnets: [{ name: "web", vpc_name: "prod", cidr: "10.0.9.0/24", gateway_ip: "10.0.9.1" }],
        pods: [{ name: "frontend", vpc_name: "prod", subnet_name: "web", container_image: "httpd:2" }]
      })
      expect(response.status).toBe(400)
      const detail = (response.body as Json).detail as string
      expect(detail).toContain("exists with enable_internet true")
      expect(detail).toContain("exists with cidr 10.0.1.0/24")
      expect(detail).toContain("exists with image nginx:1.27")
    }))

  it.effect("an orchestrator failure midway loses nothing; the reconciler converges everything", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const cluster = yield* SimulatedCluster.ClusterSwitches
      yield* cluster.failAfter(3, "quota exceeded")
      const response = yield* t.deploy(topology)
      yield* cluster.heal
      expect(response.status).toBe(200)
      const view = response.body as Json
      expect(shape(view)).toHaveLength(2)
      const pods = view.vpcs.flatMap((v: Json) => v.subnets.flatMap((s: Json) => s.pods))
      expect(pods).toHaveLength(3)
      const failures = [
        ...view.vpcs.filter((v: Json) => !v.applied).map((v: Json) => v.apply_error),
        ...pods.filter((p: Json) => p.status.last_error !== null).map((p: Json) => p.status.last_error)
      ]
      expect(failures.length).toBeGreaterThan(0)
      expect(failures.every((e: string) => e.includes("quota exceeded"))).toBe(true)
      yield* Effect.flatMap(NetworkApplier.NetworkApplier, (a) => a.reconcile)
      yield* Effect.flatMap(PodsUseCase.Pods, (p) => p.reconcile)
      const healed = yield* t.get
      expect(healed.vpcs.every((v: Json) => v.applied)).toBe(true)
      const phases = healed.vpcs.flatMap((v: Json) =>
        v.subnets.flatMap((s: Json) => s.pods.map((p: Json) => p.status.phase))
      )
      expect(phases).toEqual(["running", "running", "running"])
    }))

  it.effect("another tenant's topology is 404; the body token must be the caller's", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const b = yield* tenant
      expect((yield* raw("GET", b.path, { headers: a.headers })).status).toBe(404)
      expect(
        (yield* raw("POST", b.path, { headers: a.headers, body: { token: a.session.api_token, ...topology } })).status
      )
        .toBe(404)
      expect(
        (yield* raw("POST", a.path, { headers: a.headers, body: { ...topology, token: b.session.api_token } })).status
      )
        .toBe(401)
      expect((yield* b.get).vpcs).toEqual([])
    }))
})
