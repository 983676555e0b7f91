/**
 * What only a recording API server shows: the shape of every request Tenet sends, and a failure
 * injected on purpose. Everything a real API server can show is in `KubeOrchestratorReal.test.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Names } from "@tenet/adapters-k8s"
import { Orchestrator } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { Effect } from "effect"
import * as FakeApiServer from "./FakeApiServer.js"

describe("KubeOrchestrator, on the recording API server", () => {
  const withNetwork = Effect.gen(function*() {
    const cluster = yield* Orchestrator.Orchestrator
    const fake = yield* FakeApiServer.Fake
    const network = Fixtures.network()
    yield* cluster.applyVpc(network.vpc)
    yield* cluster.applySubnet(network.subnet)
    return { cluster, fake, ...network }
  })

  it.effect("every write is a server-side apply under Tenet's field manager", () =>
    Effect.gen(function*() {
      const { cluster, fake, subnet, vpc } = yield* withNetwork
      yield* cluster.applySecurityPlan(Fixtures.emptyPlan({ subnet, vpc }))
      yield* cluster.applyPod(Fixtures.pod(subnet, { persistent_mount_path: "/data", external_access: true }))
      const writes = fake.requests.filter((r) => r.method !== "GET" && r.method !== "DELETE")
      expect(writes.length).toBeGreaterThan(5)
      for (const write of writes) {
        expect(write).toMatchObject({
          method: "PATCH",
          contentType: "application/apply-patch+yaml",
          query: { fieldManager: Names.FIELD_MANAGER, force: "true" }
        })
      }
    }).pipe(Effect.provide(FakeApiServer.layer())))

  it.effect("a refused apply is an OrchestratorError with the API server's message", () =>
    Effect.gen(function*() {
      const { cluster, fake, subnet } = yield* withNetwork
      fake.failNext(1, 503, (method) => method === "PATCH")
      const error = yield* Effect.flip(cluster.applyPod(Fixtures.pod(subnet)))
      expect(error).toBeInstanceOf(Orchestrator.OrchestratorError)
      expect(error.message).toContain("503")
      expect(error.message).toContain("injected failure")
    }).pipe(Effect.provide(FakeApiServer.layer())))
})
