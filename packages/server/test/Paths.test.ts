/**
 * What gets there is what a route carries: a tenant's VPCs a, b, d and e with the internet and c
 * without, each with a subnet and a pod (a and d on the same block), as the issue that brought
 * paths measured them. Every traffic answer (explain, evaluate, reachability) says `denied` with
 * the component that stops a flow where no route exists: two VPCs nothing peers, a VPC without
 * the internet, the internet into what is not published. Peering two VPCs whose blocks overlap is
 * refused (409, naming both blocks), by a rule's create, its dry run, its patch and a subnet's
 * create. A change's impact and a guardrail's witness say whether a path carries their flows.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { EDGE_ACCOUNT, raw, setProviderConfig, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

const tenant = Effect.gen(function*() {
  yield* setProviderConfig()
  const w = yield* workspace
  const post = (path: string, body: Json) => raw("POST", path, { headers: w.headers, body })
  /** A VPC with one subnet (`cidr`) and one pod in it. */
  const network = (name: string, cidr: string, internet: boolean) =>
    Effect.gen(function*() {
      const vpc = (yield* post("/vpcs", { ...w.creds, name, enable_internet: internet })).body as Json
      const subnet = (yield* post("/subnets", {
        ...w.creds,
        vpc_id: vpc.id,
        name: `${name}-apps`,
        cidr,
        gateway_ip: cidr.replace(/0\/24$/, "1")
      })).body as Json
      const pod = (yield* w.createPod({ vpc_id: vpc.id, subnet_id: subnet.id, name: `${name}-pod` })).body as Json
      return { vpc, subnet, pod }
    })
  const a = { vpc: w.vpc, subnet: w.subnet, pod: (yield* w.createPod({ name: "a-pod" })).body as Json }
  const b = yield* network("b", "10.0.2.0/24", true)
  const c = yield* network("c", "10.0.3.0/24", false)
  const d = yield* network("d", "10.0.1.0/24", true)
  const e = yield* network("e", "10.0.5.0/24", true)
  /** A rule created (or, at `/security-rules?dry_run=true`, previewed) in `vpc`: tcp ingress allowed unless `fields` say otherwise. */
  const rule = (vpc: Json, name: string, fields: Json, path = "/security-rules") =>
    Effect.map(
      post(path, {
        vpc_id: vpc.id,
        name,
        direction: "ingress",
        action: "allow",
        priority: 100,
        protocol: "tcp",
        ...fields
      }),
      (r) => ({ status: r.status, body: r.body as Json })
    )
  const explain = (from: string, to: string, port: number, vpc: Json = a.vpc) =>
    Effect.map(
      raw("GET", `/vpcs/${vpc.id}/explain?from=${from}&to=${to}&protocol=tcp&port=${port}`, { headers: w.headers }),
      (r) => {
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        return r.body as Json
      }
    )
  return { w, post, a, b, c, d, e, rule, explain }
})

layer(testServer(), { excludeTestServices: true })("paths", (it) => {
  it.effect("the issue's table: every answer is backed by a route, or says what stops the flow", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const { a, b, c, d, e } = t
      expect(
        (yield* t.rule(a.vpc, "8080 from b", { ports: "8080", remote_type: "vpc", remote_vpc_id: b.vpc.id })).status
      )
        .toBe(201)
      expect((yield* t.rule(a.vpc, "https in", { ports: "443", remote_type: "cidr", remote_cidr: "0.0.0.0/0" })).status)
        .toBe(201)
      expect((yield* t.rule(c.vpc, "https in", { ports: "443", remote_type: "cidr", remote_cidr: "0.0.0.0/0" })).status)
        .toBe(201)

      // The rule naming b peers a and b: a route carries b's packets, and the rule lets them in.
      const fromB = yield* t.explain(b.subnet.id, a.subnet.id, 8080)
      expect(fromB).toMatchObject({ reach: "allowed", route: { reach: "allowed", blocked_by: null } })
      expect(fromB.allowed_flow.route).toBeNull()
      // e is peered with nothing: its packets have no route to a, whatever the rules say.
      const allowE = yield* t.rule(a.vpc, "8080 from 10.0.5.0/24", {
        ports: "8080",
        remote_type: "cidr",
        remote_cidr: "10.0.5.0/24"
      })
      expect(allowE.status).toBe(201)
      const fromE = yield* t.explain(e.subnet.id, a.subnet.id, 8080)
      expect(fromE).toMatchObject({
        reach: "denied",
        ingress: { reach: "allowed" },
        route: { reach: "denied", blocked_by: { reason: "no_route" } },
        denied_flow: { route: { reason: "no_route" } }
      })
      expect(fromE.route.blocked_by.detail).toBe(
        "no route from VPC 'e' to VPC '" + a.vpc.name + "': they are not peered " +
          "(no enabled allow rule of either names the other)"
      )

      // c has no internet: nothing leaves it for the internet, and nothing published in it can answer.
      expect(yield* t.explain(c.subnet.id, "internet", 443, c.vpc)).toMatchObject({
        reach: "denied",
        route: { blocked_by: { reason: "no_internet", detail: "VPC 'c' has no internet (enable_internet is false)" } }
      })
      expect(yield* t.explain("internet", c.subnet.id, 443, c.vpc)).toMatchObject({
        reach: "denied",
        route: { blocked_by: { reason: "not_published" } }
      })
      // Nothing is published in a: the rule opening 443 to the world opens it to no packet.
      const intoA = yield* t.explain("internet", a.subnet.id, 443)
      expect(intoA).toMatchObject({ reach: "denied", ingress: { reach: "allowed" }, route: { reach: "denied" } })
      expect(intoA.denied_flow.route.reason).toBe("not_published")
      // The same from an address: the internet, or the core network (which everything reaches).
      expect((yield* t.explain("198.51.100.7", a.pod.id, 443)).route.reach).toBe("denied")
      expect((yield* t.explain("100.64.0.9", a.pod.id, 22)).route.reach).toBe("allowed")

      // a and d share 10.0.1.0/24: no route could tell them apart, so naming d is refused.
      const overlapping = yield* t.rule(a.vpc, "9090 from d", {
        ports: "9090",
        remote_type: "vpc",
        remote_vpc_id: d.vpc.id
      })
      expect(overlapping.status).toBe(409)
      expect(overlapping.body.detail).toContain(`10.0.1.0/24 of VPC '${a.vpc.name}' overlaps 10.0.1.0/24 of VPC 'd'`)
      // An address of the shared block from a means a's own.
      expect((yield* t.explain("10.0.1.9", a.pod.id, 22)).from).toMatchObject({ vpc_id: a.vpc.id })

      // evaluate says the same, the path named as what decides.
      const evaluated = (yield* raw("POST", "/security-rules/evaluate", {
        headers: t.w.headers,
        body: { vpc_id: a.vpc.id, direction: "ingress", protocol: "tcp", port: 8080, remote_vpc_id: e.vpc.id }
      })).body as Json
      expect(evaluated).toMatchObject({
        reach: "denied",
        denied_flow: { action: "deny", decided_by: { kind: "path", reason: "no_route" } }
      })
      const out = (yield* raw("POST", "/security-rules/evaluate", {
        headers: t.w.headers,
        body: { vpc_id: c.vpc.id, direction: "egress", protocol: "udp", port: 53, remote_ip: "8.8.8.8" }
      })).body as Json
      expect(out.denied_flow.decided_by).toMatchObject({ kind: "path", reason: "no_internet" })

      // Reachability: b (peered) reaches a on 8080 and on 443 (open to every address); e on nothing.
      const matrix = (yield* raw("GET", `/vpcs/${a.vpc.id}/reachability`, { headers: t.w.headers })).body as Json
      const pair = (from: string, to: string) =>
        (matrix.pairs as Array<Json>).find((p) => p.from.vpc_id === from && p.to.subnet_id === to)!
      expect(pair(b.vpc.id, a.subnet.id).tcp.allowed).toBe("443,8080")
      expect(pair(e.vpc.id, a.subnet.id).tcp).toMatchObject({ allowed: "", partial: "" })
      expect(pair(c.vpc.id, a.subnet.id).icmp.reach).toBe("denied")
    }))

  it.effect("a rule that can never match says why; enabling one that would peer overlapping VPCs is refused", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const { a, b, d, e } = t
      // A deny rule peers nothing: e's packets never arrive, so it can never match.
      const deny = yield* t.rule(a.vpc, "no e", { action: "deny", remote_type: "vpc", remote_vpc_id: e.vpc.id })
      expect(deny.status).toBe(201)
      expect(deny.body.rule.status).toBe("remote_vpc_unreachable")
      // Once an allow rule of e's names a, they are peered, and the deny rule is in force.
      expect((yield* t.rule(e.vpc, "from a", { remote_type: "vpc", remote_vpc_id: a.vpc.id })).status).toBe(201)
      const now = (yield* raw("GET", `/security-rules/${deny.body.rule.id}`, { headers: t.w.headers })).body as Json
      expect(now.status).toBe("active")
      // A disabled rule naming d is kept; enabling it would peer a and d, which overlap.
      const disabled = yield* t.rule(a.vpc, "from d", { remote_type: "vpc", remote_vpc_id: d.vpc.id, enabled: false })
      expect(disabled.status).toBe(201)
      expect(disabled.body.rule.status).toBe("disabled")
      const enabled = yield* Effect.map(
        raw("PATCH", `/security-rules/${disabled.body.rule.id}`, {
          headers: t.w.headers,
          body: { enabled: true }
        }),
        (r) => ({ status: r.status, body: r.body as Json })
      )
      expect(enabled.status).toBe(409)
      expect(enabled.body.detail).toContain("overlaps 10.0.1.0/24")
      // b is peered with a (a rule of a's names it): a subnet of b's on a's block is refused.
      expect((yield* t.rule(a.vpc, "from b", { remote_type: "vpc", remote_vpc_id: b.vpc.id })).status).toBe(201)
      const clash = yield* Effect.map(
        t.post("/subnets", {
          ...t.w.creds,
          vpc_id: b.vpc.id,
          name: "clash",
          cidr: "10.0.1.128/25",
          gateway_ip: "10.0.1.129"
        }),
        (r) => ({ status: r.status, body: r.body as Json })
      )
      expect(clash.status).toBe(409)
      expect(clash.body.detail).toContain("10.0.1.128/25")
      // Nor may b take d as a peer: a and d share a block, and b's router would route it twice.
      const twice = yield* t.rule(b.vpc, "from d", { remote_type: "vpc", remote_vpc_id: d.vpc.id })
      expect(twice.status).toBe(409)
      expect(twice.body.detail).toContain("both would be peered with VPC 'b'")
      // Nothing changed: the rule is still disabled, b still has its one subnet.
      const kept = (yield* raw("GET", `/security-rules/${disabled.body.rule.id}`, { headers: t.w.headers }))
        .body as Json
      expect(kept).toMatchObject({ enabled: false, status: "disabled" })
      const subnets = (yield* raw("GET", "/subnets", { headers: t.w.headers })).body as Array<Json>
      expect(subnets.filter((s) => s.vpc_id === b.vpc.id).map((s) => s.cidr)).toEqual(["10.0.2.0/24"])
    }))

  it.effect("a change's impact and a guardrail's witness say whether a path carries them", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const { a, b, c, d } = t
      const preview = (vpc: Json, name: string, fields: Json) =>
        t.rule(vpc, name, fields, "/security-rules?dry_run=true")
      // A rule naming b opens 8080 from b's block, and the peering it makes carries it: before, no route did.
      const fromB = yield* preview(a.vpc, "8080 from b", { ports: "8080", remote_type: "vpc", remote_vpc_id: b.vpc.id })
      expect(fromB.status).toBe(200)
      expect(fromB.body.opened).toEqual([
        expect.objectContaining({
          remote_cidrs: ["10.0.2.0/24"],
          route: {
            before: {
              reason: "no_route",
              detail: `no route from VPC 'b' to VPC '${a.vpc.name}': they are not peered ` +
                "(no enabled allow rule of either names the other)"
            },
            after: null
          }
        })
      ])
      // c publishes nothing and is peered with nothing: a rule opening 443 to the world opens it to
      // no packet (its own block was let in already), and each region says what stops it.
      const world = yield* preview(c.vpc, "https in", { ports: "443", remote_type: "cidr", remote_cidr: "0.0.0.0/0" })
      const regions = (world.body.opened as Array<Json>).map((r) => [r.remote_summary, r.route.after?.reason ?? null])
      expect(regions.sort()).toEqual([
        ["0.0.0.0/0 except 10.0.1.0/24, 10.0.2.0/23, 10.0.5.0/24, 100.64.0.0/16", "not_published"],
        ["10.0.1.0/24", "no_route"],
        ["10.0.2.0/24", "no_route"],
        ["10.0.5.0/24", "no_route"]
      ])
      // A dry run is refused as the real call is: naming d would peer two VPCs on one block.
      const overlapping = yield* preview(a.vpc, "9090 from d", {
        ports: "9090",
        remote_type: "vpc",
        remote_vpc_id: d.vpc.id
      })
      expect(overlapping.status).toBe(409)
      expect(overlapping.body.detail).toContain(`10.0.1.0/24 of VPC '${a.vpc.name}' overlaps 10.0.1.0/24 of VPC 'd'`)
      expect(overlapping.body).toEqual(
        (yield* t.rule(a.vpc, "9090 from d", { ports: "9090", remote_type: "vpc", remote_vpc_id: d.vpc.id })).body
      )
      // A guardrail holds whatever is routed; its witness says that nothing publishes it today.
      const guardrail = yield* t.post(`/vpcs/${c.vpc.id}/guardrails`, {
        name: "no ssh from the internet",
        require: "deny",
        direction: "ingress",
        protocol: "tcp",
        ports: "22",
        remote_cidr: "198.51.100.0/24"
      })
      expect(guardrail.status).toBe(201)
      const ssh = yield* t.rule(c.vpc, "ssh", { ports: "22", remote_type: "cidr", remote_cidr: "0.0.0.0/0" })
      expect(ssh.status).toBe(409)
      expect(ssh.body.violations).toEqual([
        expect.objectContaining({
          flow: expect.objectContaining({ port: 22, remote_ip: expect.stringMatching(/^198\.51\.100\./) }),
          route: expect.objectContaining({ reason: "not_published" })
        })
      ])
    }))

  it.effect("the internet reaches what is published: a pod's external_inbound port, a udp tunnel's port", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const { a } = t
      const game = (yield* t.w.createPod({
        name: "game",
        service_port: 7777,
        external_access: true,
        external_inbound: true
      })).body as Json
      expect((yield* t.rule(a.vpc, "game", { protocol: "all", remote_type: "cidr", remote_cidr: "0.0.0.0/0" })).status)
        .toBe(201)
      const into = (protocol: string, port: number) =>
        Effect.map(
          raw("GET", `/vpcs/${a.vpc.id}/explain?from=internet&to=${game.id}&protocol=${protocol}&port=${port}`, {
            headers: t.w.headers
          }),
          (r) => r.body as Json
        )
      expect((yield* into("tcp", 7777)).reach).toBe("allowed")
      expect((yield* into("udp", 7777)).reach).toBe("allowed")
      const other = yield* into("udp", 27015)
      expect(other).toMatchObject({ reach: "denied", route: { blocked_by: { reason: "not_published" } } })
      expect(other.route.blocked_by.detail).toBe("pod 'game' is published on udp 7777 only")
      // A udp tunnel publishes its port too (an external address forwarding it); other tunnels
      // arrive from their connector on the core network.
      yield* setProviderConfig(EDGE_ACCOUNT)
      const tunnel = yield* raw("POST", `/pods/${game.id}/tunnel`, {
        headers: t.w.headers,
        body: { tunnel_name: "game-udp", subdomain: "game", protocol_type: "udp", service_port: 27015 }
      })
      expect(tunnel.status, JSON.stringify(tunnel.body)).toBe(201)
      expect((yield* into("udp", 27015)).reach).toBe("allowed")
      expect((yield* into("tcp", 27015)).reach).toBe("denied")
      // The internet's packets arrive with the client's address: the pod's rules judge it.
      expect((yield* into("tcp", 7777)).allowed_flow.source).toMatchObject({ vpc_id: null, pod_id: null })
    }))
})
