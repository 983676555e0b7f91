/**
 * Tenet on Kubernetes: the Orchestrator on a Kube-OVN cluster and the EdgeTunnels port on
 * the tunnel provider's API.
 */
export * as CloudflareApi from "./CloudflareApi.js"
export * as CloudflareEdge from "./CloudflareEdge.js"
export * as Drift from "./Drift.js"
export * as KubeApi from "./KubeApi.js"
export * as KubeLease from "./KubeLease.js"
export * as KubeOrchestrator from "./KubeOrchestrator.js"
export * as Manifests from "./Manifests.js"
export * as Names from "./Names.js"
export * as OvnAcl from "./OvnAcl.js"
export * as Permissions from "./Permissions.js"
