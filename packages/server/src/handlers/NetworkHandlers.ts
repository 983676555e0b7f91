import { Api, SecurityRules, Subnets, Vpcs } from "@tenet/core"
import { Effect } from "effect"
import * as ResponseEncoder from "../ResponseEncoder.js"
import { asTenant } from "./AsTenant.js"

export const VpcsHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "vpcs",
  (handlers) =>
    Effect.map(Effect.all([Vpcs.Vpcs, SecurityRules.SecurityRules]), ([vpcs, rules]) =>
      handlers
        .handle("create", ({ payload }) => asTenant((caller) => vpcs.create(caller, payload)))
        .handle("list", () => asTenant(vpcs.list))
        .handle("delete", ({ path }) => asTenant((caller) => vpcs.delete(caller, path.vpc_id)))
        .handle("reachability", ({ path }) => asTenant((caller) => rules.reachability(caller, path.vpc_id))))
)

export const SubnetsHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "subnets",
  (handlers) =>
    Effect.map(Subnets.Subnets, (subnets) =>
      handlers
        .handle("create", ({ payload }) => asTenant((caller) => subnets.create(caller, payload)))
        .handle("list", () => asTenant(subnets.list)))
)

export const SecurityRulesHandlers = ResponseEncoder.group(
  Api.TenetApi,
  "securityRules",
  (handlers) =>
    Effect.map(SecurityRules.SecurityRules, (rules) =>
      handlers
        .handle("list", ({ urlParams }) => asTenant((caller) => rules.list(caller, urlParams.vpc_id)))
        .handle("analysis", ({ urlParams }) => asTenant((caller) => rules.analysis(caller, urlParams.vpc_id)))
        .handle("get", ({ path }) => asTenant((caller) => rules.get(caller, path.rule_id)))
        .handle(
          "create",
          ({ payload, urlParams }) => asTenant((caller) => rules.create(caller, payload, urlParams.dry_run === true))
        )
        .handle(
          "update",
          ({ path, payload, urlParams }) =>
            asTenant((caller) => rules.update(caller, path.rule_id, payload, urlParams.dry_run === true))
        )
        .handle(
          "delete",
          ({ path, urlParams }) => asTenant((caller) => rules.delete(caller, path.rule_id, urlParams.dry_run === true))
        )
        .handle(
          "reorder",
          ({ payload, urlParams }) =>
            asTenant((caller) => rules.reorder(caller, payload.vpc_id, payload.rule_ids, urlParams.dry_run === true))
        )
        .handle("evaluate", ({ payload }) => asTenant((caller) => rules.evaluate(caller, payload))))
)
