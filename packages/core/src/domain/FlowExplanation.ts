/**
 * `GET /vpcs/{vpc_id}/explain`: the flows from one endpoint to another on one port, end to
 * end and each half (the source's egress, the destination's ingress) alone, as every answer
 * about traffic states it (`FlowReach`).
 */
import { Schema } from "effect"
import { intBetween } from "./Common.js"
import { PathBlock, PathFlow, Reach } from "./FlowReach.js"
import { PodId, SubnetId, VpcId } from "./Ids.js"
import { FlowProtocol } from "./SecurityRule.js"

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
 * One half of the flows, judged alone: where they leave (egress, the source's VPC) or arrive
 * (ingress, the destination's), with a flow it lets through and one it stops.
 */
export class ExplainedHalf extends Schema.Class<ExplainedHalf>("ExplainedHalf")({
  /** Whose rules judge this half; null: that end is outside your VPCs, and no rule of yours judges it. */
  vpc_id: Schema.NullOr(VpcId),
  reach: Reach,
  allowed_flow: Schema.NullOr(PathFlow),
  denied_flow: Schema.NullOr(PathFlow)
}) {}

/**
 * The path alone over the same flows: whether a route carries them (within a VPC, a peering,
 * the internet both ways, the core network), and what stops those it does not.
 */
export class ExplainedRoute extends Schema.Class<ExplainedRoute>("ExplainedRoute")({
  reach: Reach,
  /** What stops a flow on its path; null when a route carries every flow. */
  blocked_by: Schema.NullOr(PathBlock)
}) {}

export class FlowExplanation extends Schema.Class<FlowExplanation>("FlowExplanation")({
  vpc_id: VpcId,
  from: ExplainEndpoint,
  to: ExplainEndpoint,
  protocol: FlowProtocol,
  port: Schema.NullOr(Schema.Int),
  /** Over every flow from `from` to `to` on the port, end to end. */
  reach: Reach,
  /** A flow a route carries and both halves let through (null when denied). */
  allowed_flow: Schema.NullOr(PathFlow),
  /** A flow its path or a half stops (null when allowed), with what stops it. */
  denied_flow: Schema.NullOr(PathFlow),
  egress: ExplainedHalf,
  ingress: ExplainedHalf,
  route: ExplainedRoute,
  /** Why there is no flow at all, when there is none (an end without addresses). */
  note: Schema.NullOr(Schema.String)
}) {}
