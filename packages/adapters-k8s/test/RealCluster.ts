/**
 * One real API server for a test file (`LocalCluster`), started before its tests and stopped
 * after them; the suites skip where the binaries are missing, except in CI (`TENET_REQUIRE_KUBE`).
 */
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import { afterAll, beforeAll } from "vitest"
import { crdPath } from "./Schemas.js"

/** Whether the real-server suites run here: `describe.skipIf(!onCluster)`. */
export const onCluster = LocalCluster.available(crdPath)

/** The file's cluster, with Kube-OVN's CRDs, once `beforeAll` has started it. */
export const useCluster = (options: LocalCluster.Options = {}) => {
  const suite = LocalCluster.forSuite({ crds: crdPath, ...options })
  beforeAll(suite.start, 120_000)
  afterAll(suite.stop, 60_000)
  return suite.get
}
