/** A tenant's VPC: the owner of its contents, and the unit whose version a decision holds. */
import { Schema } from "effect"
import * as Vpc from "../domain/Vpc.js"
import { Constraints } from "./Constraints.js"
import { define } from "./Definition.js"

const encode = Schema.encodeSync(Vpc.Vpc)

export const kind = define(Vpc.VpcRecord)({
  noun: (id) => `VPC ${id}`,
  event: "vpc",
  keyField: "id",
  owners: [],
  contents: false,
  versioned: true,
  counted: true,
  // Adding or removing a VPC moves the scope; replacing one (its apply status, its delete mark) does not.
  movesScope: (write) => write._tag !== "Update",
  indexes: {},
  order: "created",
  storage: {
    table: "vpcs",
    fixed: ["tenant_id", "created_at"],
    jsonText: [],
    unique: [{ constraint: Constraints.vpcName, key: (v) => `${v.tenant_id}/${v.name}` }]
  },
  view: (record) => encode(Vpc.toVpc(record))
})
