/**
 * Values derived from a tenant's state, kept with it (`TenantState.memo`): each is built again
 * only when what it is derived from changes, so a VPC's context or compiled matcher is built
 * once per change to its inputs whichever requests, processes' commits or revisions ask for it.
 * Use cases ask for the value; they hold no cache and no key.
 */
import type { VpcId } from "../domain/Ids.js"
import * as Analysis from "../rules/Analysis.js"
import * as Evaluate from "../rules/Evaluate.js"
import * as Paths from "../rules/Paths.js"
import * as Plan from "../rules/Plan.js"
import * as Reach from "../rules/Reach.js"
import * as RuleSet from "../rules/RuleSet.js"
import type { Derivation, TenantState } from "./TenantState.js"

interface OfVpc {
  readonly vpcId: VpcId
  readonly peeringCidr: string | null
}

/**
 * Which of the tenant's VPCs are peered: its inputs are the tenant's VPCs, subnets and rules. Only
 * rules naming a VPC can peer, so only those are read (by the index of what rules name): every
 * rule write makes it again, and a tenant's thousands of CIDR rules must not cost each write.
 */
const Connections: Derivation<null, Paths.Connections> = {
  key: () => "",
  inputs: (state) => [state.entryOf("vpcs"), state.entryOf("subnets"), state.entryOf("rules")],
  compute: (state) =>
    Paths.connections({
      vpcs: state.vpcs,
      subnets: state.subnets,
      rules: state.vpcs.flatMap((vpc) => state.rulesNaming(vpc.id))
    })
}

/** Which of the tenant's VPCs are peered (`Paths.connections`). */
export const connectionsOf = (state: TenantState): Paths.Connections => state.memo(Connections, null)

/**
 * A VPC's context: its inputs are the tenant's VPCs, subnets and address sets, the VPC's pods and
 * tunnels, its connections (by what identifies them: a rule elsewhere that peers nothing new
 * leaves the context as it was), the peering block.
 */
const VpcContext: Derivation<OfVpc, RuleSet.VpcContext> = {
  key: ({ vpcId }) => vpcId,
  inputs: (state, { peeringCidr, vpcId }) => [
    state.entryOf("vpcs"),
    state.entryOf("subnets"),
    state.entryOf("pods", { vpc: vpcId }),
    state.entryOf("tunnels", { vpc: vpcId }),
    state.entryOf("addressSets"),
    Paths.connectionKeyOf(connectionsOf(state), vpcId),
    peeringCidr
  ],
  compute: (state, { peeringCidr, vpcId }) =>
    RuleSet.contextOf(vpcId, {
      vpcs: state.vpcs,
      subnets: state.subnets,
      pods: state.podsOf(vpcId),
      tunnels: state.tunnels.filter((t) => t.vpc_id === vpcId),
      addressSets: state.addressSets,
      connections: connectionsOf(state),
      peeringCidr
    })
}

/** What a VPC's rules resolve against: the tenant's VPCs and address sets, the VPC's subnets and pods. */
export const vpcContextOf = (state: TenantState, vpcId: VpcId, peeringCidr: string | null): RuleSet.VpcContext =>
  state.memo(VpcContext, { vpcId, peeringCidr })

interface RulesInContext {
  readonly vpcId: VpcId
  readonly context: RuleSet.VpcContext
}

/** A value made of a VPC's rules in its context: built again when its rules or its context change. */
const ofRules = <A>(
  make: (rules: ReadonlyArray<RuleSet.Rule>, context: RuleSet.VpcContext) => A
): Derivation<RulesInContext, A> => ({
  key: ({ vpcId }) => vpcId,
  inputs: (state, { context, vpcId }) => [state.entryOf("rules", { vpc: vpcId }), context],
  compute: (state, { context, vpcId }) => make(state.rulesOf(vpcId).map(RuleSet.fromRecord), context)
})

/** A VPC's rules compiled for evaluation. */
const Matcher = ofRules(Evaluate.matcher)

/** The VPC's rules, in `context` (the VPC's, from `vpcContextOf`), as a matcher that decides a flow. */
export const matcherOf = (state: TenantState, vpcId: VpcId, context: RuleSet.VpcContext): Evaluate.Matcher =>
  state.memo(Matcher, { vpcId, context })

/** A VPC's rules partitioned by what decides each box of flows (`Reach.judge`). */
const Judge = ofRules(Reach.judge)

/** The VPC's rules, in `context` (the VPC's, from `vpcContextOf`), as they judge sets of flows. */
export const judgeOf = (state: TenantState, vpcId: VpcId, context: RuleSet.VpcContext): Reach.Judge =>
  state.memo(Judge, { vpcId, context })

/** A VPC's rules analysed (`Analysis.analyze`): shadowed, redundant and conflicting ones. */
const Findings = ofRules(Analysis.analyze)

/** The findings of the VPC's rules in `context` (the VPC's): one analysis per change of its rules or context. */
export const findingsOf = (
  state: TenantState,
  vpcId: VpcId,
  context: RuleSet.VpcContext
): ReadonlyArray<Analysis.Finding> => state.memo(Findings, { vpcId, context })

/** A VPC's rules compiled for the cluster. */
const SecurityPlan = ofRules(Plan.compile)

/**
 * The VPC's security plan in `context` (the VPC's): one compile per change of its rules, however
 * many convergences, and the superseded checks between them, read it.
 */
export const planOf = (state: TenantState, vpcId: VpcId, context: RuleSet.VpcContext): Plan.SecurityPlan =>
  state.memo(SecurityPlan, { vpcId, context })
