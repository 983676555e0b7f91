/**
 * @tenet/adapters-k8s/testing: a recording Kubernetes API server that enforces Tenet's RBAC
 * rules, to test the Kubernetes adapter (or your own use of it) without a cluster.
 */
export * as FakeApiServer from "./FakeApiServer.js"
