/**
 * Rule changes previewed (`?dry_run=true`): validated as the real call, nothing changed, and
 * the answer is the exact traffic the change opens and closes, with what decides it before
 * and after, and the findings it brings.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminLogin, raw, setProviderConfig, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

const httpsRule = (vpcId: string, overrides: Json = {}) => ({
  vpc_id: vpcId,
  name: "https",
  direction: "ingress",
  action: "allow",
  priority: 100,
  protocol: "tcp",
  ports: "443",
  remote_type: "cidr",
  remote_cidr: "203.0.113.0/24",
  ...overrides
})

const unpublished = {
  reason: "not_published",
  detail: "nothing published: the internet reaches only published pods (a pod's external_inbound port, a udp tunnel's)"
}

layer(testServer(), { excludeTestServices: true })("rule impact", (it) => {
  it.effect("a create previewed opens exactly its traffic, changes nothing, and leaves no audit entry", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const rulesBefore = (yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body as Json
      const preview = yield* raw("POST", "/security-rules?dry_run=true", {
        headers: { ...w.headers, "x-request-id": "preview-create" },
        body: httpsRule(w.vpc.id)
      })
      expect(preview.status).toBe(200)
      const impact = preview.body as Json
      expect(impact).toMatchObject({ dry_run: true, vpc_id: w.vpc.id, closed: [], new_findings: [] })
      expect(impact.opened).toEqual([
        {
          direction: "ingress",
          protocol: "tcp",
          ports: "443",
          remote_cidrs: ["203.0.113.0/24"],
          remote_summary: "203.0.113.0/24",
          local: { pod_ids: [], subnet_ids: [w.subnet.id], outside_subnets: true },
          before: { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } },
          after: { action: "allow", decided_by: { kind: "rule", rule_id: expect.any(String), name: "https" } },
          // Nothing is published in the VPC: the rule opens the port to no packet from the internet yet.
          route: { before: unpublished, after: unpublished }
        }
      ])
      const rulesAfter = (yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body as Json
      expect(rulesAfter.rules).toEqual(rulesBefore.rules)
      const admin = yield* adminLogin
      const trail = (yield* raw("GET", "/audit-log?action=securityRules.create&limit=500", {
        headers: { "x-admin-token": admin.api_token }
      })).body as Json
      expect((trail.entries as Array<Json>).map((e) => e.request_id)).not.toContain("preview-create")
    }))

  it.effect("a preview is refused exactly as the real call: bad input 422, another tenant's VPC 404", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const other = yield* workspace
      const bad = yield* raw("POST", "/security-rules?dry_run=true", {
        headers: w.headers,
        body: httpsRule(w.vpc.id, { ports: "99999" })
      })
      const real = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: httpsRule(w.vpc.id, { ports: "99999" })
      })
      expect(bad.status).toBe(422)
      expect(bad.body).toEqual(real.body)
      const foreign = yield* raw("POST", "/security-rules?dry_run=true", {
        headers: w.headers,
        body: httpsRule(other.vpc.id)
      })
      expect(foreign.status).toBe(404)
    }))

  it.effect("deleting, patching and reordering are previewed against the rules as they stand", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const created = (yield* raw("POST", "/security-rules", { headers: w.headers, body: httpsRule(w.vpc.id) }))
        .body as Json
      const rule = created.rule as Json
      const removal = (yield* raw("DELETE", `/security-rules/${rule.id}?dry_run=true`, { headers: w.headers }))
        .body as Json
      expect(removal.opened).toEqual([])
      expect(removal.closed).toEqual([
        expect.objectContaining({
          ports: "443",
          remote_cidrs: ["203.0.113.0/24"],
          before: { action: "allow", decided_by: { kind: "rule", rule_id: rule.id, name: "https" } },
          after: { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } }
        })
      ])
      const narrowed = (yield* raw("PATCH", `/security-rules/${rule.id}?dry_run=true`, {
        headers: w.headers,
        body: { ports: "443-444" }
      })).body as Json
      expect(narrowed.opened.map((r: Json) => r.ports)).toEqual(["444"])
      // A broader deny placed first would shadow the allow, and close its traffic.
      const deny = ((yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: httpsRule(w.vpc.id, { name: "no-web", action: "deny", priority: 200, remote_cidr: "203.0.0.0/16" })
      })).body as Json).rule as Json
      const listed = (yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body as Json
      const ids = (listed.rules as Array<Json>).map((r) => r.id)
      const swapped = [deny.id, ...ids.filter((id: string) => id !== deny.id)]
      const reorder = (yield* raw("POST", "/security-rules/reorder?dry_run=true", {
        headers: w.headers,
        body: { vpc_id: w.vpc.id, rule_ids: swapped }
      })).body as Json
      expect(reorder.closed).toEqual([
        expect.objectContaining({
          ports: "443",
          remote_cidrs: ["203.0.113.0/24"],
          before: expect.objectContaining({ action: "allow" }),
          after: { action: "deny", decided_by: { kind: "rule", rule_id: deny.id, name: "no-web" } }
        })
      ])
      expect(reorder.new_findings).toEqual([
        expect.objectContaining({ kind: "shadowed", rule_id: rule.id, related_rule_ids: [deny.id] })
      ])
      // Nothing was changed by the previews.
      const still = (yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body as Json
      expect((still.rules as Array<Json>).map((r) => r.id)).toEqual(ids)
      expect((still.rules as Array<Json>).find((r) => r.id === rule.id)).toMatchObject({ ports: "443" })
    }))
})

layer(testServer(), { excludeTestServices: true })("topology impact", (it) => {
  it.effect("a topology post previewed: what it would create, the flows it opens in each VPC, nothing created", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const vpcName = w.vpc.name as string
      const data = (yield* raw("POST", "/vpcs", {
        headers: w.headers,
        body: { ...w.creds, name: "data", enable_internet: false }
      })).body as Json
      yield* raw("POST", "/subnets", {
        headers: w.headers,
        body: { ...w.creds, vpc_id: data.id, name: "db", cidr: "10.1.0.0/24", gateway_ip: "10.1.0.1" }
      })
      // The app VPC lets the data VPC reach its PostgreSQL port.
      const fromData = ((yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: httpsRule(w.vpc.id, {
          name: "from-data",
          ports: "5432",
          remote_type: "vpc",
          remote_cidr: undefined,
          remote_vpc_id: data.id
        })
      })).body as Json).rule as Json
      const topology = {
        token: w.creds.token,
        vpcs: [{ name: "edge", enable_internet: true }],
        subnets: [
          { name: "analytics", vpc_name: "data", cidr: "10.1.5.0/24", gateway_ip: "10.1.5.1" },
          { name: "front", vpc_name: "edge", cidr: "10.9.0.0/24", gateway_ip: "10.9.0.1" }
        ],
        pods: [{ name: "proxy", vpc_name: "edge", subnet_name: "front", container_image: "nginx:1.27" }]
      }
      const before = (yield* raw("GET", `/tenants/${w.tenant.id}/topology`, { headers: w.headers })).body
      const preview = yield* raw("POST", `/tenants/${w.tenant.id}/topology?dry_run=true`, {
        headers: w.headers,
        body: topology
      })
      expect(preview.status).toBe(200)
      const impact = preview.body as Json
      expect(impact).toMatchObject({ dry_run: true, tenant_id: w.tenant.id })
      const created = impact.created as Json
      expect(created.vpcs.map((v: Json) => v.name)).toEqual(["edge"])
      expect(created.subnets.map((s: Json) => s.name)).toEqual(["analytics", "front"])
      expect(created.pods).toEqual([expect.objectContaining({ name: "proxy", vpc_id: created.vpcs[0].id })])
      const of = (vpcId: string) => (impact.vpcs as Array<Json>).find((v) => v.vpc_id === vpcId)
      // The app VPC: its rule now also matches the data VPC's new block.
      expect(of(w.vpc.id)).toMatchObject({
        closed: [],
        opened: [{
          direction: "ingress",
          protocol: "tcp",
          ports: "5432",
          remote_cidrs: ["10.1.5.0/24"],
          local: { pod_ids: [], subnet_ids: [w.subnet.id], outside_subnets: true },
          before: { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } },
          after: { action: "allow", decided_by: { kind: "rule", rule_id: fromData.id, name: "from-data" } },
          // The block is the internet's until the post makes it the data VPC's, which the rule peers.
          route: { before: unpublished, after: null }
        }]
      })
      // The data VPC's seeded rule takes in its new subnet's traffic; the new gateway is core network.
      const dataOpened = of(data.id)!.opened as Array<Json>
      expect(new Set(dataOpened.map((r) => r.protocol))).toEqual(new Set(["tcp", "udp", "icmp"]))
      for (const region of dataOpened) {
        const gateway = region.remote_cidrs.includes("10.1.5.1/32")
        expect(region).toMatchObject({
          direction: "ingress",
          after: {
            decided_by: gateway
              ? { kind: "implied", key: "implied-allow-infrastructure" }
              : { kind: "rule", name: "Allow internal traffic" }
          }
        })
        expect(region.remote_cidrs.every((c: string) => c.startsWith("10.1.5."))).toBe(true)
        if (gateway) expect(region.remote_cidrs).toEqual(["10.1.5.1/32"])
      }
      // The new VPC: its seeded rule opens its internal traffic, to its new subnet and pod too.
      const edge = of(created.vpcs[0].id)!
      expect(edge.opened.length).toBeGreaterThan(0)
      expect(edge.opened[0]).toMatchObject({
        local: { pod_ids: [created.pods[0].id], subnet_ids: [created.subnets[1].id], outside_subnets: true },
        route: { after: null }
      })
      expect(impact.vpcs).toHaveLength(3)
      // Nothing was created; the same body then deploys, and is refused alike when invalid.
      expect((yield* raw("GET", `/tenants/${w.tenant.id}/topology`, { headers: w.headers })).body).toEqual(before)
      const real = yield* raw("POST", `/tenants/${w.tenant.id}/topology`, { headers: w.headers, body: topology })
      expect(real.status).toBe(200)
      expect((real.body as Json).vpcs.map((v: Json) => v.name).sort()).toEqual(["data", "edge", vpcName].sort())
      const bad = {
        ...topology,
        subnets: [{ name: "x", vpc_name: "nowhere", cidr: "10.3.0.0/24", gateway_ip: "10.3.0.1" }]
      }
      const refused = yield* raw("POST", `/tenants/${w.tenant.id}/topology?dry_run=true`, {
        headers: w.headers,
        body: bad
      })
      expect(refused.status).toBe(400)
      expect(refused.body).toEqual(
        (yield* raw("POST", `/tenants/${w.tenant.id}/topology`, { headers: w.headers, body: bad })).body
      )
    }))
})

layer(testServer(), { excludeTestServices: true })("reachability", (it) => {
  it.effect("the matrix says what reaches each endpoint end to end, and follows the rules", () =>
    Effect.gen(function*() {
      yield* setProviderConfig()
      const w = yield* workspace
      // Published to the internet on its service port (the internet reaches nothing else).
      const pod = (yield* w.createPod({ service_port: 443, external_access: true, external_inbound: true }))
        .body as Json
      const matrix = () =>
        Effect.map(
          raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, { headers: w.headers }),
          (r) => {
            expect(r.status).toBe(200)
            return r.body as Json
          }
        )
      const pair = (m: Json, from: Json, to: Json) =>
        (m.pairs as Array<Json>).find((p) =>
          Object.entries(from).every(([k, v]) => p.from[k] === v) && Object.entries(to).every(([k, v]) => p.to[k] === v)
        )!
      const before = yield* matrix()
      const subnet = { kind: "subnet", subnet_id: w.subnet.id }
      const thePod = { kind: "pod", pod_id: pod.id }
      const internet = { kind: "internet" }
      // Egress is open; nothing from the internet gets in; the seeded rule lets the VPC talk to itself.
      const every = { allowed: "1-65535", partial: "", allowed_flow: null, denied_flow: null }
      const none = { allowed: "", partial: "", allowed_flow: null, denied_flow: null }
      expect(pair(before, subnet, internet)).toMatchObject({ tcp: every, udp: every, icmp: { reach: "allowed" } })
      expect(pair(before, internet, thePod)).toMatchObject({ tcp: none, udp: none, icmp: { reach: "denied" } })
      expect(pair(before, subnet, thePod)).toMatchObject({ tcp: every, icmp: { reach: "allowed" } })
      expect(pair(before, thePod, subnet).from).toMatchObject({ name: pod.name })
      yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: httpsRule(w.vpc.id, {
          name: "web-in",
          remote_cidr: "0.0.0.0/0",
          target_type: "pods",
          target_pod_ids: [pod.id]
        })
      })
      const after = yield* matrix()
      expect(pair(after, internet, thePod)).toMatchObject({
        tcp: { allowed: "443", partial: "" },
        udp: { allowed: "" },
        icmp: { reach: "denied" }
      })
      // The subnet is its pods and its other addresses: 443 gets in to the pod only, so partly.
      const partly = pair(after, internet, subnet)
      expect(partly.tcp).toMatchObject({
        allowed: "",
        partial: "443",
        allowed_flow: { port: 443, destination: { pod_id: pod.id }, ingress: { action: "allow" } },
        denied_flow: { port: 443, destination: { pod_id: null }, route: { reason: "not_published" } }
      })
      const other = yield* workspace
      expect((yield* raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, { headers: other.headers })).status).toBe(
        404
      )
    }))
})
