import { describe, expect, it } from "@effect/vitest"
import { Drift, Names } from "@tenet/adapters-k8s"
import { FastCheck as fc } from "effect"

/** A fieldsV1 tree naming the given dotted leaves. */
const fieldsOf = (paths: ReadonlyArray<string>): Drift.FieldsV1 => {
  const root: Record<string, any> = {}
  for (const path of paths) {
    let node = root
    for (const step of path.split(".")) node = node[`f:${step}`] ??= {}
  }
  return root
}

const object = (entries: ReadonlyArray<{ manager: string; paths: ReadonlyArray<string> }>) => ({
  metadata: {
    managedFields: entries.map((e) => ({
      manager: e.manager,
      operation: e.manager === Names.FIELD_MANAGER ? "Apply" : "Update",
      fieldsType: "FieldsV1",
      fieldsV1: fieldsOf(e.paths)
    }))
  }
})

const leaf = fc.constantFrom("spec.acls", "spec.replicas", "spec.cidrBlock", "metadata.labels.tenet", "spec.vpc")

describe("Drift", () => {
  it("reads the leaves of a fieldsV1 set as the API server writes it, keyed list items included", () => {
    expect(Drift.leaves({
      "f:metadata": { "f:labels": { ".": {}, "f:tenet.dev/vpc": {} } },
      "f:spec": {
        "f:acls": {},
        "f:template": { "f:spec": { "f:containers": { "k:{\"name\":\"app\"}": { ".": {}, "f:image": {} } } } }
      }
    })).toEqual([
      "metadata.labels.tenet.dev/vpc",
      "spec.acls",
      "spec.template.spec.containers{\"name\":\"app\"}.image"
    ])
  })

  it.prop(
    "what another manager took from Tenet is exactly what Tenet owned before and that manager owns after",
    [fc.uniqueArray(leaf, { minLength: 1 }), fc.uniqueArray(leaf)],
    ([ours, theirs]) => {
      const before = Drift.fingerprint(object([{ manager: Names.FIELD_MANAGER, paths: ours }]) as never)
      const after = object([
        { manager: Names.FIELD_MANAGER, paths: ours.filter((p) => !theirs.includes(p)) },
        { manager: "kubectl-edit", paths: theirs }
      ])
      const taken = Drift.taken(before, after as never).map((t) => ({ ...t, fields: [...t.fields].sort() }))
      const expected = ours.filter((p) => theirs.includes(p)).sort()
      expect(taken).toEqual(expected.length === 0 ? [] : [{ manager: "kubectl-edit", fields: expected }])
    }
  )

  it.prop(
    "a field Tenet stopped applying, or another manager's status, is not drift",
    [fc.uniqueArray(leaf, { minLength: 1 })],
    ([ours]) => {
      const before = Drift.fingerprint(object([{ manager: Names.FIELD_MANAGER, paths: ours }]) as never)
      const after = object([
        { manager: Names.FIELD_MANAGER, paths: ours.slice(1) },
        { manager: "kube-controller-manager", paths: ["status.readyReplicas"] }
      ])
      expect(Drift.taken(before, after as never)).toEqual([])
    }
  )
})
