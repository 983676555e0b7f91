/** A tenant's domain: unique across every tenant. */
import { Schema } from "effect"
import { DomainRecord } from "../domain/Domain.js"
import { Constraints } from "./Constraints.js"
import { define, movesNoScope } from "./Definition.js"

const encode = Schema.encodeSync(DomainRecord)

export const kind = define(DomainRecord)({
  noun: (id) => `domain ${id}`,
  event: "domain",
  keyField: "id",
  owners: [],
  contents: false,
  versioned: false,
  counted: false,
  movesScope: movesNoScope,
  indexes: {},
  order: "created",
  storage: {
    table: "domains",
    fixed: ["tenant_id", "created_at"],
    jsonText: [],
    unique: [{ constraint: Constraints.domainName, key: (d) => d.domain }]
  },
  view: (record) => encode(record)
})
