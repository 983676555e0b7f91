/**
 * The Kubernetes permissions the adapters need, as RBAC policy rules: the one list the shipped
 * ClusterRole (`deploy/kubernetes/base/rbac.yaml`) must equal, and the rules the recording API server
 * of `@tenet/adapters-k8s/testing` enforces, so that a call outside them fails the tests as it
 * would fail in a cluster. Kept beside the code that makes the calls, as kubebuilder's RBAC
 * markers are.
 *
 * Cluster-wide, because every VPC gets a namespace of its own that Tenet creates. Server-side
 * apply is `patch`, and `create` when the object does not exist yet; pruning lists by label and
 * deletes; `get` only where an object is read back by name; `watch` on every kind Tenet writes
 * (and on replicas, for their addresses): the controller's informers keep them in process, so
 * reads cost the cluster nothing and a change made behind Tenet's back is seen as it happens.
 */

/** An RBAC PolicyRule, as `rbac.authorization.k8s.io/v1` writes it. */
export interface PolicyRule {
  readonly apiGroups: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly verbs: ReadonlyArray<string>
}

const writes = ["create", "patch", "list", "delete"] as const
const watched = [...writes, "watch"] as const

export const rules: ReadonlyArray<PolicyRule> = [
  // Every kind Tenet writes is watched: a change made behind its back is seen and repaired.
  { apiGroups: [""], resources: ["namespaces", "persistentvolumeclaims", "secrets", "services"], verbs: watched },
  // Replicas are watched for their addresses, and deleted to restart a workload.
  { apiGroups: [""], resources: ["pods"], verbs: ["list", "watch", "delete"] },
  { apiGroups: ["apps"], resources: ["deployments"], verbs: watched },
  { apiGroups: ["autoscaling"], resources: ["horizontalpodautoscalers"], verbs: writes },
  { apiGroups: ["kubeovn.io"], resources: ["vpcs", "ovn-snat-rules", "ovn-dnat-rules"], verbs: watched },
  // Read back by name: a subnet's live ACLs, and the address Kube-OVN gave an external IP.
  { apiGroups: ["kubeovn.io"], resources: ["subnets", "ovn-eips"], verbs: [...watched, "get"] },
  // Leader election (`KubeLease`): the Lease read, created once, and replaced to renew or take it.
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] }
]

/** What one request asks to do, as the API server's authorizer sees it. */
export interface Attributes {
  readonly verb: string
  readonly apiGroup: string
  readonly resource: string
}

/** Whether the rules allow the request (RBAC is allow-only: any rule that matches allows it). */
export const allows = (policy: ReadonlyArray<PolicyRule>, request: Attributes): boolean =>
  policy.some((rule) =>
    (rule.apiGroups.includes(request.apiGroup) || rule.apiGroups.includes("*")) &&
    (rule.resources.includes(request.resource) || rule.resources.includes("*")) &&
    (rule.verbs.includes(request.verb) || rule.verbs.includes("*"))
  )

/** Every (group, resource, verb) the rules grant, one string each: `apps/deployments:patch`. */
export const grants = (policy: ReadonlyArray<PolicyRule>): ReadonlyArray<string> =>
  [
    ...new Set(
      policy.flatMap((rule) =>
        rule.apiGroups.flatMap((group) =>
          rule.resources.flatMap((resource) => rule.verbs.map((verb) => grant({ apiGroup: group, resource, verb })))
        )
      )
    )
  ].sort()

/** One request's grant string, as `grants` writes it. */
export const grant = (request: Attributes): string =>
  `${request.apiGroup === "" ? "core" : request.apiGroup}/${request.resource}:${request.verb}`
