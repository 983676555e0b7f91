/**
 * Tenet's answers held to real packets. Random tenants are built through the API (VPCs with and
 * without the internet and with one or two subnets, peered by rules naming each other or not,
 * pods published or not, address sets, rules of every shape and target); what Tenet renders for Kube-OVN (`Manifests`, `OvnAcl`, from the specs and
 * plans the cluster was asked to hold) becomes the OVN northbound objects Kube-OVN makes of it
 * (`KubeOvnNorthbound`), on OVN's real data plane (`DataPlane`): every pod a network namespace,
 * the internet a namespace behind the external network. For random flows between pods and the
 * internet, the packet's fate (a TCP connect, a UDP echo, an ICMP echo reply: the reply to an
 * allowed flow gets back) is explain's answer, and reachability's for pairs of pods. A flow the
 * other way on the same ports is a flow of its own: an unsolicited packet is judged as such.
 */
import { expect, layer } from "@effect/vitest"
import { Manifests, Names, OvnAcl } from "@tenet/adapters-k8s"
import { SimulatedCluster } from "@tenet/adapters-memory"
import type { Ids } from "@tenet/core"
import { Effect, FastCheck as fc } from "effect"
import { afterAll, beforeAll } from "vitest"
import * as DataPlane from "./DataPlane.js"
import { raw, setProviderConfig, testServer, workspace } from "./Harness.js"
import * as KubeOvn from "./KubeOvnNorthbound.js"

type Json = Record<string, any>

const PORTS = [80, 443, 8080] as const
/** The internet hosts a flow comes from or goes to. */
const CLIENT = "198.51.100.7"
const SERVER = "8.8.8.8"

/** What an address set of the tenant's may hold: the internet's hosts, a pod subnet, a block around them all. */
const SET_ENTRIES = [`${CLIENT}/32`, `${SERVER}/32`, "10.0.1.0/24", "10.1.2.0/24", "10.0.0.0/8"] as const

/**
 * A tenant to build: VPCs (internet or not) with one or two subnets and pods (published or not,
 * each in one of its VPC's subnets), address sets, and rules naming blocks, VPCs or sets, aimed
 * at a whole VPC, a subnet or some of its pods.
 */
const Tenant = fc.record({
  vpcs: fc.array(
    fc.record({
      internet: fc.boolean(),
      subnets: fc.integer({ min: 1, max: 2 }),
      pods: fc.array(
        fc.record({ published: fc.option(fc.constantFrom(80, 443), { nil: null }), subnet: fc.nat() }),
        { minLength: 1, maxLength: 2 }
      )
    }),
    { minLength: 2, maxLength: 3 }
  ),
  sets: fc.array(fc.subarray([...SET_ENTRIES], { minLength: 1 }), { maxLength: 2 }),
  rules: fc.array(
    fc.record({
      vpc: fc.nat(),
      direction: fc.constantFrom("ingress", "egress"),
      action: fc.constantFrom("allow", "allow", "deny"),
      priority: fc.integer({ min: 1, max: 20 }),
      protocol: fc.constantFrom("tcp", "udp", "icmp", "all"),
      ports: fc.option(fc.constantFrom("80", "443", "8080", "80-443", "443,8080"), { nil: null }),
      remote: fc.oneof(
        fc.constantFrom("0.0.0.0/0", `${CLIENT}/32`, `${SERVER}/32`, "10.0.0.0/8").map((cidr) => ({
          kind: "cidr" as const,
          cidr
        })),
        fc.nat().map((vpc) => ({ kind: "vpc" as const, vpc })),
        fc.nat().map((set) => ({ kind: "set" as const, set }))
      ),
      target: fc.oneof(
        fc.constant({ kind: "vpc" as const }),
        fc.nat().map((subnet) => ({ kind: "subnet" as const, subnet })),
        fc.nat().map((pod) => ({ kind: "pod" as const, pod }))
      )
    }),
    { minLength: 2, maxLength: 8 }
  ),
  flows: fc.array(
    fc.record({
      from: fc.nat(),
      to: fc.nat(),
      protocol: fc.constantFrom("tcp" as const, "udp" as const, "icmp" as const),
      port: fc.constantFrom(...PORTS)
    }),
    { minLength: 10, maxLength: 10 }
  )
})

type TenantSpec = typeof Tenant extends fc.Arbitrary<infer A> ? A : never

/** CI always runs it: its machine installs the data plane (`.ci/run`). */
const available = DataPlane.available() || process.env.CI === "true"

let plane: DataPlane.DataPlane
beforeAll(async () => {
  if (!available) return
  if (!DataPlane.available()) throw new Error("OVN's data plane is not installed (.ci/run installs it), or not root")
  plane = await DataPlane.DataPlane.start()
  await plane.nbctl(KubeOvn.externalNetwork)
  await plane.addHost({
    name: "internet",
    mac: "0a:00:00:00:ff:01",
    address: `${KubeOvn.EXTERNAL_GATEWAY}/24`,
    gateway: KubeOvn.EXTERNAL_GATEWAY,
    extra: [CLIENT, SERVER]
  }, "br-ex")
}, 60_000)
afterAll(async () => {
  if (available) await plane.stop()
}, 60_000)

/** An end of a flow: a pod of the tenant's (with where it runs), or the internet. */
type End = { readonly kind: "pod"; readonly pod: Json; readonly host: string; readonly ip: string } | {
  readonly kind: "internet"
}

const endText = (end: End) => end.kind === "pod" ? `pod ${end.pod.name} (${end.ip})` : "the internet"

layer(testServer(), { excludeTestServices: true, timeout: 900_000 })("packets", (it) => {
  let tenants = 0
  let flows = 0
  let runs = 0

  it.effect.prop(
    "random tenants, random flows: every packet's fate is what explain and reachability answer",
    [Tenant],
    ([spec]) =>
      Effect.gen(function*() {
        if (!available) return
        yield* setProviderConfig()
        const built = yield* build(spec)
        const placed = place(built, runs++)
        try {
          yield* deploy(built, placed)
          const ends: ReadonlyArray<End> = [
            ...placed.pods.map((p) => ({ kind: "pod" as const, pod: p.pod, host: p.host, ip: p.ip })),
            { kind: "internet" as const }
          ]
          const cases = spec.flows.map((f) => {
            const from = ends[f.from % ends.length]!
            const others = ends.filter((e) => e !== from && (from.kind === "pod" || e.kind === "pod"))
            return { from, to: others[f.to % others.length]!, protocol: f.protocol, port: f.port }
          })
          // Everything listens first, on every port a flow uses: a refused connect is no verdict.
          for (const { port, protocol, to } of cases) {
            if (protocol === "icmp") continue
            if (to.kind === "pod") yield* Effect.promise(() => plane.listen(to.host, protocol, port))
            else yield* Effect.promise(() => plane.listen("internet", protocol, port, [SERVER]))
          }
          const fates = yield* Effect.promise(() =>
            Promise.all(cases.map((c) => plane.probe(packetOf(c, placed.eips))))
          )
          for (const [i, c] of cases.entries()) {
            const vpc = c.from.kind === "pod" ? c.from.pod.vpc_id : (c.to as { pod: Json }).pod.vpc_id
            const source = c.from
            const target = c.to
            const from = c.from.kind === "pod" ? c.from.pod.id : CLIENT
            const to = c.to.kind === "pod" ? c.to.pod.id : SERVER
            const explained = (yield* raw(
              "GET",
              `/vpcs/${vpc}/explain?from=${from}&to=${to}&protocol=${c.protocol}${
                c.protocol === "icmp" ? "" : `&port=${c.port}`
              }`,
              { headers: built.w.headers }
            )).body as Json
            const label = `${c.protocol}${c.protocol === "icmp" ? "" : ` ${c.port}`} from ${endText(c.from)} to ${
              endText(c.to)
            }: explain says ${explained.reach} (${JSON.stringify(explained.denied_flow ?? explained.allowed_flow)})`
            expect(explained.reach === "allowed" ? true : explained.reach === "denied" ? false : explained.reach, label)
              .toBe(fates[i])
            if (source.kind === "pod" && target.kind === "pod") {
              const matrix = built.matrices.get(source.pod.vpc_id) ?? (yield* matrixOf(built, source.pod.vpc_id))
              // A VPC's matrix holds its own pods' pairs; another VPC's pods are in it as their VPC.
              const pair = (matrix.pairs as Array<Json>).find((p) =>
                p.from.pod_id === source.pod.id && p.to.pod_id === target.pod.id
              )
              expect(pair !== undefined, label).toBe(source.pod.vpc_id === target.pod.vpc_id)
              if (pair !== undefined) {
                const cell = c.protocol === "icmp"
                  ? pair.icmp.reach === "allowed"
                  : portsHold(pair[c.protocol].allowed, c.port)
                expect(cell, `reachability: ${label}`).toBe(fates[i])
              }
            }
          }
          tenants++
          flows += cases.length
        } finally {
          yield* Effect.promise(() => teardown(placed))
        }
      }),
    // About 4 s a tenant alone, most of it the kernel making and taking down namespaces; three
    // times that under the whole suite's load (15 tenants in 240 s on a 2-core machine).
    { timeout: 900_000, fastCheck: { numRuns: 20, endOnFailure: true } }
  )

  it.skipIf(!available)("the run crossed at least 20 tenants and 200 flows", () => {
    expect(tenants).toBeGreaterThanOrEqual(20)
    expect(flows).toBeGreaterThanOrEqual(200)
  })
})

const portsHold = (text: string, port: number) =>
  text !== "" &&
  text.split(",").some((range) => {
    const [a, b] = range.split("-").map(Number)
    return a! <= port && port <= (b ?? a!)
  })

/** The tenant made through the API, and the specs and plans the cluster was asked to hold. */
const build = (spec: TenantSpec) =>
  Effect.gen(function*() {
    const w = yield* workspace
    const post = (path: string, body: Json) => raw("POST", path, { headers: w.headers, body })
    const vpcs: Array<Json> = []
    const subnets: Array<Json> = []
    const pods: Array<Json> = []
    for (const [i, v] of spec.vpcs.entries()) {
      const vpc = i === 0 && v.internet
        ? w.vpc
        : (yield* post("/vpcs", { ...w.creds, name: `v${i}`, enable_internet: v.internet })).body as Json
      vpcs.push(vpc)
      const own: Array<Json> = []
      for (let j = 0; j < v.subnets; j++) {
        const subnet = i === 0 && v.internet && j === 0 ? w.subnet : (yield* post("/subnets", {
          ...w.creds,
          vpc_id: vpc.id,
          name: `s${i}-${j}`,
          cidr: `10.${i}.${j + 1}.0/24`,
          gateway_ip: `10.${i}.${j + 1}.1`
        })).body as Json
        own.push(subnet)
      }
      subnets.push(...own)
      for (const { published, subnet } of v.pods) {
        const made = yield* w.createPod({
          vpc_id: vpc.id,
          subnet_id: own[subnet % own.length]!.id,
          name: `p${pods.length}`,
          ...(published === null ? {} : { service_port: published, external_access: true, external_inbound: true })
        })
        expect(made.status, made.text).toBe(200)
        pods.push(made.body as Json)
      }
    }
    const sets: Array<Json> = []
    for (const [n, entries] of spec.sets.entries()) {
      const made = yield* post("/address-sets", { name: `set${n}`, entries: entries.map((cidr) => ({ cidr })) })
      expect(made.status, made.text).toBe(201)
      sets.push(made.body as Json)
    }
    for (const [n, r] of spec.rules.entries()) {
      const vpc = vpcs[r.vpc % vpcs.length]!
      const ownSubnets = subnets.filter((s) => s.vpc_id === vpc.id)
      const ownPods = pods.filter((p) => p.vpc_id === vpc.id)
      const made = yield* post("/security-rules", {
        vpc_id: vpc.id,
        name: `r${n}`,
        direction: r.direction,
        action: r.action,
        priority: r.priority,
        protocol: r.protocol,
        ...(r.protocol === "tcp" || r.protocol === "udp" ? { ports: r.ports } : {}),
        ...(r.remote.kind === "cidr" || (r.remote.kind === "set" && sets.length === 0)
          ? { remote_type: "cidr", remote_cidr: r.remote.kind === "cidr" ? r.remote.cidr : "0.0.0.0/0" }
          : r.remote.kind === "set"
          ? { remote_type: "address_set", remote_address_set_id: sets[r.remote.set % sets.length]!.id }
          : { remote_type: "vpc", remote_vpc_id: vpcs[r.remote.vpc % vpcs.length]!.id }),
        ...(r.target.kind === "subnet"
          ? { target_type: "subnet", target_subnet_id: ownSubnets[r.target.subnet % ownSubnets.length]!.id }
          : r.target.kind === "pod"
          ? { target_type: "pods", target_pod_ids: [ownPods[r.target.pod % ownPods.length]!.id] }
          : {})
      })
      expect(made.status, made.text).toBe(201)
    }
    const snapshot = yield* Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot)
    const ids = new Set(vpcs.map((v) => v.id as string))
    return {
      w,
      vpcs,
      subnets,
      pods,
      matrices: new Map<string, Json>(),
      cluster: {
        vpcs: snapshot.vpcs.filter((v) => ids.has(v.vpc_id)),
        subnets: snapshot.subnets.filter((s) => ids.has(s.vpc_id)),
        plans: snapshot.plans.filter((p) => ids.has(p.vpc_id)),
        pods: snapshot.pods.filter((p) => ids.has(p.spec.vpc_id))
      }
    }
  })

type Built = Effect.Effect.Success<ReturnType<typeof build>>

const matrixOf = (built: Built, vpc: string) =>
  Effect.gen(function*() {
    const matrix = (yield* raw("GET", `/vpcs/${vpc}/reachability?detail=pods&limit=500`, { headers: built.w.headers }))
      .body as Json
    built.matrices.set(vpc, matrix)
    return matrix
  })

/**
 * Where each pod runs: a namespace of its own (named for the run, so what a failed run left
 * behind is never in the way) at an address of its subnet.
 */
const place = (built: Built, run: number) => {
  const pods = built.pods.map((pod, k) => {
    const subnet = built.subnets.find((s) => s.id === pod.subnet_id)!
    return {
      pod,
      host: `r${run}p${k}`,
      mac: `0a:00:00:00:${(k + 1).toString(16).padStart(2, "0")}:0a`,
      ip: subnet.cidr.replace(/0\/24$/, String(10 + k)) as string,
      gateway: subnet.gateway_ip as string,
      subnet: Names.subnet(subnet.id)
    }
  })
  return { pods, eips: new Map<string, string | null>(), teardown: [] as Array<ReadonlyArray<string>> }
}

type Placed = ReturnType<typeof place>

/** The tenant on the data plane: its pods as namespaces, what Tenet renders as Kube-OVN makes it. */
const deploy = (built: Built, at: Placed) =>
  Effect.promise(async () => {
    const placed = at.pods
    const addressOf = (podId: Ids.PodId) => placed.filter((p) => p.pod.id === podId).map((p) => p.ip)
    const settings = Manifests.defaultSettings
    const objects: Array<Manifests.Manifest> = [
      ...built.cluster.vpcs.flatMap((vpc) => Manifests.vpc(vpc, settings)),
      ...built.cluster.subnets.flatMap((subnet) => {
        const plan = built.cluster.plans.find((p) => p.vpc_id === subnet.vpc_id)
        const acls = plan === undefined ? [] : OvnAcl.render(plan, addressOf).get(subnet.subnet_id) ?? []
        return [Manifests.subnet(subnet, acls), ...Manifests.subnetEgress(subnet)]
      }),
      ...built.cluster.pods.flatMap(({ spec }) => {
        const at = addressOf(spec.pod_id)
        return Manifests.pod(spec, settings, { vip: at[0] ?? null, replicas: at })
      })
    ]
    const northbound = KubeOvn.translate(objects, placed)
    at.teardown.push(...northbound.teardown)
    if (process.env.TENET_PACKETS_DEBUG) console.log(northbound.commands.map((c) => c.join(" ")).join("\n"))
    for (const [pod, address] of eipsOf(northbound.eips, built)) at.eips.set(pod, address)
    for (const p of placed) {
      await plane.addHost({ name: p.host, mac: p.mac, address: `${p.ip}/24`, gateway: p.gateway }, "br-int")
    }
    await plane.nbctl(northbound.commands)
    await plane.purge()
  })

/** Where the internet sends to reach a pod: its own external address, or its VPC's, if either exists. */
const eipsOf = (eips: ReadonlyMap<string, string>, built: Built) =>
  new Map(
    built.pods.map((pod) => [
      pod.id as string,
      eips.get(Names.podEip(pod.id)) ?? eips.get(Names.vpcEgress(pod.vpc_id)) ?? null
    ])
  )

/** The packet a flow is: from a pod's namespace, or from an internet host to the pod's external address. */
const packetOf = (
  c: { readonly from: End; readonly to: End; readonly protocol: "tcp" | "udp" | "icmp"; readonly port: number },
  eips: ReadonlyMap<string, string | null>
): DataPlane.Probe => {
  const port = c.protocol === "icmp" ? null : c.port
  if (c.from.kind === "pod") {
    return { from: c.from.host, dst: c.to.kind === "pod" ? c.to.ip : SERVER, protocol: c.protocol, port }
  }
  const pod = (c.to as { pod: Json }).pod
  // With no external address, nothing on the internet can even address the pod, and nothing
  // publishes ICMP (an echo to an external address is the router's to answer, not the pod's): a
  // documentation address no route leads to stands for it.
  const dst = c.protocol === "icmp" ? undefined : eips.get(pod.id)
  return { from: "internet", src: CLIENT, dst: dst ?? "192.0.2.1", protocol: c.protocol, port }
}

const teardown = async (placed: Placed) => {
  await plane.nbctl(placed.teardown)
  for (const p of placed.pods) await plane.removeHost(p.host, "br-int")
  await plane.purge()
}
