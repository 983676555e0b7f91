/**
 * A change's events for the change stream (`domain/ChangeEvent.ts`), made from its writes on the
 * state it was decided on: a row inserted is `ADDED`, replaced `MODIFIED`, removed `DELETED`
 * with each row its removal takes along (`Kind.CASCADES`: a VPC's subnets, rules, pods with their
 * tunnels, and guardrails), each with its kind's view (`Kind.view`). A `Touch` writes no row and
 * is no event. Pure: the pipeline commits the events with the change, in its transaction.
 */
import { Schema } from "effect"
import type { EventType, NewEvent } from "../domain/ChangeEvent.js"
import * as Tenant from "../domain/Tenant.js"
import type * as Change from "../kinds/Change.js"
import * as Kind from "../kinds/Kind.js"
import { vpcContextOf } from "../readmodel/Derived.js"
import type { TenantState } from "../readmodel/TenantState.js"

const encodeTenant = Schema.encodeSync(Tenant.Tenant)

/** A row's view as JSON (`Kind.view`), on the state the change was decided on. */
export const objectOf = (row: Change.Row, state: TenantState): unknown =>
  Kind.of(row.part).view(row.record, { vpcContext: (vpc) => vpcContextOf(state, vpc, null) })

/** A tenant's own event (the admin's stream): the tenant as the API shows it. */
export const ofTenant = (type: EventType, record: Tenant.TenantRecord): NewEvent => ({
  tenant_id: record.id,
  type,
  kind: "tenant",
  id: record.id,
  object: encodeTenant(Tenant.toTenant(record))
})

const event = (tenant: string, type: EventType, row: Change.Row, state: TenantState): NewEvent => ({
  tenant_id: tenant,
  type,
  kind: Kind.of(row.part).event,
  id: Kind.keyOf(row),
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
      const record = state.row(write.part, write.key)
      if (record === undefined) continue
      const row = { part: write.part, record } as Change.Row
      for (const gone of [row, ...state.cascadeOf(write.part, write.key)]) {
        const key = `${gone.part}/${Kind.keyOf(gone)}`
        if (removed.has(key)) continue
        removed.add(key)
        events.push(event(tenant, "DELETED", gone, state))
      }
    }
  }
  return events
}
