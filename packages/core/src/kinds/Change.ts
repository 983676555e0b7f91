/**
 * A change to what a tenant owns, as a value: the rows it writes, the VPCs whose contents it
 * was decided on (at the versions the deciding state held), the audit entry and the
 * idempotency key that commit with it. Use cases build changes from pure per-resource
 * strategies; `Pipeline` commits them (one transaction on every store) and hands the
 * committed change to the read model, which makes its next state from it.
 *
 * A VPC's version counts the commits that changed its contents (subnets, rules, pods,
 * tunnels). A decision that read a VPC's contents names it in `decidedOn`: the store commits
 * only while the VPC is still at that version (holding it against other writers until the
 * commit ends), so a limit counted, an order read or a rule patched on the request's state
 * holds exactly, across server processes, without reading the rows again.
 */
import type { VpcId } from "../domain/Ids.js"
import * as Kind from "./Kind.js"

export type Row = Kind.Row
export type Part = Kind.Part

/**
 * One row written: inserted (a unique rule may refuse it), replaced, or removed with what it
 * cascades to; or a VPC's version stepped without a row of it written (`Touch`: a change to
 * what holds in the VPC from outside its contents, a tenant-wide guardrail, so that decisions
 * made on the VPC before it are stale).
 */
export type Write =
  | Row & { readonly _tag: "Insert" }
  | Row & { readonly _tag: "Update" }
  | {
    readonly _tag: "Remove"
    readonly part: Part
    readonly key: string
    /** The VPC of a row of its contents (a subnet, rule, pod or tunnel). */
    readonly vpc_id?: VpcId
  }
  | { readonly _tag: "Touch"; readonly vpc_id: VpcId }

export const insert = (row: Row): Write => ({ _tag: "Insert", ...row }) as Write
export const update = (row: Row): Write => ({ _tag: "Update", ...row }) as Write
export const touch = (vpcId: VpcId): Write => ({ _tag: "Touch", vpc_id: vpcId })
export const remove = (part: Part, key: string, vpcId?: VpcId): Write =>
  vpcId === undefined ? { _tag: "Remove", part, key } : { _tag: "Remove", part, key, vpc_id: vpcId }

/** The key of a row within its tenant: a registry credential's name, every other row's id. */
export const keyOf = Kind.keyOf

/** Whether `writes` add something a tenant's quotas count (`Quota`; `Kind.counted`): a VPC, a subnet, a pod. */
export const addsCounted = (writes: ReadonlyArray<Write>, registry: Kind.Registry = Kind.KINDS): boolean =>
  writes.some((w) => w._tag === "Insert" && registry[w.part]!.counted)

/**
 * Whether `writes` change the tenant's scope: add or remove a VPC, add a subnet or a pod (the
 * tenant's counts its quotas hold: creates in different VPCs are decided one after another),
 * write a tenant-wide guardrail (a removal of a guardrail names no VPC only when it is
 * tenant-wide) or an address set (one list for every VPC of the tenant: writes of it are
 * decided one after another).
 */
export const movesScope = (writes: ReadonlyArray<Write>, registry: Kind.Registry = Kind.KINDS): boolean =>
  addsCounted(writes, registry) || writes.some((w) => w._tag !== "Touch" && registry[w.part]!.movesScope(w))

/**
 * The VPCs whose contents `writes` change and that existed before them (a VPC the change
 * itself inserts starts at version 0, whatever else the change writes into it or touches: a
 * batch's later request may touch a VPC an earlier one made): each store steps their versions
 * in the commit, and the read model in the state it makes.
 */
export const touchedVpcs = (writes: ReadonlyArray<Write>, registry: Kind.Registry = Kind.KINDS): ReadonlySet<VpcId> => {
  const inserted = new Set<string>()
  for (const write of writes) {
    if (write._tag === "Insert" && registry[write.part]!.versioned) {
      inserted.add(Kind.keyIn(registry[write.part]!, write.record))
    }
  }
  const vpcs = new Set<VpcId>()
  for (const write of writes) {
    // A tenant-wide guardrail (no VPC) is in no VPC's contents.
    const vpc = write._tag === "Touch"
      ? write.vpc_id
      : !registry[write.part]!.contents
      ? undefined
      : write._tag === "Remove"
      ? write.vpc_id
      : (write.record as { readonly vpc_id: VpcId | null }).vpc_id
    if (vpc !== undefined && vpc !== null && !inserted.has(vpc)) vpcs.add(vpc)
  }
  return vpcs
}
