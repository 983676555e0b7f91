/**
 * A guardrail: a VPC's contents, or tenant-wide (no VPC), when it is in no VPC's contents and no
 * VPC's index entry, and writing it moves the tenant's scope.
 */
import { Schema } from "effect"
import * as Guardrail from "../domain/Guardrail.js"
import { define } from "./Definition.js"

const encode = Schema.encodeSync(Guardrail.Guardrail)

export const kind = define(Guardrail.GuardrailRecord)({
  noun: (id) => `guardrail ${id}`,
  event: "guardrail",
  keyField: "id",
  owners: ["vpc_id"],
  contents: true,
  versioned: false,
  counted: false,
  // A removal names no VPC only when the guardrail is tenant-wide.
  movesScope: (write) => write._tag === "Remove" ? write.vpc_id === undefined : write.record.vpc_id === null,
  indexes: { vpc: (g) => g.vpc_id },
  order: "created",
  storage: { table: "guardrails", fixed: ["tenant_id", "vpc_id", "created_at"], jsonText: ["local"], unique: [] },
  view: (record) => encode(Guardrail.viewOf(record))
})
