import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { Net, Pods as PodsUseCase } from "@tenet/core"
import { Effect, Fiber, Schedule } from "effect"
import { raw, setProviderConfig, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

const setup = Effect.gen(function*() {
  const w = yield* workspace
  const { createPod, headers } = w
  const pod = (overrides: Json = {}) => Effect.map(createPod(overrides), (r) => r.body as Json)
  const list = Effect.map(raw("GET", "/pods", { headers }), (r) => r.body as Array<Json>)
  const patch = (id: string, body: Json) => raw("PATCH", `/pods/${id}/config`, { headers, body })
  return { ...w, pod, list, patch }
})

layer(testServer(), { excludeTestServices: true })("pods", (it) => {
  it.effect("create applies every default of the spec and reports a running status with a VIP", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const created = yield* s.createPod({ name: "web" })
      expect(created.status).toBe(200)
      const pod = created.body as Json
      expect(pod).toMatchObject({
        tenant_id: s.tenant.id,
        vpc_id: s.vpc.id,
        subnet_id: s.subnet.id,
        name: "web",
        container_image: "nginx:1.27",
        replica_count: 1,
        service_port: 80,
        use_registry_credentials: true,
        external_access: false,
        external_inbound: false,
        auto_healing: false,
        auto_scaling: false,
        autoscale_min_replicas: 2,
        autoscale_max_replicas: 10,
        autoscale_cpu_target_millicores: 200,
        persistent: false,
        persistent_mount_path: "/storage",
        gpu_count: 0,
        env_var_names: []
      })
      expect(pod.status).toMatchObject({
        phase: "running",
        ready_replicas: 1,
        desired_replicas: 1,
        external_ip: null,
        last_error: null
      })
      expect(Net.contains(Net.cidrOf("10.96.0.0/12"), Net.ipv4Of(pod.status.vip))).toBe(true)
      expect((yield* s.list).map((p) => p.id)).toEqual([pod.id])
    }))

  it.effect("names are unique per VPC; the subnet must be the caller's and in the VPC", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const other = yield* setup
      expect((yield* s.createPod({ name: "api" })).status).toBe(200)
      expect((yield* s.createPod({ name: "api" })).status).toBe(409)
      const second = yield* s.newVpc()
      expect((yield* s.createPod({ name: "api", vpc_id: second.id })).status).toBe(400)
      expect((yield* s.createPod({ subnet_id: other.subnet.id })).status).toBe(404)
      expect((yield* s.createPod({ vpc_id: other.vpc.id })).status).toBe(404)
      expect(yield* other.list).toEqual([])
    }))

  it.effect("bounds and couplings on create are 400 and create nothing", () =>
    Effect.gen(function*() {
      const s = yield* setup
      for (
        const overrides of [
          { replica_count: 0 },
          { replica_count: 11 },
          { service_port: 0 },
          { external_inbound: true },
          { autoscale_cpu_target_millicores: 5 },
          { autoscale_max_replicas: 51 },
          { env_vars: { A: 1 } },
          { env_vars: { "1BAD": "x" } },
          { container_image: "Not An Image" },
          { name: "Web" },
          { gpu_count: -1 },
          { auto_scaling: true, replica_count: 5, autoscale_max_replicas: 3 }
        ]
      ) {
        const response = yield* s.createPod(overrides)
        expect(response.status, JSON.stringify(overrides)).toBe(400)
      }
      expect(yield* s.list).toEqual([])
    }))

  it.effect("auto_scaling starts at least 2 replicas and implies auto_healing", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const pod = yield* s.pod({ auto_scaling: true, replica_count: 1, autoscale_max_replicas: 4 })
      expect(pod).toMatchObject({ auto_scaling: true, auto_healing: true, replica_count: 2 })
      expect(pod.status.desired_replicas).toBe(2)
    }))

  it.effect("external_inbound needs external_access and the provider's external subnet; the address survives a recreate", () =>
    Effect.gen(function*() {
      const s = yield* setup
      expect((yield* s.createPod({ external_access: true, external_inbound: true })).status).toBe(409)
      yield* setProviderConfig()
      const pod = yield* s.pod({ external_access: true, external_inbound: true })
      const ip = Net.ipv4Of(pod.status.external_ip)
      expect(Net.contains(Net.cidrOf("203.0.113.0/24"), ip)).toBe(true)
      expect(pod.status.external_ip).not.toBe("203.0.113.1")
      const patched = (yield* s.patch(pod.id, { env_vars: { MODE: "blue" } })).body as Json
      expect(patched.status.external_ip).toBe(pod.status.external_ip)
      expect(patched.status.vip).toBe(pod.status.vip)
    }))

  it.effect("env_vars values are never returned and reach the cluster; PATCH replaces them whole", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const created = yield* s.createPod({ env_vars: { DB_PASSWORD: "hunter2-secret", MODE: "green" } })
      expect(created.text).not.toContain("hunter2-secret")
      const pod = created.body as Json
      expect(pod.env_var_names).toEqual(["DB_PASSWORD", "MODE"])
      const env = () =>
        Effect.map(
          Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot),
          (snap) => snap.pods.find((p) => p.spec.pod_id === pod.id)!.spec.env
        )
      expect(yield* env()).toEqual({ DB_PASSWORD: "hunter2-secret", MODE: "green" })
      const replaced = yield* s.patch(pod.id, { env_vars: { MODE: "blue" } })
      expect((replaced.body as Json).env_var_names).toEqual(["MODE"])
      expect(yield* env()).toEqual({ MODE: "blue" })
      expect(((yield* s.patch(pod.id, { env_vars: {} })).body as Json).env_var_names).toEqual([])
      expect(yield* env()).toEqual({})
      expect((yield* raw("GET", "/pods", { headers: s.headers })).text).not.toContain("hunter2-secret")
    }))

  it.effect("replicas go up to 10 and down to 1, and are refused while autoscaling", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const pod = yield* s.pod({ replica_count: 9 })
      const up = yield* raw("POST", `/pods/${pod.id}/replicas`, { headers: s.headers })
      expect(up.status).toBe(200)
      expect((up.body as Json).replica_count).toBe(10)
      expect((yield* raw("POST", `/pods/${pod.id}/replicas`, { headers: s.headers })).status).toBe(409)
      const small = yield* s.pod({ replica_count: 2 })
      const down = yield* raw("DELETE", `/pods/${small.id}/replicas`, { headers: s.headers })
      expect((down.body as Json).replica_count).toBe(1)
      expect((down.body as Json).status.desired_replicas).toBe(1)
      expect((yield* raw("DELETE", `/pods/${small.id}/replicas`, { headers: s.headers })).status).toBe(409)
      const scaled = yield* s.pod({ auto_scaling: true })
      expect((yield* raw("POST", `/pods/${scaled.id}/replicas`, { headers: s.headers })).status).toBe(409)
      expect((yield* raw("DELETE", `/pods/${scaled.id}/replicas`, { headers: s.headers })).status).toBe(409)
    }))

  it.effect("restart answers 200 and restarts the workload", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const pod = yield* s.pod()
      const response = yield* raw("POST", `/pods/${pod.id}/restart`, { headers: s.headers })
      expect(response.status).toBe(200)
      expect(response.body).toEqual({ pod_id: pod.id, detail: "restart initiated" })
      const snap = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)
      expect(snap.pods.find((p) => p.spec.pod_id === pod.id)!.restarts).toBe(1)
    }))

  it.effect("config PATCH: auto_scaling forces auto_healing on; auto_healing off turns auto_scaling off; bounds hold", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const pod = yield* s.pod()
      const scaled =
        (yield* s.patch(pod.id, { auto_scaling: true, autoscale_min_replicas: 3, autoscale_max_replicas: 6 }))
          .body as Json
      expect(scaled).toMatchObject({
        auto_scaling: true,
        auto_healing: true,
        autoscale_min_replicas: 3,
        replica_count: 3
      })
      const healed = (yield* s.patch(pod.id, { auto_healing: false })).body as Json
      expect(healed).toMatchObject({ auto_healing: false, auto_scaling: false })
      const persistent = (yield* s.patch(pod.id, { persistent: true, persistent_mount_path: "/data" })).body as Json
      expect(persistent).toMatchObject({ persistent: true, persistent_mount_path: "/data" })
      for (
        const body of [
          { autoscale_min_replicas: 1 },
          { autoscale_max_replicas: 51 },
          { autoscale_cpu_target_millicores: 9 },
          { autoscale_cpu_target_millicores: 10001 },
          { autoscale_min_replicas: 8, autoscale_max_replicas: 4 },
          { auto_scaling: true, auto_healing: false },
          { persistent_mount_path: "relative" },
          { gpu_count: 1 },
          { replica_count: 3 }
        ]
      ) {
        expect((yield* s.patch(pod.id, body)).status, JSON.stringify(body)).toBe(400)
      }
      const snap = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)
      expect(snap.pods.find((p) => p.spec.pod_id === pod.id)!.spec.persistent_mount_path).toBe("/data")
    }))

  it.effect("listed pods show the cluster's status as of each request, also when only the status changed", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const pod = yield* s.pod()
      const phase = Effect.map(s.list, (pods) => pods.find((p) => p.id === pod.id)!.status.phase)
      expect(yield* phase).toBe("running")
      yield* cluster.stopPod(pod.id)
      expect(yield* phase).toBe("stopped")
      yield* raw("POST", `/pods/${pod.id}/restart`, { headers: s.headers })
      expect(yield* phase).toBe("running")
    }))

  it.effect("config PATCH is 409 while the pod is stopped or being deleted", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const stopped = yield* s.pod()
      yield* cluster.stopPod(stopped.id)
      expect(((yield* s.list).find((p) => p.id === stopped.id)!).status.phase).toBe("stopped")
      expect((yield* s.patch(stopped.id, { auto_healing: true })).status).toBe(409)
      yield* raw("POST", `/pods/${stopped.id}/restart`, { headers: s.headers })
      expect((yield* s.patch(stopped.id, { auto_healing: true })).status).toBe(200)

      const doomed = yield* s.pod()
      // The cluster takes 3 s to delete: the PATCH is sent once the list shows the pod deleting.
      yield* cluster.setDeleteDelay("3 seconds")
      const deleting = yield* Effect.fork(raw("DELETE", `/pods/${doomed.id}`, { headers: s.headers }))
      const phase = Effect.map(s.list, (pods) => pods.find((p) => p.id === doomed.id)?.status.phase)
      yield* phase.pipe(Effect.repeat({ until: (p) => p === "deleting", schedule: Schedule.spaced("20 millis") }))
      const during = yield* s.patch(doomed.id, { auto_healing: true })
      expect((yield* Fiber.join(deleting)).status).toBe(204)
      yield* cluster.heal
      expect(during.status).toBe(409)
      expect((during.body as Json).detail).toContain("being deleted")
    }))

  it.effect("delete answers 204 and removes the pod from the cluster; another tenant's pod is 404", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const other = yield* setup
      const pod = yield* s.pod()
      expect((yield* raw("DELETE", `/pods/${pod.id}`, { headers: other.headers })).status).toBe(404)
      expect((yield* raw("POST", `/pods/${pod.id}/restart`, { headers: other.headers })).status).toBe(404)
      expect((yield* other.patch(pod.id, { auto_healing: true })).status).toBe(404)
      expect((yield* raw("DELETE", `/pods/${pod.id}`, { headers: s.headers })).status).toBe(204)
      expect(yield* s.list).toEqual([])
      const snap = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)
      expect(snap.pods.some((p) => p.spec.pod_id === pod.id)).toBe(false)
      expect((yield* raw("DELETE", `/pods/${pod.id}`, { headers: s.headers })).status).toBe(404)
    }))

  it.effect("a failed apply is saved and shown in the status; the reconciler converges it", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const cluster = yield* SimulatedCluster.ClusterSwitches
      yield* cluster.failApplies("image registry unreachable")
      const pod = yield* s.pod()
      yield* cluster.heal
      expect(pod.status).toMatchObject({ phase: "pending", last_error: "applyPod: image registry unreachable" })
      const pods = yield* PodsUseCase.Pods
      expect(yield* pods.reconcile).toBeGreaterThanOrEqual(1)
      const now = (yield* s.list).find((p) => p.id === pod.id)!
      expect(now.status).toMatchObject({ phase: "running", last_error: null })
    }))

  it.effect("rules can target pods; deleting the pod turns the rule target_missing and takes it out of the plan", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const pod = yield* s.pod()
      const created = yield* raw("POST", "/security-rules", {
        headers: s.headers,
        body: {
          vpc_id: s.vpc.id,
          name: "web to pod",
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          ports: "80",
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0",
          target_type: "pods",
          target_pod_ids: [pod.id]
        }
      })
      expect(created.status).toBe(201)
      const rule = (created.body as Json).rule
      expect(rule.status).toBe("active")
      const verdict = yield* raw("POST", "/security-rules/evaluate", {
        headers: s.headers,
        body: {
          vpc_id: s.vpc.id,
          direction: "ingress",
          protocol: "tcp",
          port: 80,
          remote_ip: "10.0.1.50",
          target_pod_id: pod.id
        }
      })
      expect(verdict.body).toMatchObject({
        reach: "allowed",
        allowed_flow: { flow: { local: { pod_id: pod.id } }, decided_by: { kind: "rule", rule_id: rule.id } }
      })
      yield* raw("DELETE", `/pods/${pod.id}`, { headers: s.headers })
      const after = (yield* raw("GET", `/security-rules/${rule.id}`, { headers: s.headers })).body as Json
      expect(after.status).toBe("target_missing")
      const plan = (yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)).plans.find((p) =>
        p.vpc_id === s.vpc.id
      )!
      expect(plan.entries.map((e) => e.rule_id)).not.toContain(rule.id)
    }))

  it.effect("deleting a VPC removes its pods", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const pod = yield* s.pod()
      expect((yield* raw("DELETE", `/vpcs/${s.vpc.id}`, { headers: s.headers })).status).toBe(204)
      expect(yield* s.list).toEqual([])
      const snap = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)
      expect(snap.pods.some((p) => p.spec.pod_id === pod.id)).toBe(false)
    }))
})
