/** Ids as people read them: the names of the tenant's VPCs, subnets, pods and address sets. */
import type { TopologyView } from "./Views.js"

export interface Names {
  readonly vpc: (id: string | null) => string
  readonly subnet: (id: string | null) => string
  readonly pod: (id: string) => string
  readonly addressSet: (id: string | null) => string
}

export const namesOf = (
  topology: TopologyView,
  addressSets: ReadonlyArray<{ readonly id: string; readonly name: string }> = []
): Names => {
  const names = new Map<string, string>(addressSets.map((s) => [s.id, s.name]))
  for (const vpc of topology.vpcs) {
    names.set(vpc.id, vpc.name)
    for (const subnet of vpc.subnets) {
      names.set(subnet.id, subnet.name)
      for (const pod of subnet.pods) names.set(pod.id, pod.name)
    }
  }
  const of = (kind: string) => (id: string | null) =>
    id === null ? "" : names.get(id) ?? `${kind} ${id.slice(0, 8)} (gone)`
  return { vpc: of("VPC"), subnet: of("subnet"), pod: of("pod"), addressSet: of("address set") }
}
