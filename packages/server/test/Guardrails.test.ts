/**
 * Guardrails: invariants on verdicts. A change that would leave a flow of a guardrail's region
 * with the other verdict is refused (409, with a witness flow and the rule deciding it) and
 * changes nothing; a dry run lists the violations instead; tenant-wide guardrails are the
 * administrator's and hold in every VPC of the tenant.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminLogin, raw, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

const noSsh = {
  name: "no ssh from partners",
  require: "deny",
  direction: "ingress",
  protocol: "tcp",
  ports: "22",
  remote_cidr: "198.51.0.0/16"
}

const sshFrom = (vpcId: string, cidr: string, overrides: Json = {}) => ({
  vpc_id: vpcId,
  name: `ssh from ${cidr}`,
  direction: "ingress",
  action: "allow",
  priority: 100,
  protocol: "tcp",
  ports: "22",
  remote_type: "cidr",
  remote_cidr: cidr,
  ...overrides
})

layer(testServer(), { excludeTestServices: true })("guardrails", (it) => {
  it.effect("a rule that would break a guardrail is refused with a witness; its dry run lists the violation", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      // From anywhere includes the VPC's own subnet, which its seeded rule lets in: broken already.
      const everywhere = yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
        headers: w.headers,
        body: { ...noSsh, remote_cidr: "0.0.0.0/0" }
      })
      expect(everywhere.status).toBe(409)
      expect((everywhere.body as Json).violations[0]).toMatchObject({
        flow: { port: 22, remote_ip: expect.stringMatching(/^10\.0\.1\./) },
        decided_by: { kind: "rule", name: "Allow internal traffic" }
      })
      const created = yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers, body: noSsh })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      const guardrail = created.body as Json
      expect(guardrail).toMatchObject({ ...noSsh, vpc_id: w.vpc.id, scope: "vpc", local: null, description: null })
      const listed = yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })
      expect((listed.body as Array<Json>).map((g) => g.id)).toEqual([guardrail.id])

      const before = yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })
      const refused = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: sshFrom(w.vpc.id, "198.51.100.0/24")
      })
      expect(refused.status).toBe(409)
      const body = refused.body as Json
      expect(body.detail).toContain("no ssh from partners")
      expect(body.violations).toEqual([{
        guardrail_id: guardrail.id,
        name: noSsh.name,
        vpc_id: w.vpc.id,
        flow: {
          direction: "ingress",
          protocol: "tcp",
          port: 22,
          remote_ip: expect.stringMatching(/^198\.51\.100\./),
          local: expect.any(Object)
        },
        decided_by: { kind: "rule", rule_id: expect.any(String), name: "ssh from 198.51.100.0/24" },
        // A guardrail holds whatever is routed: the witness breaks it though nothing publishes port 22 today.
        route: { reason: "not_published", detail: expect.stringContaining("nothing published") }
      }])
      expect((yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body).toEqual(
        before.body
      )

      const preview = yield* raw("POST", "/security-rules?dry_run=true", {
        headers: w.headers,
        body: sshFrom(w.vpc.id, "198.51.100.0/24")
      })
      expect(preview.status).toBe(200)
      // The same violation; the rule a dry run would make has an id it would not keep.
      const withoutRuleId = (v: Json) => ({ ...v, decided_by: { ...v.decided_by, rule_id: undefined } })
      expect((preview.body as Json).violations.map(withoutRuleId)).toEqual(body.violations.map(withoutRuleId))

      // A declaration that would open it is refused the same way; a disabled rule breaks nothing.
      const declared = yield* raw("PUT", `/vpcs/${w.vpc.id}/security-rules`, {
        headers: w.headers,
        body: { rules: [{ ...sshFrom(w.vpc.id, "0.0.0.0/0"), vpc_id: undefined }] }
      })
      expect(declared.status).toBe(409)
      const disabled = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: sshFrom(w.vpc.id, "0.0.0.0/0", { enabled: false })
      })
      expect(disabled.status).toBe(201)
      const enable = yield* raw("PATCH", `/security-rules/${(disabled.body as Json).rule.id}`, {
        headers: w.headers,
        body: { enabled: true }
      })
      expect(enable.status).toBe(409)
    }))

  it.effect("an allow guardrail holds against deletes, patches and reorders; one already broken is refused", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const monitoring = {
        name: "monitoring reaches node exporter",
        require: "allow",
        direction: "ingress",
        protocol: "tcp",
        ports: "9100",
        remote_cidr: "10.0.0.0/8",
        local: { subnet_ids: [w.subnet.id] }
      }
      const early = yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers, body: monitoring })
      // Denied today by the implied ingress deny (10.0.0.0/8 beyond the VPC's own block).
      expect(early.status).toBe(409)
      expect((early.body as Json).violations[0].decided_by).toEqual({ kind: "implied", key: "implied-deny-ingress" })
      expect((yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })).body as Array<Json>).toEqual(
        []
      )

      const allow = (yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: { ...sshFrom(w.vpc.id, "10.0.0.0/8"), name: "monitoring", ports: "9100", priority: 500 }
      })).body as Json
      const guardrail = yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers, body: monitoring })
      expect(guardrail.status).toBe(201)
      expect((guardrail.body as Json).local).toEqual({ pod_ids: [], subnet_ids: [w.subnet.id] })

      expect((yield* raw("DELETE", `/security-rules/${allow.rule.id}`, { headers: w.headers })).status).toBe(409)
      expect(
        (yield* raw("PATCH", `/security-rules/${allow.rule.id}`, { headers: w.headers, body: { ports: "9101" } }))
          .status
      ).toBe(409)
      const deny = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: { ...sshFrom(w.vpc.id, "10.9.0.0/16"), action: "deny", ports: "9000-9200", priority: 900 }
      })
      expect(deny.status).toBe(201)
      const rules = ((yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body as Json)
        .rules as Array<Json>
      const denyFirst = [...rules].sort((a, b) => (a.action === "deny" ? -1 : b.action === "deny" ? 1 : 0))
      const reorder = yield* raw("POST", "/security-rules/reorder", {
        headers: w.headers,
        body: { vpc_id: w.vpc.id, rule_ids: denyFirst.map((r) => r.id) }
      })
      expect(reorder.status).toBe(409)
      expect((reorder.body as Json).violations[0].flow.remote_ip).toMatch(/^10\.9\./)
      // Once the guardrail is gone, the same delete goes through.
      const id = (guardrail.body as Json).id
      expect((yield* raw("DELETE", `/guardrails/${id}`, { headers: w.headers })).status).toBe(204)
      expect((yield* raw("DELETE", `/security-rules/${allow.rule.id}`, { headers: w.headers })).status).toBe(200)
    }))

  it.effect("deleting a pod that a rule targets with others would take the rule out: refused while a guardrail needs it", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const a = (yield* w.createPod()).body as Json
      const b = (yield* w.createPod()).body as Json
      const exporter = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: {
          ...sshFrom(w.vpc.id, "10.9.0.0/16"),
          name: "node exporter",
          ports: "9100",
          target_type: "pods",
          target_pod_ids: [a.id, b.id]
        }
      })
      expect(exporter.status).toBe(201)
      const guardrail = (yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
        headers: w.headers,
        body: {
          name: "monitoring reaches b",
          require: "allow",
          direction: "ingress",
          protocol: "tcp",
          ports: "9100",
          remote_cidr: "10.9.0.0/16",
          local: { pod_ids: [b.id] }
        }
      })).body as Json
      const refused = yield* raw("DELETE", `/pods/${a.id}`, { headers: w.headers })
      expect(refused.status).toBe(409)
      expect((refused.body as Json).violations[0]).toMatchObject({
        guardrail_id: guardrail.id,
        flow: { local: { pod_id: b.id } },
        decided_by: { kind: "implied", key: "implied-deny-ingress" }
      })
      expect((yield* raw("GET", "/pods", { headers: w.headers })).body as Array<Json>).toContainEqual(
        expect.objectContaining({ id: a.id })
      )
      expect((yield* raw("DELETE", `/guardrails/${guardrail.id}`, { headers: w.headers })).status).toBe(204)
      expect((yield* raw("DELETE", `/pods/${a.id}`, { headers: w.headers })).status).toBe(204)
    }))

  it.effect("tenant-wide guardrails are the administrator's: every VPC, subnets and new VPCs included", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const admin = { "x-admin-token": (yield* adminLogin).api_token }
      const wide = {
        name: "no telnet from the office",
        require: "deny",
        direction: "ingress",
        protocol: "tcp",
        ports: "23",
        remote_cidr: "172.16.0.0/12"
      }
      const asTenant = yield* raw("POST", `/tenants/${w.tenant.id}/guardrails`, { headers: w.headers, body: wide })
      expect(asTenant.status).toBe(401)
      const created = yield* raw("POST", `/tenants/${w.tenant.id}/guardrails`, { headers: admin, body: wide })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      const guardrail = created.body as Json
      expect(guardrail).toMatchObject({ vpc_id: null, scope: "tenant" })
      const seen = (yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })).body as Array<Json>
      expect(seen.map((g) => g.id)).toEqual([guardrail.id])
      expect((yield* raw("DELETE", `/guardrails/${guardrail.id}`, { headers: w.headers })).status).toBe(403)

      // The seeded rule allows the VPC's own blocks: a subnet in 172.16/12 would let telnet in.
      const subnet = yield* raw("POST", "/subnets", {
        headers: w.headers,
        body: { ...w.creds, vpc_id: w.vpc.id, name: "office", cidr: "172.16.2.0/24", gateway_ip: "172.16.2.1" }
      })
      expect(subnet.status).toBe(409)
      expect((subnet.body as Json).violations[0]).toMatchObject({
        guardrail_id: guardrail.id,
        decided_by: { kind: "rule", name: "Allow internal traffic" }
      })
      const other = yield* raw("POST", "/subnets", {
        headers: w.headers,
        body: { ...w.creds, vpc_id: w.vpc.id, name: "dmz", cidr: "192.168.5.0/24", gateway_ip: "192.168.5.1" }
      })
      expect(other.status).toBe(200)

      const listed = yield* raw("GET", `/tenants/${w.tenant.id}/guardrails`, { headers: admin })
      expect((listed.body as Array<Json>).map((g) => g.id)).toEqual([guardrail.id])
      expect((yield* raw("DELETE", `/tenants/${w.tenant.id}/guardrails/${guardrail.id}`, { headers: admin })).status)
        .toBe(204)
      expect((yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })).body).toEqual([])
    }))

  it.effect("a tenant-wide guardrail broken in several VPCs is refused naming it once, with a witness in each", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const admin = { "x-admin-token": (yield* adminLogin).api_token }
      const second = yield* w.newVpc()
      yield* raw("POST", "/subnets", {
        headers: w.headers,
        body: { ...w.creds, vpc_id: second.id, name: "apps", cidr: "10.0.2.0/24", gateway_ip: "10.0.2.1" }
      })
      // From anywhere includes each VPC's own subnet, which its seeded rule lets in: broken in both.
      const refused = yield* raw("POST", `/tenants/${w.tenant.id}/guardrails`, {
        headers: admin,
        body: {
          name: "no-rdp",
          require: "deny",
          direction: "ingress",
          protocol: "tcp",
          ports: "3389",
          remote_cidr: "0.0.0.0/0"
        }
      })
      expect(refused.status).toBe(409)
      const { detail, violations } = refused.body as Json
      expect(detail).toBe("the change would break guardrail 'no-rdp': no change was made")
      expect(violations.map((v: Json) => v.vpc_id).sort()).toEqual([w.vpc.id, second.id].sort())
    }))

  it.effect("a VPC holds at most 50 guardrails", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const guard = (i: number) =>
        raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
          headers: w.headers,
          body: { ...noSsh, name: `guard ${i}`, ports: String(30000 + i), remote_cidr: "192.0.2.0/24" }
        })
      for (let i = 0; i < 50; i++) expect((yield* guard(i)).status).toBe(201)
      const over = yield* guard(50)
      expect([over.status, (over.body as Json).detail]).toEqual([
        409,
        expect.stringContaining("already has 50 guardrails")
      ])
    }))

  it.effect("another tenant's VPCs and guardrails are not found; bad input is 422", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const other = yield* workspace
      const theirs = (yield* raw("POST", `/vpcs/${other.vpc.id}/guardrails`, { headers: other.headers, body: noSsh }))
        .body as Json
      expect((yield* raw("GET", `/vpcs/${other.vpc.id}/guardrails`, { headers: w.headers })).status).toBe(404)
      expect((yield* raw("POST", `/vpcs/${other.vpc.id}/guardrails`, { headers: w.headers, body: noSsh })).status)
        .toBe(404)
      expect((yield* raw("DELETE", `/guardrails/${theirs.id}`, { headers: w.headers })).status).toBe(404)
      const icmpPorts = yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
        headers: w.headers,
        body: { ...noSsh, protocol: "icmp" }
      })
      expect(icmpPorts.status).toBe(422)
      expect((icmpPorts.body as Json).detail.field).toBe("ports")
      const foreignPod = yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
        headers: w.headers,
        body: { ...noSsh, local: { pod_ids: ["7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a"] } }
      })
      expect(foreignPod.status).toBe(422)
      expect((foreignPod.body as Json).detail.field).toBe("local.pod_ids")
    }))
})
