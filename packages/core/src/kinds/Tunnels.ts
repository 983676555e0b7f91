/** A pod's tunnel: a VPC's contents, removed with its pod; its hostname is routed (one index with service tunnels). */
import { Schema } from "effect"
import * as Tunnel from "../domain/Tunnel.js"
import { Constraints } from "./Constraints.js"
import { define, movesNoScope } from "./Definition.js"

const encode = Schema.encodeSync(Tunnel.Tunnel)

export const kind = define(Tunnel.TunnelRecord)({
  noun: (id) => `tunnel ${id}`,
  event: "tunnel",
  keyField: "id",
  // A VPC's removal takes its pods, and each pod its tunnels.
  owners: ["pod_id"],
  contents: true,
  versioned: false,
  counted: false,
  movesScope: movesNoScope,
  indexes: { vpc: (t) => t.vpc_id, pod: (t) => t.pod_id },
  order: "created",
  storage: {
    table: "tunnels",
    fixed: ["tenant_id", "created_at"],
    jsonText: [],
    unique: [
      { constraint: Constraints.tunnelName, key: (t) => `${t.tenant_id}/${t.tunnel_name}` },
      { constraint: Constraints.routedHostname, key: (t) => t.hostname }
    ]
  },
  view: (record) => encode(Tunnel.toTunnel(record))
})
