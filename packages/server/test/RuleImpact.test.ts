/**
 * Rule changes previewed (`?dry_run=true`): validated as the real call, nothing changed, and
 * the answer is the exact traffic the change opens and closes, with what decides it before
 * and after, and the findings it brings.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminLogin, raw, testServer, workspace } from "./Harness.js"

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
          local: { pod_ids: [], subnet_ids: [w.subnet.id], outside_subnets: true },
          before: { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } },
          after: { action: "allow", decided_by: { kind: "rule", rule_id: expect.any(String), name: "https" } }
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

layer(testServer(), { excludeTestServices: true })("reachability", (it) => {
  it.effect("the matrix says what reaches each endpoint end to end, and follows the rules", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const pod = (yield* w.createPod({ service_port: 8080 })).body as Json
      const matrix = () =>
        Effect.map(
          raw("GET", `/vpcs/${w.vpc.id}/reachability`, { headers: w.headers }),
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
      expect(pair(before, subnet, internet)).toMatchObject({ tcp: "1-65535", udp: "1-65535", icmp: true })
      expect(pair(before, internet, thePod)).toMatchObject({ tcp: "", udp: "", icmp: false })
      expect(pair(before, subnet, thePod)).toMatchObject({ tcp: "1-65535", icmp: true })
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
      expect(pair(after, internet, thePod)).toMatchObject({ tcp: "443", udp: "", icmp: false })
      expect(pair(after, internet, subnet)).toMatchObject({ tcp: "" })
      const other = yield* workspace
      expect((yield* raw("GET", `/vpcs/${w.vpc.id}/reachability`, { headers: other.headers })).status).toBe(404)
    }))
})
