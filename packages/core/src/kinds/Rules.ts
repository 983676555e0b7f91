/** A VPC's security rule: its contents, ordered by `seq`, shown with its status in its VPC. */
import { Schema } from "effect"
import * as SecurityRule from "../domain/SecurityRule.js"
import * as RuleSet from "../rules/RuleSet.js"
import { define, movesNoScope } from "./Definition.js"

const encode = Schema.encodeSync(SecurityRule.SecurityRule)

export const kind = define(SecurityRule.SecurityRuleRecord)({
  noun: (id) => `security rule ${id}`,
  event: "security_rule",
  keyField: "id",
  owners: ["vpc_id"],
  contents: true,
  versioned: false,
  counted: false,
  movesScope: movesNoScope,
  // A rule naming its own VPC as the remote is not another VPC's reference to it.
  indexes: {
    vpc: (r) => r.vpc_id,
    remote: (r) => r.remote_vpc_id === r.vpc_id ? null : r.remote_vpc_id,
    addressSet: (r) => r.remote_address_set_id
  },
  order: "seq",
  storage: { table: "security_rules", fixed: ["tenant_id", "vpc_id", "created_at"], jsonText: [], unique: [] },
  // Its status as the deciding state's context has it.
  view: (record, context) =>
    encode(
      SecurityRule.viewOf(record, RuleSet.statusOf(RuleSet.fromRecord(record), context.vpcContext(record.vpc_id)))
    )
})
