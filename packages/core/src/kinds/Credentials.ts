/** A tenant's registry credential, named within its tenant. */
import { Schema } from "effect"
import * as RegistryCredential from "../domain/RegistryCredential.js"
import { Constraints } from "./Constraints.js"
import { define, movesNoScope } from "./Definition.js"

const encode = Schema.encodeSync(RegistryCredential.RegistryCredential)

export const kind = define(RegistryCredential.RegistryCredentialRecord)({
  noun: (name) => `registry credential '${name}'`,
  event: "registry_credential",
  keyField: "name",
  owners: [],
  contents: false,
  versioned: false,
  counted: false,
  movesScope: movesNoScope,
  indexes: {},
  order: "created",
  storage: {
    table: "registry_credentials",
    fixed: ["tenant_id", "name", "created_at"],
    jsonText: [],
    unique: [{ constraint: Constraints.registryCredentialName, key: (c) => `${c.tenant_id}/${c.name}` }]
  },
  view: (record) => encode(RegistryCredential.toRegistryCredential(record))
})
