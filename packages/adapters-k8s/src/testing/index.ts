/**
 * @tenet/adapters-k8s/testing: a real Kubernetes control plane on loopback (`LocalCluster`:
 * etcd and kube-apiserver, RBAC on, Kube-OVN's CRDs), and a recording API server that enforces
 * Tenet's RBAC rules (`FakeApiServer`) for faults a real one cannot be made to show.
 */
export * as FakeApiServer from "./FakeApiServer.js"
export * as LocalCluster from "./LocalCluster.js"
