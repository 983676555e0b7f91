/**
 * A tenant's named list of networks: no VPC's contents, owned by the tenant alone, and one list for
 * every VPC of the tenant, so every write of one moves the tenant's scope.
 */
import { Schema } from "effect"
import * as AddressSet from "../domain/AddressSet.js"
import { Constraints } from "./Constraints.js"
import { define } from "./Definition.js"

const encode = Schema.encodeSync(AddressSet.AddressSet)

export const kind = define(AddressSet.AddressSetRecord)({
  noun: (id) => `address set ${id}`,
  event: "address_set",
  keyField: "id",
  owners: [],
  contents: false,
  versioned: false,
  counted: false,
  movesScope: () => true,
  indexes: {},
  order: "created",
  storage: {
    table: "address_sets",
    fixed: ["tenant_id", "created_at"],
    jsonText: ["entries"],
    unique: [{ constraint: Constraints.addressSetName, key: (a) => `${a.tenant_id}/${a.name}` }]
  },
  view: (record) => encode(AddressSet.viewOf(record))
})
