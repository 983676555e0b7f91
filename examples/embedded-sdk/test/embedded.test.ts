import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Embedded from "../src/Embedded.js"
import { HostState } from "../src/HostCluster.js"
import { provision } from "../src/provision.js"

it.effect("the use-cases run on the host's cluster driver, with the API's validation and errors", () =>
  Effect.gen(function*() {
    const result = yield* provision("embedded-test")
    const host = yield* HostState
    expect(host.vpcs.get(result.vpc.id)).toMatchObject({ name: "core", enable_internet: false })
    expect(host.pods.get(result.pod.id)?.vip).toBe(result.pod.status.vip)
    expect(host.plans.get(result.vpc.id)?.entries.map((e) => e.action)).toContain("allow")
    expect(result.fromApp.reach).toBe("allowed")
    expect(result.fromElsewhere.reach).toBe("denied")
    const again = yield* Effect.flip(provision("embedded-test"))
    expect(again).toMatchObject({ _tag: "Conflict" })
  }).pipe(Effect.provide(Embedded.layer)))
