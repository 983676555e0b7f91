/**
 * One real API server for a test file (`LocalCluster`), started before its tests and stopped
 * after them; the suites skip where the binaries are missing, except in CI (`TENET_REQUIRE_KUBE`).
 */
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import { ManagedRuntime } from "effect"
import * as Fs from "node:fs"
import { afterAll, beforeAll } from "vitest"
import { crdPath } from "./Schemas.js"

/** Whether the real-server suites run here: `describe.skipIf(!onCluster)`. */
export const onCluster = LocalCluster.available() && (Fs.existsSync(crdPath) || process.env.TENET_REQUIRE_KUBE === "1")

/** The file's cluster, with Kube-OVN's CRDs, once `beforeAll` has started it. */
export const useCluster = (options: LocalCluster.Options = {}) => {
  const runtime = ManagedRuntime.make(LocalCluster.layer({ crds: crdPath, ...options }))
  const holder: { cluster?: LocalCluster.LocalCluster } = {}
  beforeAll(async () => {
    holder.cluster = await runtime.runPromise(LocalCluster.Cluster)
  }, 120_000)
  afterAll(() => runtime.dispose(), 60_000)
  return () => {
    if (holder.cluster === undefined) throw new Error("the cluster has not started")
    return holder.cluster
  }
}
