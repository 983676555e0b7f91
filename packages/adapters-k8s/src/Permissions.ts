/**
 * The Kubernetes permissions the adapters need, as RBAC policy rules: the one list the shipped
 * ClusterRole (`deploy/kubernetes/base/rbac.yaml`) must equal, and the rules the recording API server
 * of `@tenet/adapters-k8s/testing` enforces, so that a call outside them fails the tests as it
 * would fail in a cluster. Kept beside the code that makes the calls, as kubebuilder's RBAC
 * markers are.
 *
 * Cluster-wide, because every VPC gets a namespace of its own that Tenet creates. Server-side
 * apply is `patch`, and `create` when the object does not exist yet; pruning lists by label and
 * deletes; `get` only where an object is read back by name; `watch` where a pod's runtime is
 * kept in process (Deployments, Services, OvnEips), so reads cost the cluster nothing.
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
  { apiGroups: [""], resources: ["namespaces", "persistentvolumeclaims", "secrets"], verbs: writes },
  // A pod's VIP is its Service's cluster IP, watched.
  { apiGroups: [""], resources: ["services"], verbs: watched },
  // Replicas are read for their addresses, and deleted to restart a workload.
  { apiGroups: [""], resources: ["pods"], verbs: ["list", "delete"] },
  // A pod's replicas and phase come from its Deployment's status, watched.
  { apiGroups: ["apps"], resources: ["deployments"], verbs: watched },
  { apiGroups: ["autoscaling"], resources: ["horizontalpodautoscalers"], verbs: writes },
  { apiGroups: ["kubeovn.io"], resources: ["vpcs", "ovn-snat-rules", "ovn-dnat-rules"], verbs: writes },
  // Read back by name: a subnet's live ACLs.
  { apiGroups: ["kubeovn.io"], resources: ["subnets"], verbs: [...writes, "get"] },
  // The address Kube-OVN gave an external IP: read back after an apply, and watched.
  { apiGroups: ["kubeovn.io"], resources: ["ovn-eips"], verbs: [...watched, "get"] }
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
