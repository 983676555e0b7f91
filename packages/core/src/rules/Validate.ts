/**
 * The cross-field rules of a security rule (spec section 4, rules 2, 3 and 5), as pure
 * functions: what a create or patch must satisfy beyond each field's own schema. Failures
 * name the offending field.
 */
import { Either } from "effect"
import type { AddressSetId, PodId, SubnetId, VpcId } from "../domain/Ids.js"
import type { SecurityRulePatch, SecurityRuleRecord } from "../domain/SecurityRule.js"

export interface FieldError {
  readonly field: string
  readonly message: string
}

/** The fields of a rule that validation looks at. */
export type RuleShape = Pick<
  SecurityRuleRecord,
  | "protocol"
  | "ports"
  | "remote_type"
  | "remote_cidr"
  | "remote_vpc_id"
  | "remote_address_set_id"
  | "target_type"
  | "target_subnet_id"
  | "target_pod_ids"
>

/** What references are checked against: the tenant's VPCs and address sets, this VPC's subnets and pods. */
export interface References {
  readonly vpcs: ReadonlySet<VpcId>
  readonly addressSets: ReadonlySet<AddressSetId>
  readonly subnets: ReadonlySet<SubnetId>
  readonly pods: ReadonlySet<PodId>
}

const fail = (field: string, message: string) => Either.left<FieldError>({ field, message })

/** Each remote type and the field that names its remote: exactly that one is set. */
const REMOTE_FIELDS = [
  ["cidr", "remote_cidr"],
  ["vpc", "remote_vpc_id"],
  ["address_set", "remote_address_set_id"]
] as const satisfies ReadonlyArray<readonly [SecurityRuleRecord["remote_type"], keyof RuleShape]>

export const validate = (rule: RuleShape, refs: References): Either.Either<void, FieldError> => {
  if (rule.ports !== null && rule.protocol !== "tcp" && rule.protocol !== "udp") {
    return fail("ports", `ports are only allowed with protocol tcp or udp, not ${rule.protocol}`)
  }
  for (const [type, field] of REMOTE_FIELDS) {
    if (type === rule.remote_type) {
      if (rule[field] === null) return fail(field, `required when remote_type is ${type}`)
    } else if (rule[field] !== null) {
      return fail(field, `only allowed when remote_type is ${type}`)
    }
  }
  if (rule.remote_type === "vpc" && !refs.vpcs.has(rule.remote_vpc_id!)) {
    return fail("remote_vpc_id", `${rule.remote_vpc_id} is not one of your VPCs`)
  }
  if (rule.remote_type === "address_set" && !refs.addressSets.has(rule.remote_address_set_id!)) {
    return fail("remote_address_set_id", `${rule.remote_address_set_id} is not one of your address sets`)
  }
  if (rule.target_type !== "subnet" && rule.target_subnet_id !== null) {
    return fail("target_subnet_id", "only allowed when target_type is subnet")
  }
  if (rule.target_type !== "pods" && rule.target_pod_ids !== null) {
    return fail("target_pod_ids", "only allowed when target_type is pods")
  }
  if (rule.target_type === "subnet") {
    if (rule.target_subnet_id === null) return fail("target_subnet_id", "required when target_type is subnet")
    if (!refs.subnets.has(rule.target_subnet_id)) {
      return fail("target_subnet_id", `${rule.target_subnet_id} is not a subnet of this VPC`)
    }
  }
  if (rule.target_type === "pods") {
    const ids = rule.target_pod_ids
    if (ids === null || ids.length === 0) {
      return fail("target_pod_ids", "at least one pod is required when target_type is pods")
    }
    if (new Set(ids).size !== ids.length) return fail("target_pod_ids", "lists a pod more than once")
    const foreign = ids.find((id) => !refs.pods.has(id))
    if (foreign !== undefined) return fail("target_pod_ids", `${foreign} is not a pod of this VPC`)
  }
  return Either.void
}

/**
 * Applies a patch to a rule: only the fields present change. When `remote_type` or
 * `target_type` changes, its companion must come in the same patch, and the companions of
 * the previous shape are cleared.
 */
export const applyPatch = <R extends RuleShape>(current: R, patch: SecurityRulePatch): Either.Either<R, FieldError> => {
  const present = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<R>
  let next: R = { ...current, ...present }
  if (patch.remote_type !== undefined && patch.remote_type !== current.remote_type) {
    const companion = REMOTE_FIELDS.find(([type]) => type === patch.remote_type)![1]
    if (patch[companion] === undefined) {
      return fail(companion, `required when remote_type changes to ${patch.remote_type}`)
    }
    for (const [, field] of REMOTE_FIELDS) {
      if (field !== companion) next = { ...next, [field]: patch[field] ?? null }
    }
  }
  if (patch.target_type !== undefined && patch.target_type !== current.target_type) {
    const companion = patch.target_type === "subnet"
      ? "target_subnet_id"
      : patch.target_type === "pods"
      ? "target_pod_ids"
      : null
    if (companion !== null && patch[companion] === undefined) {
      return fail(companion, `required when target_type changes to ${patch.target_type}`)
    }
    next = {
      ...next,
      target_subnet_id: patch.target_type === "subnet" ? next.target_subnet_id : patch.target_subnet_id ?? null,
      target_pod_ids: patch.target_type === "pods" ? next.target_pod_ids : patch.target_pod_ids ?? null
    }
  }
  return Either.right(next)
}
