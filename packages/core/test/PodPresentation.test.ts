import { describe, expect, it } from "@effect/vitest"
import { Pod, PodPresentation } from "@tenet/core"
import type { Ids, Orchestrator } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { FastCheck as fc, Option } from "effect"

const record = fc.record({
  lifecycle: fc.constantFrom("active" as const, "deleting" as const),
  applied: fc.boolean(),
  apply_error: fc.option(fc.string({ maxLength: 20 }), { nil: null })
}).map((fields) => {
  const vpc = Fixtures.vpc(Fixtures.tenant().id as Ids.TenantId)
  return Fixtures.podRecord(Fixtures.subnet(vpc), fields)
})

const runtime: fc.Arbitrary<Orchestrator.PodRuntime> = fc.record({
  phase: fc.constantFrom(...Pod.PodPhase.literals),
  ready_replicas: fc.nat(10),
  desired_replicas: fc.nat(10),
  vip: fc.constant(null),
  external_ip: fc.constant(null),
  last_error: fc.option(fc.string({ maxLength: 20 }), { nil: null }),
  stale_since: fc.constant(null)
})

describe("PodPresentation", () => {
  it.prop("a pod being deleted reads deleting, whatever the cluster reports of it", [record, runtime], ([r, rt]) => {
    const status = PodPresentation.statusFrom(r, Option.some(rt))
    expect(status.phase).toBe(r.lifecycle === "deleting" ? "deleting" : rt.phase)
    expect(status.ready_replicas).toBe(rt.ready_replicas)
  })

  it.prop("a pod the cluster has no workload for is failed once applied, pending before", [record], ([r]) => {
    const status = PodPresentation.statusFrom(r, Option.none())
    expect([status.phase, status.ready_replicas]).toEqual([r.applied ? "failed" : "pending", 0])
    expect(status.last_error).toBe(r.applied ? "the cluster has no workload for this pod" : r.apply_error)
  })

  it.prop("the view hides what the record keeps to itself, and carries the record's etag", [record], ([r]) => {
    const view = PodPresentation.podOf(r, PodPresentation.statusFrom(r, Option.none()))
    for (const hidden of ["env_ciphertext", "lifecycle", "deleting_since", "applied", "apply_error"]) {
      expect(view).not.toHaveProperty(hidden)
    }
    expect(view.etag).toBe(Pod.etagOf(r))
  })
})
