/**
 * How many of the flows between two ends get through, as every answer about traffic states it
 * (`GET /vpcs/{id}/reachability`, `GET /vpcs/{id}/explain`, `POST /security-rules/evaluate`):
 * `allowed` (every flow), `partial` (some flows, not all) or `denied` (none, or no flow at all),
 * with a concrete flow for each side of it. An end that stands for many addresses (a subnet,
 * a VPC, the internet) is judged over all of them, so two questions about the same flows get
 * the same answer. See `rules/Reach.ts`.
 */
import { Schema } from "effect"
import { PodId, SubnetId, VpcId } from "./Ids.js"
import { DecidedBy, Decision, FlowProtocol, PathBlock, RuleAction, WitnessFlow } from "./SecurityRule.js"

export { PathBlock, PathReason } from "./SecurityRule.js"

export const Reach = Schema.Literal("allowed", "partial", "denied").annotations({
  identifier: "Reach",
  description: "allowed: every flow gets through; partial: some do and some do not; denied: none does (or there " +
    "is no flow: an end without addresses)"
})
export type Reach = typeof Reach.Type

/** One end of a concrete flow: its address, and where it is in the tenant's VPCs (all null outside them). */
export const PathEnd = Schema.Struct({
  ip: Schema.String,
  vpc_id: Schema.NullOr(VpcId),
  subnet_id: Schema.NullOr(SubnetId),
  pod_id: Schema.NullOr(PodId)
}).annotations({ identifier: "PathEnd" })

/**
 * One flow end to end, and what decides it: `route` the path (null where a route carries it),
 * `egress` where it leaves (the source's VPC), `ingress` where it arrives (the destination's);
 * a half is null where the end is outside the tenant's VPCs, which no rule of Tenet's judges. A
 * flow gets through when a route carries it and both halves allow it.
 */
export const PathFlow = Schema.Struct({
  protocol: FlowProtocol,
  port: Schema.NullOr(Schema.Int),
  source: PathEnd,
  destination: PathEnd,
  egress: Schema.NullOr(Decision),
  ingress: Schema.NullOr(Decision),
  route: Schema.NullOr(PathBlock)
}).annotations({ identifier: "PathFlow" })
export type PathFlow = typeof PathFlow.Type

/** What decides a half's flow: a rule, an implied rule, or its path (where no route carries it). */
export const FlowDecidedBy = Schema.Union(
  ...DecidedBy.members,
  Schema.Struct({ kind: Schema.Literal("path"), ...PathBlock.fields })
).annotations({ identifier: "FlowDecidedBy" })

/** One half's flow (`evaluate`): the flow as the VPC sees it, and what decides it. */
export const DecidedFlow = Schema.Struct({
  flow: WitnessFlow,
  action: RuleAction,
  decided_by: FlowDecidedBy
}).annotations({ identifier: "DecidedFlow" })
export type DecidedFlow = typeof DecidedFlow.Type

/**
 * `POST /security-rules/evaluate`: the flows of one half (one VPC's rules, one direction)
 * between its local end (a pod, a subnet: its pods and its other endpoints, or the whole VPC)
 * and a remote end (an address, or every address of a VPC), on the paths that carry them (a flow
 * no route carries is denied by its path), with a flow of each side.
 */
export class FlowVerdict extends Schema.Class<FlowVerdict>("FlowVerdict")({
  reach: Reach,
  /** Every flow is allowed (`reach` is `allowed`). */
  allowed: Schema.Boolean,
  /** A flow the rules allow, with what allows it (null when none is). */
  allowed_flow: Schema.NullOr(DecidedFlow),
  /** A flow the rules deny, with what denies it (null when none is). */
  denied_flow: Schema.NullOr(DecidedFlow)
}) {}
