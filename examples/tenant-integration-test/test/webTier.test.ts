/**
 * Testing the automation against a real Tenet in this process, on the in-memory platform:
 * the same server and client as production, no cluster, no network, fresh per test file.
 * The memory platform's switches inject faults (cluster down, provider down) to test the
 * unhappy paths too.
 */
import { FetchHttpClient, HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { TenetClient } from "@tenet/client"
import { TestServer } from "@tenet/server"
import { Effect } from "effect"
import { provision, scaleTo } from "../src/webTier.js"

/** A tenant of its own on the test server, and a client acting as it. */
const asNewTenant = (name: string) =>
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const baseUrl = `http://127.0.0.1:${server.address._tag === "TcpAddress" ? server.address.port : 0}`
    const admin = yield* TenetClient.loginAdmin({
      baseUrl,
      username: TestServer.ADMIN_USERNAME,
      password: TestServer.ADMIN_PASSWORD
    })
    yield* admin.tenants.create({ payload: { name, password: "integration-password" } })
    // The platform's uplink, through which the internet reaches what is published.
    yield* admin.providerConfig.put({
      payload: {
        external_subnet_cidr: "203.0.113.0/24",
        external_subnet_gateway: "203.0.113.1",
        peering_subnet_cidr: "100.64.0.0/16"
      }
    })
    return yield* TenetClient.loginTenant({ baseUrl, name, password: "integration-password" })
  }).pipe(Effect.provide(FetchHttpClient.layer))

layer(TestServer.layer(), { excludeTestServices: true })("the web tier automation", (it) => {
  it.effect("lets HTTPS in from anywhere and SSH only from the office", () =>
    Effect.gen(function*() {
      const tenet = yield* asNewTenant("web-rules")
      const tier = yield* provision(tenet, "192.0.2.0/24")
      const from = (port: number, remote_ip: string, pod: string) =>
        tenet.securityRules.evaluate({
          payload: { vpc_id: tier.vpcId, direction: "ingress", protocol: "tcp", port, remote_ip, target_pod_id: pod }
        }).pipe(Effect.map((v) => v.reach))
      expect(yield* from(443, "198.51.100.7", tier.podId)).toBe("allowed")
      expect(yield* from(22, "192.0.2.10", tier.bastionId)).toBe("allowed")
      expect(yield* from(22, "198.51.100.7", tier.bastionId)).toBe("denied")
      // Nothing publishes the site's port 22: no packet from the office gets there.
      expect(yield* from(22, "192.0.2.10", tier.podId)).toBe("denied")
      const analysis = yield* tenet.securityRules.analysis({ urlParams: { vpc_id: tier.vpcId } })
      expect(analysis.findings).toEqual([])
    }))

  it.effect("scales the pod and the cluster runs every replica", () =>
    Effect.gen(function*() {
      const tenet = yield* asNewTenant("web-scale")
      const tier = yield* provision(tenet, "192.0.2.0/24")
      expect(yield* scaleTo(tenet, tier, 4)).toBe(4)
      const pod = (yield* tenet.pods.list()).find((p) => p.id === tier.podId)!
      expect(pod.status).toMatchObject({ phase: "running", desired_replicas: 4 })
    }))

  it.effect("when the cluster is down, changes are saved but not applied, and apply with the next change", () =>
    Effect.gen(function*() {
      const cluster = yield* SimulatedCluster.ClusterSwitches
      const tenet = yield* asNewTenant("web-faults")
      yield* cluster.failApplies("the cluster is unreachable")
      const vpc = yield* tenet.vpcs.create({ payload: { name: "web", enable_internet: true } })
      expect(vpc).toMatchObject({ applied: false, apply_error: expect.stringContaining("unreachable") })
      yield* cluster.heal
      const rule = yield* tenet.securityRules.create({
        payload: {
          vpc_id: vpc.id,
          name: "https",
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          ports: "443",
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0"
        }
      })
      expect(rule).toMatchObject({ applied: true, apply_error: null })
      expect((yield* tenet.vpcs.list()).find((v) => v.id === vpc.id)?.applied).toBe(true)
    }))
})
