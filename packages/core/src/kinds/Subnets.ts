/** A VPC's subnet: its contents, counted by the tenant's quotas. */
import { Schema } from "effect"
import * as Subnet from "../domain/Subnet.js"
import { Constraints } from "./Constraints.js"
import { define, movesNoScope } from "./Definition.js"

const encode = Schema.encodeSync(Subnet.Subnet)

export const kind = define(Subnet.SubnetRecord)({
  noun: (id) => `subnet ${id}`,
  event: "subnet",
  keyField: "id",
  owners: ["vpc_id"],
  contents: true,
  versioned: false,
  counted: true,
  movesScope: movesNoScope,
  indexes: { vpc: (s) => s.vpc_id },
  order: "created",
  storage: {
    table: "subnets",
    fixed: ["tenant_id", "vpc_id", "created_at"],
    jsonText: [],
    unique: [{ constraint: Constraints.subnetName, key: (s) => `${s.vpc_id}/${s.name}` }]
  },
  view: (record) => encode(Subnet.toSubnet(record))
})
