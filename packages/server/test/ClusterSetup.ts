/**
 * The global setup of the API suite on a real Kubernetes API server: one `LocalCluster` (etcd,
 * kube-apiserver, Kube-OVN's CRDs and the stand-in controllers) for the whole project, started
 * once before its files and stopped after them. Files reach it as Tenet's user through the
 * kubeconfig provided here; they share it safely because every object Tenet makes is named by
 * the id of the VPC, subnet or pod it renders, and each file's servers make tenants of their own.
 */
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import type { TestProject } from "vitest/node"
import * as KubeOvnCrds from "./KubeOvnCrds.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** Tenet's user on the project's cluster, as a kubeconfig file's text. */
    readonly tenetKubeconfig: string
  }
}

export default async function setup(project: TestProject) {
  const cluster = LocalCluster.forSuite({ crds: KubeOvnCrds.path })
  const started = await cluster.ensure()
  project.provide("tenetKubeconfig", started.tenet.exportConfig())
  return () => cluster.stop()
}
