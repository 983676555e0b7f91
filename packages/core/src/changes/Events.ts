/**
 * A change's events for the change stream (`domain/ChangeEvent.ts`), made from its writes on the
 * state it was decided on: a row inserted is `ADDED`, replaced `MODIFIED`, removed `DELETED`
 * with each row its removal takes along (`Change.CASCADES`: a VPC's subnets, rules, pods, tunnels
 * and guardrails; a pod's tunnels), each with the view the API shows. A `Touch` writes no row and
 * is no event. Pure: the pipeline commits the events with the change, in its transaction.
 */
import { Schema, Struct } from "effect"
import type { EventKind, EventType, NewEvent } from "../domain/ChangeEvent.js"
import { DomainRecord } from "../domain/Domain.js"
import * as Guardrail from "../domain/Guardrail.js"
import * as Pod from "../domain/Pod.js"
import * as RegistryCredential from "../domain/RegistryCredential.js"
import * as SecurityRule from "../domain/SecurityRule.js"
import * as Subnet from "../domain/Subnet.js"
import * as Tenant from "../domain/Tenant.js"
import * as Tunnel from "../domain/Tunnel.js"
import * as Vpc from "../domain/Vpc.js"
import { vpcContextOf } from "../readmodel/Derived.js"
import type { TenantState } from "../readmodel/TenantState.js"
import * as RuleSet from "../rules/RuleSet.js"
import * as Change from "./Change.js"

const KIND: { readonly [P in Change.Part]: EventKind } = {
  vpcs: "vpc",
  subnets: "subnet",
  rules: "security_rule",
  pods: "pod",
  tunnels: "tunnel",
  credentials: "registry_credential",
  domains: "domain",
  guardrails: "guardrail"
}

/** A pod as the API shows it but for its status, which is the cluster's, not the store's. */
const PodFields = Schema.Struct(Struct.omit(Pod.PodRecord.fields, ...Pod.HIDDEN_FIELDS))

const encodeVpc = Schema.encodeSync(Vpc.Vpc)
const encodeSubnet = Schema.encodeSync(Subnet.Subnet)
const encodeRule = Schema.encodeSync(SecurityRule.SecurityRule)
const encodePod = Schema.encodeSync(PodFields)
const encodeTunnel = Schema.encodeSync(Tunnel.Tunnel)
const encodeCredential = Schema.encodeSync(RegistryCredential.RegistryCredential)
const encodeDomain = Schema.encodeSync(DomainRecord)
const encodeGuardrail = Schema.encodeSync(Guardrail.Guardrail)
const encodeTenant = Schema.encodeSync(Tenant.Tenant)

/** A row's view as JSON; a rule's status as the deciding state's context has it. */
export const objectOf = (row: Change.Row, state: TenantState): unknown => {
  switch (row.part) {
    case "vpcs":
      return encodeVpc(Vpc.toVpc(row.record))
    case "subnets":
      return encodeSubnet(Subnet.toSubnet(row.record))
    case "rules": {
      const context = vpcContextOf(state, row.record.vpc_id, null)
      return encodeRule(
        SecurityRule.viewOf(row.record, RuleSet.statusOf(RuleSet.fromRecord(row.record), context))
      )
    }
    case "pods":
      return encodePod(Struct.omit(row.record, ...Pod.HIDDEN_FIELDS))
    case "tunnels":
      return encodeTunnel(Tunnel.toTunnel(row.record))
    case "credentials":
      return encodeCredential(RegistryCredential.toRegistryCredential(row.record))
    case "domains":
      return encodeDomain(row.record)
    case "guardrails":
      return encodeGuardrail(Guardrail.viewOf(row.record))
  }
}

/** A tenant's own event (the admin's stream): the tenant as the API shows it. */
export const ofTenant = (type: EventType, record: Tenant.TenantRecord): NewEvent => ({
  tenant_id: record.id,
  type,
  kind: "tenant",
  id: record.id,
  object: encodeTenant(Tenant.toTenant(record))
})

/** The row `part`/`key` as `state` holds it. */
const rowOf = (state: TenantState, part: Change.Part, key: string): Change.Row | undefined => {
  const record = part === "vpcs"
    ? state.vpc(key)
    : part === "subnets"
    ? state.subnet(key)
    : part === "rules"
    ? state.rule(key)
    : part === "pods"
    ? state.pod(key)
    : part === "tunnels"
    ? state.tunnel(key)
    : part === "credentials"
    ? state.credential(key)
    : part === "guardrails"
    ? state.guardrail(key)
    : state.domains.find((d) => d.id === key)
  return record === undefined ? undefined : ({ part, record } as Change.Row)
}

/** The rows removing `row` takes along, as `Change.CASCADES` defines them. */
const cascadeOf = (state: TenantState, row: Change.Row): ReadonlyArray<Change.Row> => {
  if (row.part === "vpcs") {
    const vpc = row.record.id
    return [
      ...state.subnetsOf(vpc).map((record) => ({ part: "subnets", record }) as const),
      ...state.rulesOf(vpc).map((record) => ({ part: "rules", record }) as const),
      ...state.podsOf(vpc).flatMap((pod) => [
        { part: "pods", record: pod } as const,
        ...state.tunnelsOf(pod.id).map((record) => ({ part: "tunnels", record }) as const)
      ]),
      ...state.guardrailsOf(vpc).map((record) => ({ part: "guardrails", record }) as const)
    ]
  }
  if (row.part === "pods") return state.tunnelsOf(row.record.id).map((record) => ({ part: "tunnels", record }))
  return []
}

const event = (tenant: string, type: EventType, row: Change.Row, state: TenantState): NewEvent => ({
  tenant_id: tenant,
  type,
  kind: KIND[row.part],
  id: Change.keyOf(row),
  object: objectOf(row, state)
})

/** The events of `writes` decided on `state`, in the writes' order (a removal's cascade after it). */
export const of = (tenant: string, writes: ReadonlyArray<Change.Write>, state: TenantState): Array<NewEvent> => {
  const events: Array<NewEvent> = []
  const removed = new Set<string>()
  for (const write of writes) {
    if (write._tag === "Touch") continue
    if (write._tag === "Insert") events.push(event(tenant, "ADDED", write, state))
    else if (write._tag === "Update") events.push(event(tenant, "MODIFIED", write, state))
    else {
      const row = rowOf(state, write.part, write.key)
      if (row === undefined) continue
      for (const gone of [row, ...cascadeOf(state, row)]) {
        const key = `${gone.part}/${Change.keyOf(gone)}`
        if (removed.has(key)) continue
        removed.add(key)
        events.push(event(tenant, "DELETED", gone, state))
      }
    }
  }
  return events
}
