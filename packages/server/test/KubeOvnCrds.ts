/** Kube-OVN's CRDs: `TENET_KUBE_OVN_CRDS`, else beside the checkout in `shared/`. */
import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"

export const path = process.env.TENET_KUBE_OVN_CRDS ??
  resolve(dirname(fileURLToPath(import.meta.url)), "../../../../shared/vendor/kube-ovn/kube-ovn-crd.yaml")
