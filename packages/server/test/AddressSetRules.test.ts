/**
 * Rules whose remote is an address set, as a tenant sees them on every store: made, judged and
 * declared by the set (by id, or by name in a declaration); a set's edit moves the verdicts of
 * every VPC whose rules name it, previewed per VPC by a dry run, refused (409, with the witness)
 * when it would break a guardrail in any of them; a set a rule names cannot be deleted.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminLogin, raw, setProviderConfig, sshFromSet, testServer, uniqueName, workspace } from "./Harness.js"

type Json = Record<string, any>

/**
 * A tenant with two VPCs (one subnet each), a set of two office networks, and a bastion pod in the
 * first VPC published to the internet on ssh (the offices reach nothing else).
 */
const offices = Effect.gen(function*() {
  // The platform's uplink, through which the internet reaches what is published.
  yield* setProviderConfig()
  const w = yield* workspace
  const other = yield* w.newVpc()
  const otherSubnet = yield* raw("POST", "/subnets", {
    headers: w.headers,
    body: { ...w.creds, vpc_id: other.id, name: "db", cidr: "10.0.2.0/24", gateway_ip: "10.0.2.1" }
  })
  expect(otherSubnet.status).toBe(200)
  const made = yield* raw("POST", "/address-sets", {
    headers: w.headers,
    body: {
      name: uniqueName("offices"),
      entries: [{ cidr: "198.51.100.0/24", description: "Berlin" }, { cidr: "192.0.2.0/25" }]
    }
  })
  expect(made.status).toBe(201)
  const bastion = yield* w.createPod({
    name: "bastion",
    service_port: 22,
    external_access: true,
    external_inbound: true
  })
  expect(bastion.status, JSON.stringify(bastion.body)).toBe(200)
  return { ...w, other, set: made.body as Json, bastion: bastion.body as Json }
})

layer(testServer(), { excludeTestServices: true })("rules naming address sets", (it) => {
  it.effect("a rule names the set; flows from its entries are its to decide, and follow the set's edits", () =>
    Effect.gen(function*() {
      const w = yield* offices
      const made = yield* raw("POST", "/security-rules", { headers: w.headers, body: sshFromSet(w.vpc.id, w.set.id) })
      expect(made.status, JSON.stringify(made.body)).toBe(201)
      const rule = (made.body as Json).rule
      expect(rule).toMatchObject({
        remote_type: "address_set",
        remote_address_set_id: w.set.id,
        remote_cidr: null,
        remote_vpc_id: null,
        status: "active"
      })
      /** The verdict on SSH from `remote_ip`, and the rule that decides it (null: an implied rule). */
      const judge = (remote_ip: string) =>
        Effect.map(
          raw("POST", "/security-rules/evaluate", {
            headers: w.headers,
            body: {
              vpc_id: w.vpc.id,
              direction: "ingress",
              protocol: "tcp",
              port: 22,
              remote_ip,
              target_pod_id: w.bastion.id
            }
          }),
          (r) => {
            const body = r.body as Json
            const decided = (body.allowed_flow ?? body.denied_flow).decided_by
            return [body.reach, decided.rule_id ?? null]
          }
        )
      expect(yield* judge("198.51.100.9")).toEqual(["allowed", rule.id])
      expect(yield* judge("192.0.2.200")).toEqual(["denied", null])
      const explained = (yield* raw(
        "GET",
        `/vpcs/${w.vpc.id}/explain?from=198.51.100.9&to=${w.bastion.id}&protocol=tcp&port=22`,
        { headers: w.headers }
      )).body as Json
      expect(explained.reach).toBe("allowed")
      expect(explained.ingress.allowed_flow.ingress.decided_by).toMatchObject({ kind: "rule", rule_id: rule.id })
      const csv = yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, {
        headers: { ...w.headers, accept: "text/csv" }
      })
      expect(csv.text.split("\r\n")[0]).toContain("remote_vpc_id,remote_address_set_id,")
      expect(csv.text).toContain(`,address_set,,,${w.set.id},`)

      const edited = yield* raw("PATCH", `/address-sets/${w.set.id}`, {
        headers: w.headers,
        body: { entries: [{ cidr: "192.0.2.0/24" }] }
      })
      expect(edited.status, JSON.stringify(edited.body)).toBe(200)
      // Answered once the VPC using the set is in force with the edit, as a rule's change is.
      expect(edited.body).toMatchObject({ entries: [{ cidr: "192.0.2.0/24" }], applied: true, apply_error: null })
      expect(yield* judge("198.51.100.9")).toEqual(["denied", null])
      expect(yield* judge("192.0.2.200")).toEqual(["allowed", rule.id])
      const rules = (yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body as Json
      expect(rules).toMatchObject({ applied: true, apply_error: null })

      const usage = yield* raw("GET", `/address-sets/${w.set.id}/rules`, { headers: w.headers })
      expect(usage.body).toEqual({
        address_set_id: w.set.id,
        rules: [{ rule_id: rule.id, name: "ssh from offices", vpc_id: w.vpc.id }]
      })
    }))

  it.effect("reachability follows a set's edit: a VPC let in by an entry added, and out again", () =>
    Effect.gen(function*() {
      const w = yield* offices
      expect(
        (yield* raw("POST", "/security-rules", { headers: w.headers, body: sshFromSet(w.vpc.id, w.set.id) })).status
      )
        .toBe(201)
      // The other VPC's rule naming this one peers the two: its packets have a route here.
      const peering = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: {
          vpc_id: w.other.id,
          name: "to the apps",
          direction: "egress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          remote_type: "vpc",
          remote_vpc_id: w.vpc.id
        }
      })
      expect(peering.status, JSON.stringify(peering.body)).toBe(201)
      /** The tcp ports every flow from the other VPC to the subnet gets through on. */
      const fromOther = Effect.map(
        raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, { headers: w.headers }),
        (r) =>
          (r.body as Json).pairs.find((p: Json) => p.from.vpc_id === w.other.id && p.to.subnet_id === w.subnet.id)
            .tcp.allowed
      )
      expect(yield* fromOther).toBe("")
      const edit = (entries: ReadonlyArray<string>) =>
        raw("PATCH", `/address-sets/${w.set.id}`, {
          headers: w.headers,
          body: { entries: entries.map((cidr) => ({ cidr })) }
        })
      expect((yield* edit(["198.51.100.0/24", "10.0.2.0/24"])).status).toBe(200)
      expect(yield* fromOther).toBe("22")
      expect((yield* edit(["198.51.100.0/24"])).status).toBe(200)
      expect(yield* fromOther).toBe("")
    }))

  it.effect("the analysis reads a set as its entries: a rule naming it under a broader one is shadowed", () =>
    Effect.gen(function*() {
      const w = yield* offices
      const broad = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: {
          ...sshFromSet(w.vpc.id, w.set.id),
          name: "ssh from the world",
          remote_type: "cidr",
          remote_address_set_id: null,
          remote_cidr: "0.0.0.0/0",
          priority: 10
        }
      })
      expect(broad.status).toBe(201)
      const named =
        (yield* raw("POST", "/security-rules", { headers: w.headers, body: sshFromSet(w.vpc.id, w.set.id) }))
          .body as Json
      const analysis = (yield* raw("GET", `/security-rules/analysis?vpc_id=${w.vpc.id}`, { headers: w.headers }))
        .body as Json
      expect(analysis.findings).toContainEqual(
        expect.objectContaining({
          kind: "shadowed",
          rule_id: named.rule.id,
          related_rule_ids: [(broad.body as Json).rule.id]
        })
      )
      const sarif = yield* raw("GET", `/security-rules/analysis?vpc_id=${w.vpc.id}`, {
        headers: { ...w.headers, accept: "application/sarif+json" }
      })
      expect(sarif.text).toContain(`vpcs/${w.vpc.id}/security-rules/${named.rule.id}`)
    }))

  it.effect("the set must be the tenant's own and named exactly when remote_type is address_set (422)", () =>
    Effect.gen(function*() {
      const w = yield* offices
      const stranger = yield* offices
      const cases: ReadonlyArray<readonly [Json, string, string]> = [
        [{ remote_address_set_id: stranger.set.id }, "remote_address_set_id", "is not one of your address sets"],
        [{ remote_address_set_id: null }, "remote_address_set_id", "required when remote_type is address_set"],
        [{ remote_cidr: "10.0.0.0/8" }, "remote_cidr", "only allowed when remote_type is cidr"],
        [
          { remote_type: "cidr", remote_cidr: "10.0.0.0/8" },
          "remote_address_set_id",
          "only allowed when remote_type is address_set"
        ]
      ]
      for (const [overrides, field, message] of cases) {
        const refused = yield* raw("POST", "/security-rules", {
          headers: w.headers,
          body: sshFromSet(w.vpc.id, w.set.id, overrides)
        })
        expect(refused.status, JSON.stringify(overrides)).toBe(422)
        expect((refused.body as Json).errors).toEqual([{ field, message: expect.stringContaining(message) }])
      }
      const cidr = yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: sshFromSet(w.vpc.id, w.set.id, {
          remote_type: "cidr",
          remote_cidr: "10.9.0.0/16",
          remote_address_set_id: null
        })
      })
      expect(cidr.status).toBe(201)
      const ruleId = (cidr.body as Json).rule.id
      const switched = yield* raw("PATCH", `/security-rules/${ruleId}`, {
        headers: w.headers,
        body: { remote_type: "address_set", remote_address_set_id: w.set.id }
      })
      expect(switched.status, JSON.stringify(switched.body)).toBe(200)
      expect((switched.body as Json).rule).toMatchObject({ remote_cidr: null, remote_address_set_id: w.set.id })
      const half = yield* raw("PATCH", `/security-rules/${ruleId}`, {
        headers: w.headers,
        body: { remote_type: "cidr" }
      })
      expect(half.status).toBe(422)
      expect((half.body as Json).errors[0].field).toBe("remote_cidr")
    }))

  it.effect("a set a rule names is not deleted (409 naming the rule); unused, it is", () =>
    Effect.gen(function*() {
      const w = yield* offices
      const rule = ((yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: sshFromSet(w.other.id, w.set.id)
      })).body as Json).rule
      const refused = yield* raw("DELETE", `/address-sets/${w.set.id}`, { headers: w.headers })
      expect(refused.status).toBe(409)
      expect((refused.body as Json).detail).toContain(`'ssh from offices' (${rule.id}) in VPC ${w.other.id}`)
      expect((yield* raw("GET", `/address-sets/${w.set.id}`, { headers: w.headers })).status).toBe(200)
      expect((yield* raw("DELETE", `/security-rules/${rule.id}`, { headers: w.headers })).status).toBe(200)
      expect((yield* raw("DELETE", `/address-sets/${w.set.id}`, { headers: w.headers })).status).toBe(204)
    }))

  it.effect("an edit's dry run answers its impact in every VPC using the set, and changes nothing", () =>
    Effect.gen(function*() {
      const w = yield* offices
      for (const vpc of [w.vpc, w.other]) {
        const made = yield* raw("POST", "/security-rules", { headers: w.headers, body: sshFromSet(vpc.id, w.set.id) })
        expect(made.status).toBe(201)
      }
      const plan = yield* raw("PATCH", `/address-sets/${w.set.id}?dry_run=true`, {
        headers: { ...w.headers, "if-match": w.set.etag },
        body: { entries: [{ cidr: "198.51.100.0/24" }, { cidr: "203.0.113.0/24" }] }
      })
      expect(plan.status, JSON.stringify(plan.body)).toBe(200)
      const body = plan.body as Json
      expect(body.dry_run).toBe(true)
      expect(body.address_set.entries.map((e: Json) => e.cidr)).toEqual(["198.51.100.0/24", "203.0.113.0/24"])
      expect(body.vpcs.map((v: Json) => v.vpc_id)).toEqual([w.vpc.id, w.other.id])
      for (const impact of body.vpcs) {
        // From the internet, a path carries only what is published: the bastion's port 22 (in the
        // first VPC), never a subnet's other addresses.
        const regions = (of: ReadonlyArray<Json>) =>
          of.map((
            r: Json
          ) => [r.protocol, r.ports, r.remote_summary, r.local.pod_ids.length > 0, r.route.after?.reason])
        const bastion = (cidr: string) => impact.vpc_id === w.vpc.id ? [["tcp", "22", cidr, true, undefined]] : []
        expect(regions(impact.opened)).toEqual([
          ["tcp", "22", "203.0.113.0/24", false, "not_published"],
          ...bastion("203.0.113.0/24")
        ])
        expect(regions(impact.closed)).toEqual([
          ["tcp", "22", "192.0.2.0/25", false, "not_published"],
          ...bastion("192.0.2.0/25")
        ])
        expect(impact.violations).toEqual([])
      }
      expect((yield* raw("GET", `/address-sets/${w.set.id}`, { headers: w.headers })).body).toEqual(w.set)
      const stale = yield* raw("PATCH", `/address-sets/${w.set.id}?dry_run=true`, {
        headers: { ...w.headers, "if-match": "\"0\"" },
        body: { entries: [] }
      })
      expect(stale.status).toBe(412)
    }))

  it.effect("an edit that would break a guardrail in any VPC using the set is 409 with the witness", () =>
    Effect.gen(function*() {
      const w = yield* offices
      const guardrail = yield* raw("POST", `/vpcs/${w.other.id}/guardrails`, {
        headers: w.headers,
        body: {
          name: "no ssh from partners",
          require: "deny",
          direction: "ingress",
          protocol: "tcp",
          ports: "22",
          remote_cidr: "203.0.113.0/24"
        }
      })
      expect(guardrail.status, JSON.stringify(guardrail.body)).toBe(201)
      for (const vpc of [w.vpc, w.other]) {
        expect(
          (yield* raw("POST", "/security-rules", { headers: w.headers, body: sshFromSet(vpc.id, w.set.id) })).status
        )
          .toBe(201)
      }
      const body = { entries: [{ cidr: "203.0.113.128/25" }] }
      const plan = (yield* raw("PATCH", `/address-sets/${w.set.id}?dry_run=true`, { headers: w.headers, body }))
        .body as Json
      expect(plan.vpcs.map((v: Json) => v.violations.length)).toEqual([0, 1])
      const refused = yield* raw("PATCH", `/address-sets/${w.set.id}`, { headers: w.headers, body })
      expect(refused.status).toBe(409)
      expect((refused.body as Json).violations).toEqual([
        expect.objectContaining({
          guardrail_id: (guardrail.body as Json).id,
          vpc_id: w.other.id,
          flow: expect.objectContaining({
            port: 22,
            remote_ip: expect.stringMatching(/^203\.0\.113\.(1[2-9]\d|2\d\d)$/)
          }),
          decided_by: expect.objectContaining({ kind: "rule", name: "ssh from offices" })
        })
      ])
      expect((refused.body as Json).violations).toEqual(plan.vpcs[1].violations)
      expect((yield* raw("GET", `/address-sets/${w.set.id}`, { headers: w.headers })).body).toEqual(w.set)
    }))

  it.effect("a tenant whose rules name its sets is deleted with them", () =>
    Effect.gen(function*() {
      const w = yield* offices
      expect(
        (yield* raw("POST", "/security-rules", { headers: w.headers, body: sshFromSet(w.vpc.id, w.set.id) })).status
      )
        .toBe(201)
      const admin = { "x-admin-token": (yield* adminLogin).api_token }
      const deleted = yield* raw("DELETE", `/tenants/${w.tenant.id}`, { headers: admin })
      expect(deleted.status, deleted.text).toBeLessThan(300)
      expect((yield* raw("GET", `/tenants/${w.tenant.id}`, { headers: admin })).status).toBe(404)
    }))

  it.effect("a declaration names a set by name; an unknown name is 422 at its item", () =>
    Effect.gen(function*() {
      const w = yield* offices
      const { remote_address_set_id: _id, vpc_id: _vpc, ...fields } = sshFromSet(w.vpc.id, w.set.id)
      const item = { ...fields, remote_address_set_name: w.set.name }
      const put = (rules: ReadonlyArray<Json>) =>
        raw("PUT", `/vpcs/${w.vpc.id}/security-rules`, { headers: w.headers, body: { rules } })
      const declared = yield* put([item])
      expect(declared.status, JSON.stringify(declared.body)).toBe(200)
      expect((declared.body as Json).rules).toEqual([
        expect.objectContaining({ name: "ssh from offices", remote_address_set_id: w.set.id })
      ])
      const again = yield* put([{ ...item, remote_address_set_name: undefined, remote_address_set_id: w.set.id }])
      expect((again.body as Json).unchanged).toHaveLength(1)
      const unknown = yield* put([{ ...item, remote_address_set_name: "nowhere" }])
      expect(unknown.status).toBe(422)
      expect((unknown.body as Json).errors).toEqual([
        { field: "rules[0].remote_address_set_name", message: "you have no address set named \"nowhere\"" }
      ])
    }))
})
