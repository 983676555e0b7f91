/**
 * What gets where, through the API: `GET /vpcs/{id}/reachability`, `GET /vpcs/{id}/explain`
 * and `POST /security-rules/evaluate` give one answer to one question: `allowed` (every flow),
 * `partial` (some) or `denied` (none), with a flow of each side and the VPC whose rules judge
 * each half. A differential property builds random tenants through the API and holds all
 * three to the reference interpreter (`@tenet/core/testing`'s `Reference`).
 */
import { expect, layer } from "@effect/vitest"
import { Net, Paths, RuleSet } from "@tenet/core"
import { Reference } from "@tenet/core/testing"
import { Effect, FastCheck as fc } from "effect"
import { raw, setProviderConfig, testServer, uniqueName, workspace } from "./Harness.js"

type Json = Record<string, any>

const PEERING = "100.64.0.0/16"

/** A tenant to build through the API: VPCs with subnets (`10.<vpc>.<subnet>.0/24`) and pods, and rules. */
const World = fc.record({
  vpcs: fc.array(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 2 }), {
    minLength: 1,
    maxLength: 3
  }),
  rules: fc.array(
    fc.record({
      vpc: fc.nat(),
      direction: fc.constantFrom("ingress", "egress"),
      action: fc.constantFrom("allow", "deny"),
      priority: fc.integer({ min: 1, max: 20 }),
      protocol: fc.constantFrom("tcp", "udp", "icmp", "all"),
      ports: fc.option(fc.constantFrom("22", "20-30", "53,80", "443", "1-1024"), { nil: null }),
      remote: fc.oneof(
        fc.constantFrom("0.0.0.0/0", "10.0.0.0/8", "10.1.0.0/16", "10.0.1.0/24", "10.2.0.5/32", "203.0.113.0/24")
          .map((cidr) => ({ kind: "cidr" as const, cidr })),
        fc.nat().map((vpc) => ({ kind: "vpc" as const, vpc }))
      ),
      target: fc.oneof(
        fc.constant({ kind: "vpc" as const }),
        fc.nat().map((subnet) => ({ kind: "subnet" as const, subnet })),
        fc.array(fc.nat(), { minLength: 1, maxLength: 2 }).map((pods) => ({ kind: "pods" as const, pods }))
      ),
      enabled: fc.integer({ min: 0, max: 4 }).map((n) => n > 0)
    }),
    { minLength: 1, maxLength: 8 }
  ),
  // A VPC made, named by rules, then deleted: their rules report remote_vpc_missing and are skipped.
  orphan: fc.boolean(),
  // VPCs after the first without the internet; pods published to it on their service port.
  offline: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
  published: fc.array(fc.option(fc.constantFrom(22, 53, 443), { nil: null }), { minLength: 6, maxLength: 6 }),
  guardrail: fc.boolean()
})

/** A tenant built from a `World`: its ids, and the reference's view of its rules and contexts. */
type WorldSpec = typeof World extends fc.Arbitrary<infer A> ? A : never

const build = (world: WorldSpec) =>
  Effect.gen(function*() {
    const w = yield* workspace
    const post = (path: string, body: Json) => raw("POST", path, { headers: w.headers, body })
    // The workspace's own VPC holds 10.0.1.0/24 already: it stands as VPC 0's first subnet.
    const vpcs: Array<Json> = [w.vpc]
    for (let i = 1; i < world.vpcs.length; i++) {
      vpcs.push((yield* post("/vpcs", { ...w.creds, name: `v${i}`, enable_internet: !world.offline[i]! })).body as Json)
    }
    const subnets: Array<Json> = [w.subnet]
    const pods: Array<Json> = []
    for (const [i, podCounts] of world.vpcs.entries()) {
      for (const [j, count] of podCounts.entries()) {
        const subnet = i === 0 && j === 0 ? w.subnet : (yield* post("/subnets", {
          ...w.creds,
          vpc_id: vpcs[i]!.id,
          name: `s${i}-${j + 1}`,
          cidr: `10.${i}.${j + 2}.0/24`,
          gateway_ip: `10.${i}.${j + 2}.1`
        })).body as Json
        if (i !== 0 || j !== 0) subnets.push(subnet)
        for (let k = 0; k < count; k++) {
          const published = world.published[pods.length % world.published.length]!
          pods.push(
            (yield* w.createPod({
              vpc_id: vpcs[i]!.id,
              subnet_id: subnet.id,
              name: uniqueName("p"),
              ...(published === null
                ? {}
                : { service_port: published, external_access: true, external_inbound: true })
            })).body as Json
          )
        }
      }
    }
    const gone = world.orphan ? yield* w.newVpc("gone") : undefined
    if (world.guardrail) {
      yield* post(`/vpcs/${vpcs[0]!.id}/guardrails`, {
        name: "no telnet",
        require: "deny",
        direction: "ingress",
        protocol: "tcp",
        ports: "23",
        remote_cidr: "0.0.0.0/0",
        local: null
      })
    }
    const remoteVpcs = gone === undefined ? vpcs : [...vpcs, gone]
    for (const [n, r] of world.rules.entries()) {
      const vpc = vpcs[r.vpc % vpcs.length]!
      const own = subnets.filter((s) => s.vpc_id === vpc.id)
      const ownPods = pods.filter((p) => p.vpc_id === vpc.id)
      const target = r.target.kind === "subnet" && own.length > 0
        ? { target_type: "subnet", target_subnet_id: own[r.target.subnet % own.length]!.id }
        : r.target.kind === "pods" && ownPods.length > 0
        ? {
          target_type: "pods",
          target_pod_ids: [...new Set(r.target.pods.map((p: number) => ownPods[p % ownPods.length]!.id))]
        }
        : { target_type: "vpc" }
      // Refused ones (a guardrail they would break) are simply not there.
      yield* post("/security-rules", {
        vpc_id: vpc.id,
        name: `r${n}`,
        direction: r.direction,
        action: r.action,
        priority: r.priority,
        protocol: r.protocol,
        ...(r.protocol === "tcp" || r.protocol === "udp" ? { ports: r.ports } : {}),
        ...(r.remote.kind === "cidr"
          ? { remote_type: "cidr", remote_cidr: r.remote.cidr }
          : { remote_type: "vpc", remote_vpc_id: remoteVpcs[r.remote.vpc % remoteVpcs.length]!.id }),
        ...target,
        enabled: r.enabled
      })
    }
    if (gone !== undefined) yield* raw("DELETE", `/vpcs/${gone.id}`, { headers: w.headers })

    // The reference's view: each VPC's rules in evaluation order and its context, from what the API shows.
    const rulesOf = new Map<string, ReadonlyArray<RuleSet.Rule>>()
    const records: Array<Json> = []
    for (const vpc of vpcs) {
      const list = (yield* raw("GET", `/security-rules?vpc_id=${vpc.id}`, { headers: w.headers })).body as Json
      records.push(...list.rules)
      rulesOf.set(vpc.id, list.rules.map((r: Json, seq: number) => RuleSet.fromRecord({ ...r, seq } as never)))
    }
    // Two VPCs are peered while an enabled allow rule of either names the other (none overlap here).
    const connections = Paths.connections({ vpcs: vpcs as never, subnets: subnets as never, rules: records as never })
    const contextOf = new Map(
      vpcs.map((v) => [
        v.id as string,
        RuleSet.contextOf(v.id, {
          vpcs: vpcs as never,
          subnets: subnets as never,
          pods: pods as never,
          tunnels: [],
          addressSets: [],
          connections,
          peeringCidr: PEERING
        })
      ])
    )
    const reference: Reference.World = {
      rules: (vpc) => rulesOf.get(vpc) ?? [],
      context: (vpc) => contextOf.get(vpc)!
    }
    return { w, vpcs, subnets, pods, reference }
  })

type Built = Effect.Effect.Success<ReturnType<typeof build>>

/** A port string (`22,80-443`) as ranges. */
const rangesOf = (text: string) =>
  text === "" ? [] : text.split(",").map((r) => r.split("-").map(Number)).map(([a, b]) => [a!, b ?? a!] as const)

const cellReach = (cell: Json, port: number) =>
  rangesOf(cell.allowed).some(([a, b]) => a <= port && port <= b)
    ? "allowed"
    : rangesOf(cell.partial).some(([a, b]) => a <= port && port <= b)
    ? "partial"
    : "denied"

/** The reference's end for an endpoint the API names, in the context of the VPC asked about. */
const refEnd = (built: Built, vpcId: string, e: Json): Reference.End => {
  const context = built.reference.context(vpcId)
  switch (e.kind) {
    case "subnet":
      return Reference.ends.subnet(built.reference.context(e.vpc_id ?? vpcId), e.subnet_id)
    case "pod":
      return Reference.ends.pod(built.reference.context(e.vpc_id ?? vpcId), e.pod_id)
    case "vpc":
      return Reference.ends.vpc(built.reference.context(e.vpc_id))
    default:
      return Reference.ends.internet(context)
  }
}

const idOf = (e: Json) => e.kind === "internet" ? "internet" : e.pod_id ?? e.subnet_id ?? e.vpc_id

/** A rule denying one pod DNS out (udp 53 anywhere): the body of `POST /security-rules`. */
const noDnsFor = (vpcId: string, podId: string, name: string) => ({
  vpc_id: vpcId,
  name,
  direction: "egress",
  action: "deny",
  priority: 10,
  protocol: "udp",
  ports: "53",
  remote_type: "cidr",
  remote_cidr: "0.0.0.0/0",
  target_type: "pods",
  target_pod_ids: [podId]
})

/**
 * Each end of a flow that is in a subnet (a pod, or another endpoint of it) at an address such
 * an endpoint can have: inside the subnet's block, and none of its network, broadcast and
 * gateway addresses.
 */
const expectHosts = (subnets: ReadonlyArray<Json>, path: Json | null) => {
  if (path === null) return
  for (const end of [path.source, path.destination]) {
    if (end.subnet_id === null) continue
    const subnet = subnets.find((s) => s.id === end.subnet_id)!
    const block = Net.cidrOf(subnet.cidr)
    expect(Net.contains(block, Net.ipv4Of(end.ip)), `${end.ip} in ${subnet.cidr}`).toBe(true)
    expect([Net.networkOf(block), Net.broadcastOf(block)].map(Net.formatIpv4)).not.toContain(end.ip)
    expect(end.ip).not.toBe(subnet.gateway_ip)
  }
}

const localOf = (end: Json) =>
  end.pod_id !== null ? { pod_id: end.pod_id } : end.subnet_id !== null ? { subnet_id: end.subnet_id } : {}

/** A witness end to end, checked flow by flow against the reference: its path and each half. */
const expectPath = (built: Built, path: Json | null, gets: boolean, half: "both" | "egress" | "ingress") => {
  if (path === null) return
  expectHosts(built.subnets, path)
  const routed = Reference.carries(
    built.reference,
    path.source.vpc_id,
    path.destination.vpc_id,
    localOf(path.destination),
    path.protocol,
    path.port
  )
  expect(path.route === null, JSON.stringify(path)).toBe(routed)
  const egress = Reference.halfAction(
    built.reference,
    path.source.vpc_id,
    "egress",
    path.protocol,
    path.port,
    localOf(path.source),
    Net.ipv4Of(path.destination.ip)
  )
  const ingress = Reference.halfAction(
    built.reference,
    path.destination.vpc_id,
    "ingress",
    path.protocol,
    path.port,
    localOf(path.destination),
    Net.ipv4Of(path.source.ip)
  )
  expect(path.egress?.action ?? "allow").toBe(egress)
  expect(path.ingress?.action ?? "allow").toBe(ingress)
  const through = half === "egress"
    ? egress === "allow"
    : half === "ingress"
    ? ingress === "allow"
    : routed && egress === "allow" && ingress === "allow"
  expect(through).toBe(gets)
}

/**
 * `evaluate` asked a witness's half as a question of its own (the local end as the API names
 * it: a pod, or a subnet's every endpoint): the reference's answer over that question's flows,
 * each carried by a path or stopped there.
 */
const expectEvaluate = (built: Built, path: Json, direction: "egress" | "ingress") =>
  Effect.gen(function*() {
    const [here, there] = direction === "egress" ? [path.source, path.destination] : [path.destination, path.source]
    if (here.vpc_id === null) return
    const answer = (yield* raw("POST", "/security-rules/evaluate", {
      headers: built.w.headers,
      body: {
        vpc_id: here.vpc_id,
        direction,
        protocol: path.protocol,
        ...(path.port === null ? {} : { port: path.port }),
        remote_ip: there.ip,
        ...(here.pod_id !== null
          ? { target_pod_id: here.pod_id }
          : here.subnet_id !== null
          ? { target_subnet_id: here.subnet_id }
          : {})
      }
    })).body as Json
    const context = built.reference.context(here.vpc_id)
    const locals = here.pod_id !== null
      ? [{ pod_id: here.pod_id }]
      : here.subnet_id !== null
      ? Reference.ends.subnet(context, here.subnet_id).locals.map((l) => l.local)
      : [
        {},
        ...[...context.subnets.keys()].map((subnet_id) => ({ subnet_id })),
        ...[...context.pods.keys()].map((pod_id) => ({ pod_id }))
      ]
    const routed = (local: Json) =>
      direction === "egress"
        ? Reference.carries(built.reference, here.vpc_id, there.vpc_id, {}, path.protocol, path.port)
        : Reference.carries(built.reference, there.vpc_id, here.vpc_id, local, path.protocol, path.port)
    const actions = locals.map((local) =>
      routed(local)
        ? Reference.halfAction(
          built.reference,
          here.vpc_id,
          direction,
          path.protocol,
          path.port,
          local,
          Net.ipv4Of(there.ip)
        )
        : "deny"
    )
    const allowed = actions.filter((a) => a === "allow").length
    expect(answer.reach).toBe(allowed === 0 ? "denied" : allowed < actions.length ? "partial" : "allowed")
  })

layer(testServer(), { excludeTestServices: true, timeout: 120_000 })("what gets where", (it) => {
  it.effect.prop(
    "random tenants, every pair, sampled ports: reachability, explain and evaluate agree with the reference interpreter",
    { world: World, pick: fc.array(fc.nat(), { minLength: 4, maxLength: 4 }) },
    ({ pick, world }) =>
      Effect.gen(function*() {
        yield* setProviderConfig()
        const built = yield* build(world)
        const cuts = Reference.edges(built.reference, built.vpcs.map((v) => v.id))
        const ports = Reference.portCuts(built.vpcs.flatMap((v) => built.reference.rules(v.id)))
        for (const [v, vpc] of built.vpcs.entries()) {
          const matrix = (yield* raw("GET", `/vpcs/${vpc.id}/reachability?detail=pods`, { headers: built.w.headers }))
            .body as Json
          const pairs = matrix.pairs as Array<Json>
          // Every cell of every pair on a few ports; a few pairs through explain and evaluate too.
          for (const [p, pair] of pairs.entries()) {
            const from = refEnd(built, vpc.id, pair.from)
            const to = refEnd(built, vpc.id, pair.to)
            for (const protocol of ["tcp", "udp", "icmp"] as const) {
              expectHosts(built.subnets, pair[protocol].allowed_flow)
              expectHosts(built.subnets, pair[protocol].denied_flow)
              const tried = protocol === "icmp" ? [null] : ports.filter((_, i) => (i + p) % 3 === 0)
              for (const port of tried) {
                const expected = Reference.reach(built.reference, cuts, from, to, protocol, port)
                const cell = protocol === "icmp" ? pair.icmp.reach : cellReach(pair[protocol], port!)
                expect(cell, `${idOf(pair.from)} -> ${idOf(pair.to)} ${protocol}/${port}`).toBe(expected.reach)
              }
            }
          }
          // A VPC without subnets has no pair of its own.
          if (pairs.length === 0) continue
          const pair = pairs[pick[v]! % pairs.length]!
          const protocol = (["tcp", "udp", "icmp"] as const)[pick[3]! % 3]!
          const port = protocol === "icmp" ? null : ports[pick[v]! % ports.length]!
          const explained = (yield* raw(
            "GET",
            `/vpcs/${vpc.id}/explain?from=${idOf(pair.from)}&to=${idOf(pair.to)}&protocol=${protocol}${
              port === null ? "" : `&port=${port}`
            }`,
            { headers: built.w.headers }
          )).body as Json
          const from = refEnd(built, vpc.id, pair.from)
          const to = refEnd(built, vpc.id, pair.to)
          expect(explained.reach).toBe(Reference.reach(built.reference, cuts, from, to, protocol, port).reach)
          expect(explained.reach).toBe(protocol === "icmp" ? pair.icmp.reach : cellReach(pair[protocol], port!))
          expectPath(built, explained.allowed_flow, true, "both")
          expectPath(built, explained.denied_flow, false, "both")
          expect(explained.route.reach).toBe(
            Reference.reach(built.reference, cuts, from, to, protocol, port, "route").reach
          )
          expect(explained.route.blocked_by === null).toBe(explained.route.reach === "allowed")
          for (const half of ["egress", "ingress"] as const) {
            const h = explained[half]
            expect(h.reach).toBe(Reference.reach(built.reference, cuts, from, to, protocol, port, half).reach)
            expectPath(built, h.allowed_flow, true, half)
            expectPath(built, h.denied_flow, false, half)
            for (const witness of [h.allowed_flow, h.denied_flow]) {
              if (witness !== null) yield* expectEvaluate(built, witness, half)
            }
          }
        }
      }),
    { timeout: 120_000, fastCheck: { numRuns: 25 } }
  )

  it.effect("a VPC without subnets sends nothing: reachability and explain both say denied, and why", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const empty = yield* w.newVpc("empty")
      const matrix = (yield* raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, { headers: w.headers }))
        .body as Json
      const cell = (matrix.pairs as Array<Json>).find((p) => p.from.kind === "vpc" && p.from.vpc_id === empty.id)!
      expect(cell).toMatchObject({
        tcp: { allowed: "", partial: "" },
        udp: { allowed: "", partial: "" },
        icmp: { reach: "denied" }
      })
      const explained = (yield* raw(
        "GET",
        `/vpcs/${w.vpc.id}/explain?from=${empty.id}&to=${w.subnet.id}&protocol=tcp&port=22`,
        { headers: w.headers }
      )).body as Json
      expect(explained).toMatchObject({
        reach: "denied",
        allowed_flow: null,
        denied_flow: null,
        note: expect.stringContaining("no address to send from"),
        // Both halves are named with the VPC whose rules judge them.
        egress: { vpc_id: empty.id, reach: "denied" },
        ingress: { vpc_id: w.vpc.id }
      })
    }))

  it.effect("a deny aimed at one pod of a subnet: the subnet reaches the internet on udp 53 partly, everywhere alike", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const quiet = (yield* w.createPod({ name: "quiet" })).body as Json
      yield* w.createPod({ name: "chatty" })
      yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: noDnsFor(w.vpc.id, quiet.id, "no dns for quiet")
      })
      const matrix = (yield* raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, { headers: w.headers }))
        .body as Json
      const cell = (matrix.pairs as Array<Json>).find((p) => p.from.kind === "subnet" && p.to.kind === "internet")!
      expect(cell.udp).toMatchObject({ allowed: "1-52,54-65535", partial: "53" })
      expect(cell.udp.denied_flow).toMatchObject({
        port: 53,
        source: { pod_id: quiet.id },
        egress: { action: "deny", decided_by: { kind: "rule", name: "no dns for quiet" } }
      })
      expect(cell.udp.allowed_flow).toMatchObject({ port: 53, egress: { action: "allow" } })
      // The exports say the same: a partial port is marked, its edge dashed.
      const csv = yield* raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, {
        headers: { ...w.headers, accept: "text/csv" }
      })
      expect(csv.text).toContain(`subnet,${w.subnet.id},apps,internet,,internet,1-65535,,"1-52,54-65535",53,allowed`)
      const dot = yield* raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, {
        headers: { ...w.headers, accept: "text/vnd.graphviz" }
      })
      expect(dot.text).toContain(
        `"subnet:${w.subnet.id}" -> "internet:" [label="tcp 1-65535\\nudp 1-52,54-65535\\nudp 53 (some)\\nicmp", style=dashed];`
      )
      const explained = (yield* raw(
        "GET",
        `/vpcs/${w.vpc.id}/explain?from=${w.subnet.id}&to=internet&protocol=udp&port=53`,
        { headers: w.headers }
      )).body as Json
      expect(explained).toMatchObject({
        reach: "partial",
        egress: { vpc_id: w.vpc.id, reach: "partial" },
        ingress: { vpc_id: null, reach: "allowed" },
        denied_flow: { source: { pod_id: quiet.id }, egress: { action: "deny" } }
      })
      const evaluated = (yield* raw("POST", "/security-rules/evaluate", {
        headers: w.headers,
        body: {
          vpc_id: w.vpc.id,
          direction: "egress",
          protocol: "udp",
          port: 53,
          remote_ip: "8.8.8.8",
          target_subnet_id: w.subnet.id
        }
      })).body as Json
      expect(evaluated).toMatchObject({
        reach: "partial",
        allowed: false,
        denied_flow: { flow: { local: { pod_id: quiet.id } }, action: "deny" },
        allowed_flow: { action: "allow" }
      })
      // The one pod alone: denied; the other alone: allowed.
      const quietOnly = (yield* raw("POST", "/security-rules/evaluate", {
        headers: w.headers,
        body: {
          vpc_id: w.vpc.id,
          direction: "egress",
          protocol: "udp",
          port: 53,
          remote_ip: "8.8.8.8",
          target_pod_id: quiet.id
        }
      })).body as Json
      expect(quietOnly).toMatchObject({ reach: "denied", allowed_flow: null })
    }))

  it.effect("a pod's or a subnet's end of a flow is an address of its own: never the subnet's network address", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const pod = (yield* w.createPod({ name: "api" })).body as Json
      const explain = (query: string) =>
        Effect.map(raw("GET", `/vpcs/${w.vpc.id}/explain?${query}`, { headers: w.headers }), (r) => r.body as Json)
      const out = yield* explain(`from=${pod.id}&to=internet&protocol=tcp&port=443`)
      expect(out.allowed_flow.source).toMatchObject({ pod_id: pod.id, subnet_id: w.subnet.id })
      expectHosts([w.subnet], out.allowed_flow)
      const into = yield* explain(`from=internet&to=${w.subnet.id}&protocol=tcp&port=22`)
      expect(into.denied_flow.destination).toMatchObject({ subnet_id: w.subnet.id })
      expectHosts([w.subnet], into.denied_flow)
      // The same of a witness in the matrix and in a half's question.
      yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: noDnsFor(w.vpc.id, pod.id, "no dns for api")
      })
      const matrix = (yield* raw("GET", `/vpcs/${w.vpc.id}/reachability`, { headers: w.headers })).body as Json
      const cell = (matrix.pairs as Array<Json>).find((p) => p.from.kind === "subnet" && p.to.kind === "internet")!
      expect(cell.udp.partial).toBe("53")
      expectHosts([w.subnet], cell.udp.allowed_flow)
      expectHosts([w.subnet], cell.udp.denied_flow)
      const evaluated = (yield* raw("POST", "/security-rules/evaluate", {
        headers: w.headers,
        body: { vpc_id: w.vpc.id, direction: "ingress", protocol: "tcp", port: 22, remote_vpc_id: w.vpc.id }
      })).body as Json
      expect(evaluated.allowed_flow.flow.remote_ip).not.toBe("10.0.1.0")
    }))

  it.effect("bad questions are 400 naming the parameter, as every query's are; another tenant's VPC is 404", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const other = yield* workspace
      const ask = (vpcId: string, query: string) =>
        raw("GET", `/vpcs/${vpcId}/explain?${query}`, { headers: w.headers })
      const fieldOf = (
        response: { readonly status: number; readonly body: unknown }
      ) => [response.status, (response.body as Json).errors.map((e: Json) => e.field)]
      const noPort = yield* ask(w.vpc.id, `from=internet&to=${w.subnet.id}&protocol=tcp`)
      expect(fieldOf(noPort)).toEqual([400, ["port"]])
      expect((noPort.body as Json).detail).toBe("port: required for tcp")
      const unknown = yield* ask(w.vpc.id, `from=somewhere&to=${w.subnet.id}&protocol=udp&port=53`)
      expect(fieldOf(unknown)).toEqual([400, ["from"]])
      const theirs = yield* ask(w.vpc.id, `from=internet&to=${other.subnet.id}&protocol=udp&port=53`)
      expect(fieldOf(theirs)).toEqual([400, ["to"]])
      const outside = yield* ask(w.vpc.id, "from=internet&to=8.8.8.8&protocol=udp&port=53")
      expect(outside.status).toBe(400)
      const malformed = yield* ask("xyz", "from=internet&to=8.8.8.8&protocol=udp&port=53")
      expect(malformed.body).toMatchObject({ detail: "vpc_id: must be a VPC id (UUID); got \"xyz\"" })
      expect((yield* ask(other.vpc.id, `from=internet&to=${other.subnet.id}&protocol=udp&port=53`)).status).toBe(404)
    }))

  it.effect("reachability is bounded: the subnets' summary by default, pods on asking, pages linked in turn", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const other = yield* w.newVpc("other")
      const pods: Array<Json> = []
      for (let i = 0; i < 5; i++) pods.push((yield* w.createPod()).body as Json)
      const get = (query: string) => raw("GET", `/vpcs/${w.vpc.id}/reachability${query}`, { headers: w.headers })
      const ends = (pairs: Array<Json>) => pairs.map((p) => `${p.from.kind}>${p.to.kind}`)

      // The summary: the subnet, the internet and the other VPC; no pod.
      const summary = yield* get("")
      expect(summary.status).toBe(200)
      expect(summary.headers["link"]).toBeUndefined()
      expect((summary.body as Json).detail).toBe("subnets")
      expect(ends((summary.body as Json).pairs).sort()).toEqual(
        ["internet>subnet", "subnet>internet", "subnet>subnet", "subnet>vpc", "vpc>subnet"]
      )
      expect(((summary.body as Json).pairs as Array<Json>).find((p) => p.to.kind === "vpc")!.to.vpc_id).toBe(other.id)

      // Every pod too, read 7 pairs at a time by following each page's Link.
      const whole = (yield* get("?detail=pods")).body as Json
      // 6 inside (a subnet, 5 pods): 36 pairs less 5 of a pod with itself, and 2 each way with 2 outside.
      expect(whole.pairs.length).toBe(36 - 5 + 6 * 2 * 2)
      const walked: Array<Json> = []
      let next: string | undefined = `/vpcs/${w.vpc.id}/reachability?detail=pods&limit=7`
      while (next !== undefined) {
        const page: Awaited<Effect.Effect.Success<ReturnType<typeof get>>> = yield* raw("GET", next, {
          headers: w.headers
        })
        expect(page.status).toBe(200)
        expect((page.body as Json).pairs.length).toBeLessThanOrEqual(7)
        walked.push(...(page.body as Json).pairs)
        next = /<([^>]+)>; rel="next"/.exec(String(page.headers["link"] ?? ""))?.[1]
      }
      expect(walked).toEqual(whole.pairs)

      // Around one pod: the pairs it is an end of, whatever the detail.
      const pod = pods[2]!
      const around = ((yield* get(`?endpoint=${pod.id}`)).body as Json).pairs as Array<Json>
      expect(around.length).toBe(2 * 3)
      for (const p of around) expect([p.from.pod_id, p.to.pod_id]).toContain(pod.id)
      const aroundAll = ((yield* get(`?detail=pods&endpoint=${pod.id}`)).body as Json).pairs as Array<Json>
      expect(aroundAll).toEqual(
        whole.pairs.filter((p: Json) => p.from.pod_id === pod.id || p.to.pod_id === pod.id)
      )
      expect(((yield* get("?endpoint=internet")).body as Json).pairs.length).toBe(2)

      // What the bounds refuse, and what is not the caller's.
      const stranger = yield* workspace
      const foreignPod = (yield* stranger.createPod()).body as Json
      for (
        const [query, field] of [
          ["?limit=501", "limit"],
          ["?limit=0", "limit"],
          ["?detail=everything", "detail"],
          ["?endpoint=nope", "endpoint"],
          [`?endpoint=${foreignPod.id}`, "endpoint"],
          [`?endpoint=${stranger.vpc.id}`, "endpoint"]
        ] as const
      ) {
        const refused = yield* get(query)
        expect([query, refused.status]).toEqual([query, 400])
        expect(JSON.stringify(refused.body), query).toContain(field)
      }
      // A page's token names its list and filters: it opens no other.
      const first = yield* get("?detail=pods&limit=3")
      const token = new URL(String(first.headers["link"]).slice(1, -13), "http://x").searchParams.get("page_token")!
      expect((yield* get(`?detail=subnets&page_token=${token}`)).status).toBe(400)
      expect((yield* get(`?detail=pods&page_token=${token}`)).status).toBe(200)
      // Nor another VPC's, the caller's own.
      const elsewhere = yield* raw("GET", `/vpcs/${other.id}/reachability?detail=pods&page_token=${token}`, {
        headers: w.headers
      })
      expect(elsewhere.status).toBe(400)
    }))
})
