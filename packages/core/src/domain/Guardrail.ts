/**
 * Guardrails: invariants on verdicts, not on rule text. A guardrail names a region of flows
 * (a direction, a protocol, ports, a remote block and local endpoints) and the verdict every
 * flow in it must get; any change that would leave a flow of it with the other verdict is
 * refused. A VPC's guardrails are its tenant's to set; tenant-wide ones (every VPC of the
 * tenant, now and future) are the administrator's, and the tenant reads them but cannot
 * change them.
 */
import { Schema } from "effect"
import { nullable, oncePerRecord, Timestamp, TRUSTED, wireExample } from "./Common.js"
import * as Etag from "./Etag.js"
import { GuardrailId, PodId, SubnetId, TenantId, VpcId } from "./Ids.js"
import { Ipv4NetworkNormalized } from "./Net.js"
import { Direction, PortsExpression, RuleAction, RuleDescription, RuleName, RuleProtocol } from "./SecurityRule.js"

/** The most guardrails one VPC may have, and one tenant tenant-wide. */
export const MAX_GUARDRAILS = 50

/** The local endpoints a guardrail covers: these pods and these subnets (all of their endpoints). */
export const GuardrailLocal = Schema.Struct({
  pod_ids: Schema.optionalWith(Schema.Array(PodId), { default: () => [] }),
  subnet_ids: Schema.optionalWith(Schema.Array(SubnetId), { default: () => [] })
}).annotations({ identifier: "GuardrailLocal" })

export const GuardrailCreate = Schema.Struct({
  name: RuleName,
  description: nullable(RuleDescription),
  require: RuleAction.annotations({ description: "The verdict every flow of the region must get" }),
  direction: Direction,
  protocol: RuleProtocol,
  ports: nullable(PortsExpression).annotations({ description: "tcp/udp only; null: every port" }),
  remote_cidr: Ipv4NetworkNormalized,
  local: nullable(GuardrailLocal).annotations({
    description: "Pods and subnets of the VPC; null: the whole VPC (always null for tenant-wide guardrails)"
  })
}).annotations({
  identifier: "GuardrailCreate",
  examples: wireExample({
    name: "no ssh from the internet",
    description: null,
    require: "deny",
    direction: "ingress",
    protocol: "tcp",
    ports: "22",
    remote_cidr: "0.0.0.0/0",
    local: null
  })
})
export type GuardrailCreate = typeof GuardrailCreate.Type

/** The pods and subnets a stored guardrail covers. */
export const LocalEndpoints = Schema.Struct({ pod_ids: Schema.Array(PodId), subnet_ids: Schema.Array(SubnetId) })

/** What the store keeps: the guardrail, its tenant, and its VPC (null: every VPC of the tenant). */
export const GuardrailRecord = Schema.Struct({
  id: GuardrailId,
  tenant_id: TenantId,
  vpc_id: Schema.NullOr(VpcId),
  name: RuleName,
  description: Schema.NullOr(RuleDescription),
  require: RuleAction,
  direction: Direction,
  protocol: RuleProtocol,
  ports: Schema.NullOr(PortsExpression),
  remote_cidr: Ipv4NetworkNormalized,
  local: Schema.NullOr(LocalEndpoints),
  created_at: Timestamp
})
export interface GuardrailRecord extends Schema.Schema.Type<typeof GuardrailRecord> {}

export const GuardrailScope = Schema.Literal("vpc", "tenant").annotations({
  identifier: "GuardrailScope",
  description: "vpc: the VPC's own, the tenant's to change; tenant: the administrator's, on every VPC of the tenant"
})

export class Guardrail extends Schema.Class<Guardrail>("Guardrail")({
  ...GuardrailRecord.fields,
  scope: GuardrailScope,
  etag: Etag.Field
}) {}

/** The guardrail's version, for `If-Match` on its delete. */
export const etagOf = oncePerRecord((record: GuardrailRecord): string => Etag.of(record))

export const viewOf = oncePerRecord((record: GuardrailRecord): Guardrail =>
  Guardrail.make({ ...record, scope: record.vpc_id === null ? "tenant" : "vpc", etag: etagOf(record) }, TRUSTED)
)
