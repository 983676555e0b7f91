/** A VPC's pod: its contents, counted by the tenant's quotas; its status is the cluster's, not the store's. */
import { Schema, Struct } from "effect"
import * as Pod from "../domain/Pod.js"
import { Constraints } from "./Constraints.js"
import { define, movesNoScope } from "./Definition.js"

const encode = Schema.encodeSync(Schema.Struct(Struct.omit(Pod.PodRecord.fields, ...Pod.HIDDEN_FIELDS)))

export const kind = define(Pod.PodRecord)({
  noun: (id) => `pod ${id}`,
  event: "pod",
  keyField: "id",
  owners: ["vpc_id"],
  contents: true,
  versioned: false,
  counted: true,
  movesScope: movesNoScope,
  indexes: { vpc: (p) => p.vpc_id },
  order: "created",
  storage: {
    table: "pods",
    fixed: ["tenant_id", "created_at"],
    jsonText: [],
    unique: [{ constraint: Constraints.podName, key: (p) => `${p.vpc_id}/${p.name}` }]
  },
  view: (record) => encode(Struct.omit(record, ...Pod.HIDDEN_FIELDS))
})
