/** The API's views as the Promise client answers them: instants as `Date`s. */
import type { PromiseClient } from "@tenet/client"
import type { AddressSet, SecurityRule, Topology } from "@tenet/core"

export type Rule = PromiseClient.Dated<SecurityRule.SecurityRule>
export type RuleList = PromiseClient.Dated<SecurityRule.RuleList>
export type TopologyView = PromiseClient.Dated<Topology.TopologyView>
export type TopologyVpc = PromiseClient.Dated<Topology.TopologyVpc>
export type TopologySubnet = PromiseClient.Dated<Topology.TopologySubnet>
export type TopologyPod = PromiseClient.Dated<Topology.TopologyPod>
export type AddressSetView = PromiseClient.Dated<AddressSet.AddressSet>
export type AddressSetPlan = PromiseClient.Dated<AddressSet.AddressSetPlan>
