import { describe, expect, it } from "@effect/vitest"
import { Manifests, Names, OvnAcl } from "@tenet/adapters-k8s"
import type { Ids, Orchestrator } from "@tenet/core"
import { Net } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { FastCheck as fc } from "effect"
import { crdsAvailable, violations } from "./Schemas.js"

const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

const uuid = fc.uuid({ version: 4 })
const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,40}[a-z0-9]$/)
const address = fc.tuple(fc.integer({ min: 1, max: 223 }), fc.nat(255), fc.nat(255), fc.integer({ min: 1, max: 254 }))
  .map((parts) => parts.join(".") as Net.Ipv4Address)

const vpcSpec: fc.Arbitrary<Orchestrator.VpcSpec> = fc.record({
  tenant_id: uuid.map((u) => u as Ids.TenantId),
  vpc_id: uuid.map((u) => u as Ids.VpcId),
  name: label.map((l) => l as Net.DnsLabel),
  enable_internet: fc.boolean(),
  dns_nameservers: fc.array(address, { maxLength: 3 }),
  dns_ndots: fc.option(fc.integer({ min: 1, max: 15 }), { nil: null }),
  uplink: fc.option(
    fc.record({
      external_gateway: address,
      peering_subnet_cidr: fc.constant("100.64.0.0/16" as Net.Ipv4Network)
    }),
    { nil: null }
  ),
  peerings: fc.uniqueArray(
    fc.record({
      remote_vpc_id: uuid.map((u) => u as Ids.VpcId),
      link: fc.integer({ min: 0, max: 16_383 }),
      remote_blocks: fc.array(fc.integer({ min: 0, max: 255 }).map((n) => `10.${n}.0.0/16`), { maxLength: 3 })
    }).map(({ link, remote_blocks, remote_vpc_id }) => ({
      remote_vpc_id,
      local_connect_ip: `169.254.${link >> 6}.${(link & 63) * 4 + 1}/30`,
      remote_connect_ip: `169.254.${link >> 6}.${(link & 63) * 4 + 2}`,
      remote_blocks
    })),
    { maxLength: 3, selector: (p) => p.remote_vpc_id }
  ).map((peerings) =>
    // One router's links never share a /30.
    peerings.filter((p, i) => peerings.findIndex((q) => q.local_connect_ip === p.local_connect_ip) === i)
  )
})

const podSpec = (subnet: Orchestrator.SubnetSpec): fc.Arbitrary<Orchestrator.PodSpec> =>
  fc.record({
    replicas: fc.integer({ min: 1, max: 10 }),
    service_port: fc.integer({ min: 1, max: 65535 }),
    env: fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,20}$/), fc.string({ maxLength: 40 }), { maxKeys: 4 }),
    registry_credentials: fc.array(label, { maxLength: 2 }),
    auto_healing: fc.boolean(),
    autoscaling: fc.option(
      fc.record({
        min_replicas: fc.integer({ min: 2, max: 10 }),
        max_replicas: fc.integer({ min: 10, max: 50 }),
        cpu_target_millicores: fc.integer({ min: 10, max: 10000 })
      }),
      { nil: null }
    ),
    persistent_mount_path: fc.option(fc.constantFrom("/storage", "/var/lib/data"), { nil: null }),
    gpu_count: fc.integer({ min: 0, max: 4 }),
    external_access: fc.boolean(),
    inbound: fc.boolean(),
    dns: fc.record({
      nameservers: fc.array(address, { maxLength: 3 }),
      ndots: fc.option(fc.integer({ min: 1, max: 15 }), { nil: null })
    })
  }).map(({ inbound, ...fields }) =>
    Fixtures.pod(subnet, {
      ...fields,
      external_inbound: inbound
        ? { subnet_cidr: "203.0.113.0/24" as Net.Ipv4Network, gateway: "203.0.113.1" as Net.Ipv4Address }
        : null
    })
  )

const rendered = (): fc.Arbitrary<ReadonlyArray<Manifests.Manifest>> =>
  fc.tuple(vpcSpec, fc.boolean()).chain(([vpc, internet]) => {
    const subnet: Orchestrator.SubnetSpec = {
      ...Fixtures.network(vpc.tenant_id).subnet,
      vpc_id: vpc.vpc_id,
      enable_internet: internet
    }
    const plan = { ...Fixtures.emptyPlan({ vpc, subnet }), pods: [] }
    const acls = OvnAcl.render(plan).get(subnet.subnet_id) ?? []
    return podSpec(subnet).map((pod) => [
      ...Manifests.vpc(vpc, Manifests.defaultSettings),
      Manifests.subnet(subnet, acls),
      ...Manifests.subnetEgress(subnet),
      ...Manifests.pod({ ...pod, vpc_id: vpc.vpc_id }, Manifests.defaultSettings, {
        vip: "10.96.0.20",
        replicas: ["10.1.0.5", "10.1.0.6"]
      }),
      Manifests.registrySecret(
        { tenant_id: vpc.tenant_id, name: "ghcr" as Net.DnsLabel, server: "ghcr.io", username: "u", password: "p" },
        Names.namespace(vpc.vpc_id),
        vpc.vpc_id
      )
    ])
  })

describe("Manifests", () => {
  it.prop("every rendered object is valid by its kind's published schema", [rendered()], ([objects]) => {
    // Kube-OVN kinds need the CRD bundle (see README); built-in kinds are always checked.
    for (const object of objects.filter((o) => crdsAvailable || o.apiVersion !== "kubeovn.io/v1")) {
      expect({ kind: object.kind, problems: violations(object) }).toEqual({ kind: object.kind, problems: [] })
    }
  }, { fastCheck: { numRuns: 150 } })

  it.prop(
    "names are DNS labels of at most 63 characters; label values are valid and name their owners",
    [rendered()],
    ([objects]) => {
      for (const { metadata } of objects) {
        expect(metadata.name.length).toBeLessThanOrEqual(63)
        expect(metadata.name).toMatch(DNS_LABEL)
        for (const value of Object.values(metadata.labels)) {
          expect(value.length).toBeLessThanOrEqual(63)
          expect(value).toMatch(LABEL_VALUE)
        }
        expect(metadata.labels[Names.MANAGED_BY]).toBe(Names.MANAGER)
        expect(metadata.labels[Names.TENANT]).toBeDefined()
      }
      const keys = objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`)
      expect(new Set(keys).size).toBe(keys.length)
    }
  )

  it.skipIf(!crdsAvailable)("a field the schema does not know is reported, not silently dropped", () => {
    const { subnet } = Fixtures.network()
    const object = Manifests.subnet(subnet, [])
    expect(violations({ ...object, spec: { ...(object.spec as object), cidr: subnet.cidr } })).not.toEqual([])
    expect(
      violations({
        ...object,
        spec: { ...(object.spec as object), acls: [{ direction: "to-lport", priority: "high" }] }
      })
    )
      .not.toEqual([])
  })

  it.prop(
    "a VPC's peerings: a router port on each pair's link, and a route to each of the other's blocks through it",
    [vpcSpec],
    ([spec]) => {
      const vpc = Manifests.vpc(spec, Manifests.defaultSettings).find((o) => o.kind === "Vpc")!
      const fields = vpc.spec as {
        vpcPeerings: ReadonlyArray<{ remoteVpc: string; localConnectIP: string }>
        staticRoutes: ReadonlyArray<{ cidr: string; nextHopIP: string; policy: string }>
      }
      expect(fields.vpcPeerings).toEqual(
        spec.peerings.map((p) => ({ remoteVpc: Names.vpc(p.remote_vpc_id), localConnectIP: p.local_connect_ip }))
      )
      for (const peering of spec.peerings) {
        const through = fields.staticRoutes.filter((r) => r.nextHopIP === peering.remote_connect_ip)
        expect(through.map((r) => r.cidr)).toEqual(peering.remote_blocks)
        expect(through.every((r) => r.policy === "policyDst")).toBe(true)
        // The next hop is on this side's link.
        const local = Net.cidrOf(peering.local_connect_ip)
        expect(Net.contains(local, Net.ipv4Of(peering.remote_connect_ip))).toBe(true)
      }
      // Nothing else routes to another VPC: the uplink's routes name its gateway only.
      const peered = new Set(spec.peerings.map((p) => p.remote_connect_ip))
      for (const route of fields.staticRoutes.filter((r) => !peered.has(r.nextHopIP))) {
        expect(route.nextHopIP).toBe(spec.uplink?.external_gateway)
      }
    }
  )

  it("autoscaled pods leave the replica count to the HPA; persistent pods restart one at a time", () => {
    const { subnet } = Fixtures.network()
    const objects = Manifests.pod(
      Fixtures.pod(subnet, {
        autoscaling: { min_replicas: 2, max_replicas: 5, cpu_target_millicores: 300 },
        persistent_mount_path: "/storage"
      }),
      Manifests.defaultSettings,
      { vip: null, replicas: [] }
    )
    const deployment = objects.find((o) => o.kind === "Deployment")!
    expect(deployment.spec).not.toHaveProperty("replicas")
    expect(deployment.spec).toMatchObject({ strategy: { type: "Recreate" } })
    expect(objects.find((o) => o.kind === "HorizontalPodAutoscaler")!.spec).toMatchObject({
      minReplicas: 2,
      maxReplicas: 5,
      metrics: [{ resource: { name: "cpu", target: { type: "AverageValue", averageValue: "300m" } } }]
    })
  })

  it("env values and registry passwords travel only base64-encoded in Secrets", () => {
    const { subnet } = Fixtures.network()
    const objects = Manifests.pod(Fixtures.pod(subnet, { env: { TOKEN: "s3cret" } }), Manifests.defaultSettings, {
      vip: null,
      replicas: []
    })
    const text = JSON.stringify(objects.filter((o) => o.kind !== "Secret"))
    expect(text).not.toContain("s3cret")
    expect(objects.find((o) => o.kind === "Secret")!.data).toEqual({ TOKEN: Buffer.from("s3cret").toString("base64") })
  })
})
