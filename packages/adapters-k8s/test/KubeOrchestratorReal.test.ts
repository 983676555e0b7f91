/**
 * The Kubernetes orchestrator against a real API server (kube-apiserver v1.20.2 and etcd, RBAC
 * on, Kube-OVN's CRDs), as Tenet's user holding only the shipped ClusterRole's rules: the
 * Orchestrator contract, and what only a real server shows.
 */
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import type { Net } from "@tenet/core"
import { OrchestratorContract } from "@tenet/core/testing"
import { describe } from "vitest"
import { onCluster, useCluster } from "./RealCluster.js"

describe.skipIf(!onCluster)("KubeOrchestrator on kube-apiserver v1.20.2", () => {
  const cluster = useCluster()
  OrchestratorContract.run("kubernetes (kube-apiserver v1.20.2)", () => LocalCluster.orchestrator(cluster()), {
    live: true,
    timeout: 60_000,
    externalPool: { subnet_cidr: "203.0.113.0/24" as Net.Ipv4Network, gateway: "203.0.113.1" as Net.Ipv4Address }
  })
})
