/**
 * A VPC's security plan as Kube-OVN subnet `acls`, which Kube-OVN copies verbatim into the
 * logical switch's OVN ACLs: `to-lport` filters what a switch delivers to its pods (ingress),
 * `from-lport` what its pods send (egress). Pure.
 *
 * OVN picks the highest-priority matching ACL and leaves equal priorities undefined, so the
 * plan's distinct ranks map to distinct priorities, rank 1 highest. Everything sits in one
 * band clear of the priorities Kube-OVN uses itself (private-subnet drop 1000 and allow 1001,
 * east-west 1900, network policies 2001, security groups 2003-2005, node traffic 3000):
 *
 *   1890        infrastructure (core services, the subnet's gateway): allowed both ways
 *   1889 - r+1  the plan's entry of rank r
 *   1005        beneath the rules: ingress to the subnet dropped, egress allowed
 */
import type { Ids, Plan, PortRanges } from "@tenet/core"

export interface Acl {
  readonly direction: "from-lport" | "to-lport"
  readonly priority: number
  readonly match: string
  readonly action: "allow-related" | "drop"
}

export const INFRASTRUCTURE_PRIORITY = 1890
export const FIRST_RULE_PRIORITY = 1889
export const FALLBACK_PRIORITY = 1005
/** How many entries fit between the fallback and the infrastructure allow. */
export const MAX_ENTRIES = FIRST_RULE_PRIORITY - FALLBACK_PRIORITY

export class PlanTooLarge extends Error {
  constructor(readonly entries: number) {
    super(`the plan has ${entries} entries; at most ${MAX_ENTRIES} fit in the ACL priority band`)
  }
}

const set = (items: ReadonlyArray<string>) => items.length === 1 ? items[0]! : `{${items.join(", ")}}`

const portMatch = (protocol: "tcp" | "udp", ranges: ReadonlyArray<PortRanges.PortRange>) => {
  // OVN ignores `A..B` in a match; a range must be written as two comparisons.
  const terms = ranges.map((r) =>
    r.from === r.to ? `${protocol}.dst == ${r.from}` : `(${protocol}.dst >= ${r.from} && ${protocol}.dst <= ${r.to})`
  )
  return terms.length === 1 ? terms[0]! : `(${terms.join(" || ")})`
}

const protocolMatch = (entry: Plan.AclEntry): ReadonlyArray<string> => {
  switch (entry.protocol) {
    case "all":
      return []
    case "icmp":
      return ["icmp4"]
    case "tcp":
    case "udp":
      return entry.ports === null ? [entry.protocol] : [entry.protocol, portMatch(entry.protocol, entry.ports)]
  }
}

/** Local and remote ends as OVN fields: ingress arrives at the local end, egress leaves it. */
const ends = (direction: "ingress" | "egress", local: string, remote: string | null) => {
  const [localField, remoteField] = direction === "ingress" ? ["ip4.dst", "ip4.src"] : ["ip4.src", "ip4.dst"]
  return [`${localField} == ${local}`, ...(remote === null ? [] : [`${remoteField} == ${remote}`])]
}

const aclDirection = (direction: "ingress" | "egress") => direction === "ingress" ? "to-lport" : "from-lport"

/** Where in one subnet an entry applies: the subnet's block, or the addresses of its target pods. */
const localOf = (
  entry: Plan.AclEntry,
  subnet: { readonly subnet_id: Ids.SubnetId; readonly cidr: string },
  podAddresses: (podId: Ids.PodId) => ReadonlyArray<string>,
  podSubnet: ReadonlyMap<Ids.PodId, Ids.SubnetId>
): ReadonlyArray<string> => {
  switch (entry.target.kind) {
    case "vpc":
      return [subnet.cidr]
    case "subnet":
      return entry.target.subnet_id === subnet.subnet_id ? [subnet.cidr] : []
    case "pods":
      return entry.target.pod_ids.filter((id) => podSubnet.get(id) === subnet.subnet_id).flatMap(podAddresses)
  }
}

const remoteOf = (entry: Plan.AclEntry): ReadonlyArray<string> =>
  entry.remote.kind === "cidr" ? [entry.remote.cidr] : entry.remote.cidrs

/**
 * The `acls` of every subnet of the plan's VPC. Pod targets become the pods' current
 * addresses (`podAddresses`); an entry that resolves to no address on a subnet matches
 * nothing there and is left out, as is one whose remote VPC has no subnets or whose address
 * set has no entries. An address set is one set literal in one ACL, whatever its size.
 */
export const render = (
  plan: Plan.SecurityPlan,
  podAddresses: (podId: Ids.PodId) => ReadonlyArray<string> = () => []
): ReadonlyMap<Ids.SubnetId, ReadonlyArray<Acl>> => {
  if (plan.entries.length > MAX_ENTRIES) throw new PlanTooLarge(plan.entries.length)
  const podSubnet = new Map(plan.pods.map((p) => [p.pod_id, p.subnet_id]))
  const ordered = [...plan.entries].sort((a, b) => a.rank - b.rank)
  return new Map(plan.subnets.map((subnet) => {
    const acls: Array<Acl> = []
    if (plan.infrastructure.length > 0) {
      for (const direction of ["ingress", "egress"] as const) {
        acls.push({
          direction: aclDirection(direction),
          priority: INFRASTRUCTURE_PRIORITY,
          match: ["ip4", ...ends(direction, subnet.cidr, set(plan.infrastructure))].join(" && "),
          action: "allow-related"
        })
      }
    }
    ordered.forEach((entry, index) => {
      const local = localOf(entry, subnet, podAddresses, podSubnet)
      const remote = remoteOf(entry)
      if (local.length === 0 || remote.length === 0) return
      acls.push({
        direction: aclDirection(entry.direction),
        priority: FIRST_RULE_PRIORITY - index,
        match: ["ip4", ...ends(entry.direction, set(local), set(remote)), ...protocolMatch(entry)].join(" && "),
        action: entry.action === "allow" ? "allow-related" : "drop"
      })
    })
    acls.push(
      { direction: "to-lport", priority: FALLBACK_PRIORITY, match: `ip4 && ip4.dst == ${subnet.cidr}`, action: "drop" },
      {
        direction: "from-lport",
        priority: FALLBACK_PRIORITY,
        match: `ip4 && ip4.src == ${subnet.cidr}`,
        action: "allow-related"
      }
    )
    return [subnet.subnet_id, acls] as const
  }))
}
