/**
 * The Kubernetes deployment as operators apply it: `deploy/kubernetes` rendered by kustomize
 * (`kubectl kustomize`, as `kubectl apply -k` renders it), every object valid by the published
 * Kubernetes schemas, the ClusterRole exactly the rules the adapter's tests are held to, and the
 * ConfigMap a configuration the server accepts, naming every setting of the README's table.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cluster } from "@kubernetes-models/cloudnative-pg/postgresql.cnpg.io/v1/Cluster"
import { Permissions } from "@tenet/adapters-k8s"
import { ConfigProvider, Effect } from "effect"
import { Deployment } from "kubernetes-models/apps/v1/Deployment"
import { ClusterRole } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole"
import { ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding"
import { ConfigMap } from "kubernetes-models/v1/ConfigMap"
import { Namespace } from "kubernetes-models/v1/Namespace"
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim"
import { Service } from "kubernetes-models/v1/Service"
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount"
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseAllDocuments } from "yaml"
import { ServerConfig } from "../src/Config.js"

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")

type Obj = Record<string, any>

const render = (overlay: string): ReadonlyArray<Obj> =>
  parseAllDocuments(
    execFileSync("kubectl", ["kustomize", join(repo, "deploy/kubernetes", overlay)], { encoding: "utf8" })
  ).map((d) => d.toJSON() as Obj)

const models: Record<string, new(data: any) => { validate(): void }> = {
  Namespace,
  ServiceAccount,
  ClusterRole,
  ClusterRoleBinding,
  ConfigMap,
  Deployment,
  Service,
  PersistentVolumeClaim,
  Cluster
}

const violations = (object: Obj): ReadonlyArray<string> => {
  const Model = models[object.kind]
  if (Model === undefined) return [`no schema for ${object.kind}`]
  try {
    new Model(object).validate()
    return []
  } catch (e) {
    return [String(e)]
  }
}

const one = (objects: ReadonlyArray<Obj>, kind: string) => {
  const found = objects.filter((o) => o.kind === kind)
  expect(found).toHaveLength(1)
  return found[0]!
}

/** The variables of the README's configuration table. */
const documentedSettings = () =>
  [...readFileSync(join(repo, "README.md"), "utf8").matchAll(/^\| `(TENET_[A-Z_]+)` \|/gm)].map((m) => m[1]!)

const SECRETS = { TENET_ENCRYPTION_KEY: "encryption-key", TENET_DATABASE_URL: "database-url" } as const

describe("deploy/kubernetes", () => {
  for (const overlay of ["base", "example", "postgres-ha"]) {
    it(`${overlay}: every object is valid by its kind's published schema, in the tenet-system namespace`, () => {
      const objects = render(overlay)
      expect(objects.map((o) => ({ kind: o.kind, problems: violations(o) }))).toEqual(
        objects.map((o) => ({ kind: o.kind, problems: [] }))
      )
      for (const o of objects) {
        if (!["Namespace", "ClusterRole", "ClusterRoleBinding"].includes(o.kind)) {
          expect(o.metadata.namespace).toBe("tenet-system")
        }
      }
    })
  }

  it("the ClusterRole grants exactly the adapter's permissions, to the Deployment's service account", () => {
    const objects = render("base")
    const role = one(objects, "ClusterRole")
    expect(role.rules).toEqual(Permissions.rules)
    const binding = one(objects, "ClusterRoleBinding")
    const account = one(objects, "ServiceAccount")
    const pod = one(objects, "Deployment").spec.template.spec
    expect(binding.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: role.metadata.name
    })
    expect(binding.subjects).toEqual([
      { kind: "ServiceAccount", name: account.metadata.name, namespace: account.metadata.namespace }
    ])
    expect(pod.serviceAccountName).toBe(account.metadata.name)
  })

  it("deploy/README.md's RBAC table is the rendered ClusterRole, rule by rule", () => {
    const role = one(render("base"), "ClusterRole")
    const table = [
      "| API group | Resources | Verbs |",
      "|---|---|---|",
      ...(role.rules as Array<Obj>).map((r) =>
        `| ${r.apiGroups.map((g: string) => (g === "" ? "core" : g)).join(", ")} | ${r.resources.join(", ")} | ${
          r.verbs.join(", ")
        } |`
      )
    ].join("\n")
    const readme = readFileSync(join(repo, "deploy/README.md"), "utf8")
    const documented = /<!-- rbac-table:[^\n]*-->\n((?:\|[^\n]*\n)+)/.exec(readme)?.[1]?.trimEnd()
    expect(documented).toBe(table)
  })

  it("the pod runs as non-root on a read-only root filesystem, probed on /healthz, secrets from the Secret", () => {
    const deployment = one(render("base"), "Deployment")
    const pod = deployment.spec.template.spec
    const [container] = pod.containers
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 })
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] }
    })
    expect(container.startupProbe.httpGet).toEqual({ path: "/healthz", port: "http" })
    expect(container.readinessProbe.httpGet).toEqual({ path: "/healthz", port: "http" })
    const secretRefs = Object.fromEntries(
      container.env.map((e: Obj) => [e.name, e.valueFrom.secretKeyRef])
    )
    expect(secretRefs).toMatchObject({
      TENET_ENCRYPTION_KEY: { name: "tenet", key: SECRETS.TENET_ENCRYPTION_KEY },
      TENET_DATABASE_URL: { name: "tenet", key: SECRETS.TENET_DATABASE_URL },
      TENET_ADMIN_PASSWORD: { name: "tenet", key: "admin-password" }
    })
    // A generated admin password would be written to the data directory, an emptyDir lost with
    // the pod: the password is required input, never generated there.
    expect(secretRefs.TENET_ADMIN_PASSWORD.optional).toBeUndefined()
    // Every writable path is a volume.
    expect(container.volumeMounts.map((m: Obj) => m.mountPath).sort()).toEqual(["/tmp", "/var/lib/tenet"])
  })

  it("the ConfigMap sets every documented setting but the secrets, and the server accepts it", () => {
    const config = one(render("base"), "ConfigMap").data as Record<string, string>
    const secrets = ["TENET_ENCRYPTION_KEY", "TENET_DATABASE_URL", "TENET_ADMIN_PASSWORD"]
    expect(Object.keys(config).sort()).toEqual(documentedSettings().filter((s) => !secrets.includes(s)).sort())
    const parsed = Effect.runSync(
      Effect.withConfigProvider(ServerConfig, ConfigProvider.fromMap(new Map(Object.entries(config))))
    )
    expect(parsed).toMatchObject({ store: "postgres", orchestrator: "kubernetes", tunnels: "edge", port: 8080 })
  })

  it("the example overlay runs one embedded replica on a claim, with the settings it changes", () => {
    const objects = render("example")
    const deployment = one(objects, "Deployment")
    expect(deployment.spec).toMatchObject({ replicas: 1, strategy: { type: "Recreate" } })
    expect(deployment.spec.template.spec.volumes).toContainEqual({
      name: "data",
      persistentVolumeClaim: { claimName: one(objects, "PersistentVolumeClaim").metadata.name }
    })
    const parsed = Effect.runSync(
      Effect.withConfigProvider(
        ServerConfig,
        ConfigProvider.fromMap(new Map(Object.entries(one(objects, "ConfigMap").data as Record<string, string>)))
      )
    )
    expect(parsed).toMatchObject({ store: "embedded", dataDir: "/var/lib/tenet" })
  })

  it("the postgres-ha overlay runs the replicas on a CloudNativePG Cluster with a synchronous standby, through its read-write Service", () => {
    const objects = render("postgres-ha")
    const cluster = one(objects, "Cluster")
    expect(cluster.spec.instances).toBeGreaterThanOrEqual(2)
    expect(cluster.spec.postgresql.synchronous).toMatchObject({ number: 1, dataDurability: "required" })
    const deployment = one(objects, "Deployment")
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2)
    const env = deployment.spec.template.spec.containers[0].env as ReadonlyArray<Obj>
    // The Secret CloudNativePG writes for the Cluster's owner: its `uri` names the `-rw` Service.
    expect(env.filter((e) => e.name === "TENET_DATABASE_URL")).toEqual([{
      name: "TENET_DATABASE_URL",
      valueFrom: { secretKeyRef: { name: `${cluster.metadata.name}-app`, key: "uri" } }
    }])
    expect(one(objects, "ConfigMap").data.TENET_STORE).toBe("postgres")
  })

  it("the image recipe is multi-stage and runs the installed server as a non-root user, with a health check", () => {
    const dockerfile = readFileSync(join(repo, "Dockerfile"), "utf8")
    const stages = dockerfile.split(/^FROM /m).slice(1)
    expect(stages.length).toBeGreaterThanOrEqual(3)
    const runtime = stages.at(-1)!
    // Only the installed packages reach the runtime stage: no sources, no workspace, no build tools.
    expect(runtime.match(/^COPY .*$/gm)).toEqual(["COPY --from=install /opt/tenet /opt/tenet"])
    expect(runtime).toMatch(/^USER 1000:1000$/m)
    expect(runtime).toMatch(/^HEALTHCHECK .*\n\s+CMD .*\/healthz/m)
    expect(runtime).toMatch(/^ENTRYPOINT \["node", "\/opt\/tenet\/node_modules\/@tenet\/server\/dist\/bin\.js"\]$/m)
    // The Deployment's user is the image's, so a read-only root filesystem needs nothing else.
    expect(one(render("base"), "Deployment").spec.template.spec.securityContext.runAsUser).toBe(1000)
  })
})
