/**
 * `GET /vpcs/{vpc_id}/explain`: a flow from one endpoint to another, end to end, with each
 * half (the source's egress, the destination's ingress) and what decides it, as `evaluate`
 * answers for one side.
 */
import { Schema } from "effect"
import { intBetween } from "./Common.js"
import { PodId, SubnetId, VpcId } from "./Ids.js"
import { DecidedBy, FlowProtocol, RuleAction, WitnessFlow } from "./SecurityRule.js"

export const ExplainQuery = Schema.Struct({
  from: Schema.String.annotations({
    description: "A pod, subnet or VPC id of yours, `internet`, or an IPv4 address"
  }),
  to: Schema.String.annotations({ description: "As `from`" }),
  protocol: FlowProtocol,
  port: Schema.optional(Schema.NumberFromString.pipe(Schema.compose(intBetween(1, 65535)))).annotations({
    description: "Destination port: required for tcp and udp, none for icmp"
  })
})
export type ExplainQuery = typeof ExplainQuery.Type

/** An end of an explained flow, as it was resolved. */
export const ExplainEndpoint = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("pod"), pod_id: PodId, vpc_id: VpcId, name: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("subnet"), subnet_id: SubnetId, vpc_id: VpcId, name: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("vpc"), vpc_id: VpcId, name: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("internet") }),
  Schema.Struct({
    kind: Schema.Literal("address"),
    ip: Schema.String,
    /** The subnet of yours the address is in; null outside them. */
    subnet_id: Schema.NullOr(SubnetId),
    vpc_id: Schema.NullOr(VpcId)
  })
).annotations({ identifier: "ExplainEndpoint" })
export type ExplainEndpoint = typeof ExplainEndpoint.Type

/**
 * One side's verdict: the worst over every flow of the pair (an endpoint holds several
 * addresses and local endpoints), with a flow it is decided on and what decides it.
 */
export class ExplainedHalf extends Schema.Class<ExplainedHalf>("ExplainedHalf")({
  vpc_id: VpcId,
  allowed: Schema.Boolean,
  action: RuleAction,
  decided_by: DecidedBy,
  flow: WitnessFlow
}) {}

export class FlowExplanation extends Schema.Class<FlowExplanation>("FlowExplanation")({
  vpc_id: VpcId,
  from: ExplainEndpoint,
  to: ExplainEndpoint,
  protocol: FlowProtocol,
  port: Schema.NullOr(Schema.Int),
  /** Every flow of the pair is allowed by both halves. */
  allowed: Schema.Boolean,
  /** Where the flow leaves (null: the source is outside your VPCs). */
  egress: Schema.NullOr(ExplainedHalf),
  /** Where it arrives (null: the destination is outside your VPCs). */
  ingress: Schema.NullOr(ExplainedHalf)
}) {}
