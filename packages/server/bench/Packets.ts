/**
 * How fast a change is in force, in packets: from a rule create's answer to the first packet
 * that obeys it, on OVN's real data plane (`test/DataPlane.ts`). A tenant of two peered VPCs,
 * each with a subnet and a pod, runs on the in-process server; what the cluster was asked to
 * hold is rendered as the Kubernetes adapter renders it and made into OVN's northbound objects as
 * Kube-OVN makes them (`test/KubeOvnNorthbound.ts`). Each round creates a rule letting tcp 8080
 * in from the other VPC; once answered, the changed Subnet's ACLs go to the northbound database
 * (as Kube-OVN's controller would on the Subnet's update) and a connect is tried every 5 ms
 * until one gets through; then the rule is deleted and the port closed again. Then the packet
 * differential's own run time (`test/Packets.test.ts`). Needs the data plane's binaries and
 * root; without them it says so and measures nothing.
 *
 *   node --conditions=@tenet/source --import tsx packages/server/bench/Packets.ts
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Manifests, Names, OvnAcl } from "@tenet/adapters-k8s"
import { SimulatedCluster } from "@tenet/adapters-memory"
import type { Ids } from "@tenet/core"
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { TestServer } from "../src/index.js"
import * as DataPlane from "../test/DataPlane.js"
import * as KubeOvn from "../test/KubeOvnNorthbound.js"

export const available = DataPlane.available

export interface ChangeToPacket {
  /** Per round, milliseconds from the create's answer to the first connect that got through. */
  readonly millis: ReadonlyArray<number>
  /** Of those, the northbound transaction until the chassis had its flows (`--wait=hv`). */
  readonly northbound: ReadonlyArray<number>
  /** The packet differential's wall time, in seconds. */
  readonly differential: number
}

/** What the benchmark reads of an answer: an id, a token, a created rule's id. */
interface Json {
  readonly id: string
  readonly api_token: string
  readonly rule: { readonly id: string }
}

const call = (method: "GET" | "POST" | "DELETE", path: string, headers: Record<string, string>, body?: unknown) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(headers))
    if (body !== undefined) request = yield* HttpClientRequest.bodyJson(request, body)
    const response = yield* http.execute(request)
    const json = (response.status === 204 ? {} : yield* response.json) as Json
    if (response.status >= 300) return yield* Effect.die(new Error(`${method} ${path}: ${JSON.stringify(json)}`))
    return json
  }).pipe(Effect.scoped, Effect.orDie)

export const run = (rounds = 30) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(TestServer.layer())
    const inServer = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient>) => Effect.provide(effect, context)
    const admin = yield* inServer(call("POST", "/admin/login", {}, {
      username: TestServer.ADMIN_USERNAME,
      password: TestServer.ADMIN_PASSWORD
    }))
    yield* inServer(call("POST", "/provider-config", { "x-admin-token": admin.api_token }, {
      external_subnet_cidr: KubeOvn.EXTERNAL_CIDR,
      external_subnet_gateway: KubeOvn.EXTERNAL_GATEWAY,
      peering_subnet_cidr: "100.64.0.0/16"
    }))
    yield* inServer(call("POST", "/tenants", { "x-admin-token": admin.api_token }, {
      name: "packets",
      password: "packets-password"
    }))
    const login = yield* inServer(call("POST", "/tenants/login", {}, { name: "packets", password: "packets-password" }))
    const headers = { "x-auth-token": login.api_token }
    const creds = { tenant_id: login.id, token: login.api_token }
    const network = (i: number) =>
      Effect.gen(function*() {
        const vpc = yield* inServer(call("POST", "/vpcs", headers, { ...creds, name: `v${i}`, enable_internet: true }))
        const subnet = yield* inServer(call("POST", "/subnets", headers, {
          ...creds,
          vpc_id: vpc.id,
          name: `s${i}`,
          cidr: `10.${i}.1.0/24`,
          gateway_ip: `10.${i}.1.1`
        }))
        const pod = yield* inServer(call("POST", "/pods", headers, {
          ...creds,
          vpc_id: vpc.id,
          subnet_id: subnet.id,
          name: `p${i}`,
          container_image: "nginx:1.27"
        }))
        return { vpc, subnet, pod }
      })
    const a = yield* network(0)
    const b = yield* network(1)
    // b's rule naming a peers the two; the rounds' rules are a's.
    yield* inServer(call("POST", "/security-rules", headers, {
      vpc_id: b.vpc.id,
      name: "to a",
      direction: "egress",
      action: "allow",
      priority: 100,
      protocol: "tcp",
      remote_type: "vpc",
      remote_vpc_id: a.vpc.id
    }))
    const hosts = [
      {
        pod: a.pod,
        host: "bench-a",
        mac: "0a:00:00:00:01:0a",
        ip: "10.0.1.10",
        subnet: Names.subnet(a.subnet.id as Ids.SubnetId)
      },
      {
        pod: b.pod,
        host: "bench-b",
        mac: "0a:00:00:00:02:0a",
        ip: "10.1.1.10",
        subnet: Names.subnet(b.subnet.id as Ids.SubnetId)
      }
    ]
    const addressOf = (id: Ids.PodId) => hosts.filter((h) => h.pod.id === id).map((h) => h.ip)
    const snapshot = Effect.provide(Effect.flatMap(SimulatedCluster.ClusterSwitches, (c) => c.snapshot), context)
    /** The Subnet objects' ACLs as the cluster now holds the plans. */
    const aclsNow = Effect.map(snapshot, (cluster) =>
      cluster.subnets.filter((s) =>
        s.vpc_id === a.vpc.id || s.vpc_id === b.vpc.id
      ).map((s) => ({
        spec: s,
        acls: OvnAcl.render(cluster.plans.find((p) => p.vpc_id === s.vpc_id)!, addressOf).get(s.subnet_id) ?? []
      })))
    const plane = yield* Effect.promise(() => DataPlane.DataPlane.start())
    try {
      const cluster = yield* snapshot
      const settings = Manifests.defaultSettings
      const objects = [
        ...cluster.vpcs.filter((v) => v.vpc_id === a.vpc.id || v.vpc_id === b.vpc.id).flatMap((v) =>
          Manifests.vpc(v, settings)
        ),
        ...(yield* aclsNow).map(({ acls, spec }) => Manifests.subnet(spec, acls))
      ]
      const northbound = KubeOvn.translate(objects, hosts)
      yield* Effect.promise(async () => {
        await plane.nbctl(KubeOvn.externalNetwork)
        for (const h of hosts) {
          await plane.addHost(
            { name: h.host, mac: h.mac, address: `${h.ip}/24`, gateway: h.ip.replace(/\d+$/, "1") },
            "br-int"
          )
        }
        await plane.nbctl(northbound.commands)
        await plane.listen("bench-a", "tcp", 8080)
      })
      /** The changed ACLs of a's switch, as Kube-OVN applies a Subnet's update. */
      const applyAcls = Effect.flatMap(aclsNow, (now) => {
        const { acls } = now.find(({ spec }) => spec.subnet_id === a.subnet.id)!
        const sw = Names.subnet(a.subnet.id as Ids.SubnetId)
        return Effect.promise(() =>
          plane.nbctl([
            ["acl-del", sw],
            ...acls.map((acl) => ["acl-add", sw, acl.direction, String(acl.priority), acl.match, acl.action])
          ])
        )
      })
      const connects = () => plane.probe({ from: "bench-b", dst: "10.0.1.10", protocol: "tcp", port: 8080 })
      const millis: Array<number> = []
      const northboundMillis: Array<number> = []
      for (let round = 0; round < rounds; round++) {
        const made = yield* inServer(call("POST", "/security-rules", headers, {
          vpc_id: a.vpc.id,
          name: `8080 from b ${round}`,
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          ports: "8080",
          remote_type: "vpc",
          remote_vpc_id: b.vpc.id
        }))
        const answered = performance.now()
        yield* applyAcls
        northboundMillis.push(performance.now() - answered)
        yield* Effect.promise(async () => {
          while (!(await connects())) await new Promise((resolve) => setTimeout(resolve, 5))
        })
        millis.push(performance.now() - answered)
        yield* inServer(call("DELETE", `/security-rules/${made.rule.id}`, headers))
        yield* applyAcls
        yield* Effect.promise(() => plane.purge())
      }
      return { millis, northbound: northboundMillis }
    } finally {
      yield* Effect.promise(() => plane.stop())
    }
  }).pipe(
    Effect.scoped,
    // One data plane at a time: each vswitchd makes its bridges' devices in the host's namespace.
    Effect.map((rounds): ChangeToPacket => {
      const started = performance.now()
      execFileSync("npx", ["vitest", "run", "--project", "server", "test/Packets.test.ts"], {
        cwd: fileURLToPath(new URL("..", import.meta.url)),
        stdio: "ignore"
      })
      return { ...rounds, differential: (performance.now() - started) / 1000 }
    })
  )

/** The middle of sorted samples. */
const median = (sorted: ReadonlyArray<number>) => sorted[Math.floor(sorted.length / 2)]!

export const toMarkdown = (result: ChangeToPacket) => {
  const sorted = [...result.millis].sort((x, y) => x - y)
  const nb = [...result.northbound].sort((x, y) => x - y)
  const ms = (n: number) => `${n.toFixed(0)} ms`
  return [
    "| from a rule create's answer to | median | worst | rounds |",
    "|---|---:|---:|---:|",
    `| its ACLs in OVN's flows (the northbound transaction, \`--wait=hv\`) | ${ms(median(nb))} | ${
      ms(nb.at(-1)!)
    } | ${nb.length} |`,
    `| the first packet that obeys it (a tcp connect from the peered VPC) | ${ms(median(sorted))} | ${
      ms(sorted.at(-1)!)
    } | ${sorted.length} |`,
    "",
    `The packet differential (20 random tenants, 200 flows, \`test/Packets.test.ts\`): ${
      result.differential.toFixed(0)
    } s of wall time, its vitest start included.`
  ].join("\n")
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (!available()) console.log("No OVN data plane here (openvswitch-switch, ovn-host, ethtool, root): not measured.")
  else console.log(toMarkdown(await Effect.runPromise(run())))
}
