/**
 * What someone else did to an object Tenet owns, read from the cluster's own bookkeeping:
 * server-side apply records, per field manager, the fields it owns (`managedFields`). A write
 * by another manager that changes a field Tenet applied takes that field from Tenet's manager
 * (an update moves ownership; a forced apply does too), so the fields Tenet's manager owned
 * before an event and does not own after it, now owned by another manager, are exactly what
 * was changed behind Tenet's back, and that manager is who changed them. A status write never
 * takes a field Tenet applies; a field Tenet stopped applying itself has no other owner.
 */
import type { LiveObject } from "./KubeApi.js"
import * as Names from "./Names.js"

/** One `managedFields` entry, as the API server writes it. */
export interface ManagedFields {
  readonly manager?: string
  readonly operation?: string
  readonly fieldsType?: string
  readonly fieldsV1?: FieldsV1
}
export interface FieldsV1 {
  readonly [key: string]: FieldsV1
}

/**
 * The leaf fields a `fieldsV1` set names, as dotted paths with its prefixes dropped
 * (`spec.acls`, `metadata.labels.tenet.dev/vpc`, `spec.template.spec.containers{"name":"app"}.image`).
 */
export const leaves = (fields: FieldsV1 | undefined): ReadonlyArray<string> => {
  const out: Array<string> = []
  const walk = (node: FieldsV1, path: string) => {
    const children = Object.keys(node).filter((k) => k !== ".")
    if (children.length === 0) {
      if (path !== "") out.push(path)
      return
    }
    for (const key of children) {
      const step = key.startsWith("f:") ? `.${key.slice(2)}` : key.startsWith("k:") ? key.slice(2) : `[${key}]`
      walk(node[key]!, path === "" ? step.replace(/^\./, "") : path + step)
    }
  }
  if (fields !== undefined) walk(fields, "")
  return out
}

const entriesOf = (object: LiveObject | undefined): ReadonlyArray<ManagedFields> =>
  (object?.metadata?.managedFields ?? []) as ReadonlyArray<ManagedFields>

/** The fields Tenet's field manager owns on the object. */
export const ownedByTenet = (object: LiveObject | undefined): ReadonlyArray<string> =>
  entriesOf(object).filter((e) => e.manager === Names.FIELD_MANAGER).flatMap((e) => leaves(e.fieldsV1))

/** A field's path as a 32-bit FNV-1a hash, base 36. */
const hashOf = (path: string): string => {
  let hash = 0x811c9dc5
  for (let i = 0; i < path.length; i++) hash = Math.imul(hash ^ path.charCodeAt(i), 0x01000193)
  return (hash >>> 0).toString(36)
}

/**
 * The fields Tenet's manager owns on the object, as a drift check keeps them between events:
 * their paths' hashes in one short string, a tenth of the size of the `managedFields` entry
 * (the informers hold one per object: BENCHMARKS.md).
 */
export const fingerprint = (object: LiveObject): string =>
  [...new Set(ownedByTenet(object).map(hashOf))].sort().join(",")

/** What another manager took from Tenet between two versions of an object. */
export interface Taken {
  readonly manager: string
  readonly fields: ReadonlyArray<string>
}

/**
 * The fields Tenet owned before (`fingerprint` of the earlier version) that another manager
 * owns in `after`, grouped by that manager; empty when nothing was taken (a status write,
 * Tenet's own apply, a shared value).
 */
export const taken = (before: string, after: LiveObject): ReadonlyArray<Taken> => {
  if (before === "") return []
  const still = new Set(ownedByTenet(after).map(hashOf))
  const lost = new Set(before.split(",").filter((h) => !still.has(h)))
  if (lost.size === 0) return []
  const byManager = new Map<string, Array<string>>()
  for (const entry of entriesOf(after)) {
    if (entry.manager === Names.FIELD_MANAGER) continue
    const fields = leaves(entry.fieldsV1).filter((f) => lost.has(hashOf(f)))
    const manager = entry.manager ?? "unknown"
    if (fields.length > 0) byManager.set(manager, [...(byManager.get(manager) ?? []), ...fields])
  }
  return [...byManager].map(([manager, fields]) => ({ manager, fields }))
}
