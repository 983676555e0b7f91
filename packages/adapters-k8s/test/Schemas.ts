/**
 * Published schemas to validate rendered objects against: Kube-OVN kinds against the CRD
 * bundle in `shared/vendor/kube-ovn/` (data, read in place), built-in kinds against the
 * Kubernetes OpenAPI schemas `kubernetes-models` ships.
 */
import { Ajv } from "ajv"
import { Deployment } from "kubernetes-models/apps/v1/Deployment"
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler"
import { Namespace } from "kubernetes-models/v1/Namespace"
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim"
import { Secret } from "kubernetes-models/v1/Secret"
import { Service } from "kubernetes-models/v1/Service"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { parseAllDocuments } from "yaml"

const repoRoot = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../../..")

/** Where the Kube-OVN CRD bundle is: `TENET_KUBE_OVN_CRDS`, else beside the checkout in `shared/`. */
export const crdPath = process.env.TENET_KUBE_OVN_CRDS ??
  Path.resolve(repoRoot, "../shared/vendor/kube-ovn/kube-ovn-crd.yaml")

export const crdsAvailable = Fs.existsSync(crdPath)

interface Crd {
  readonly spec: {
    readonly names: { readonly kind: string; readonly plural: string }
    readonly scope: "Cluster" | "Namespaced"
    readonly versions: ReadonlyArray<{ readonly name: string; readonly served: boolean; readonly schema: any }>
  }
}

const loadCrds = (): ReadonlyArray<Crd> =>
  parseAllDocuments(Fs.readFileSync(crdPath, "utf8"))
    .map((d) => d.toJSON() as Crd | null)
    .filter((d): d is Crd => d !== null && (d as { readonly kind?: unknown }).kind === "CustomResourceDefinition")

let validators: Map<string, (o: unknown) => ReadonlyArray<string>> | undefined

/**
 * The API server drops fields a structural schema does not know, silently; closing every
 * object schema makes such a field (a typo, a field of another version) a violation instead,
 * as `kubectl apply --validate=strict` would.
 */
const closed = (schema: any): any => {
  if (Array.isArray(schema)) return schema.map(closed)
  if (typeof schema !== "object" || schema === null) return schema
  const out: any = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, closed(v)]))
  if (
    out.properties !== undefined && out.additionalProperties === undefined &&
    out["x-kubernetes-preserve-unknown-fields"] !== true
  ) {
    out.additionalProperties = false
  }
  return out
}

const kubeOvnValidators = () => {
  if (validators !== undefined) return validators
  // Kubernetes' structural-schema extensions are not JSON Schema keywords; strict mode off ignores them.
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false })
  validators = new Map(
    loadCrds().map((crd) => {
      const version = crd.spec.versions.find((v) => v.served)!
      const schema = closed(version.schema.openAPIV3Schema)
      // metadata is the API server's (ObjectMeta), not the CRD's to describe.
      schema.properties.metadata = { type: "object" }
      const check = ajv.compile(schema)
      return [
        crd.spec.names.kind,
        (o: unknown) => check(o) ? [] : (check.errors ?? []).map((e) => `${e.instancePath} ${e.message}`)
      ] as const
    })
  )
  return validators
}

const builtIn: Record<string, new(data: any) => { validate(): void }> = {
  Namespace,
  Secret,
  Service,
  PersistentVolumeClaim,
  Deployment,
  HorizontalPodAutoscaler
}

/** What is wrong with the object by its kind's published schema; empty when it is valid. */
export const violations = (
  object: { readonly apiVersion: string; readonly kind: string; readonly [field: string]: unknown }
): ReadonlyArray<string> => {
  if (object.apiVersion === "kubeovn.io/v1") {
    const check = kubeOvnValidators().get(object.kind)
    return check === undefined ? [`no schema for ${object.kind}`] : check(object)
  }
  const Model = builtIn[object.kind]
  if (Model === undefined) return [`no schema for ${object.kind}`]
  try {
    new Model(object).validate()
    return []
  } catch (e) {
    return [String(e)]
  }
}
