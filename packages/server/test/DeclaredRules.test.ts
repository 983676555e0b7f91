/**
 * A VPC's whole policy declared at once (`PUT /vpcs/{vpc_id}/security-rules`): the rules become
 * exactly the list, atomically, keeping the ids of the rules it matches; a plan first
 * (`dry_run=true`); optimistic concurrency through the rules' ETag.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminLogin, raw, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

const rule = (name: string, overrides: Json = {}): Json => ({
  name,
  direction: "ingress",
  action: "allow",
  priority: 100,
  protocol: "tcp",
  ports: "443",
  remote_type: "cidr",
  remote_cidr: "203.0.113.0/24",
  ...overrides
})

/** The fields a declaration sets, as a rule in an answer shows them. */
const declared = (r: Json) => ({
  name: r.name,
  description: r.description ?? null,
  direction: r.direction,
  action: r.action,
  priority: r.priority,
  protocol: r.protocol ?? "all",
  ports: r.ports ?? null,
  remote_type: r.remote_type,
  remote_cidr: r.remote_cidr ?? null,
  remote_vpc_id: r.remote_vpc_id ?? null,
  target_type: r.target_type ?? "vpc",
  target_subnet_id: r.target_subnet_id ?? null,
  target_pod_ids: r.target_pod_ids ?? null,
  enabled: r.enabled ?? true
})

const byName = (rules: ReadonlyArray<Json>) => [...rules].map(declared).sort((a, b) => a.name.localeCompare(b.name))

type Workspace = Effect.Effect.Success<typeof workspace>

const put = (w: Workspace, rules: ReadonlyArray<Json>, options: { query?: string; headers?: Json } = {}) =>
  raw("PUT", `/vpcs/${w.vpc.id}/security-rules${options.query ?? ""}`, {
    headers: { ...w.headers, ...options.headers },
    body: { rules }
  })

const list = (w: Workspace) => raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })

const auditOf = (requestId: string) =>
  Effect.gen(function*() {
    const admin = yield* adminLogin
    const trail = (yield* raw("GET", "/audit-log?action=securityRules.replace&limit=500", {
      headers: { "x-admin-token": admin.api_token }
    })).body as Json
    return (trail.entries as Array<Json>).filter((e) => e.request_id === requestId)
  })

layer(testServer(), { excludeTestServices: true })("declared rules", (it) => {
  it.effect("the rules become exactly the list; ids are kept by name; the same list again changes nothing", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const seeded = ((yield* list(w)).body as Json).rules as Array<Json>
      expect(seeded.map((r) => r.name)).toEqual(["Allow internal traffic"])
      const policy = [
        rule("https"),
        rule("ssh from office", { ports: "22", remote_cidr: "198.51.100.0/24", priority: 50 }),
        rule("no telnet", { action: "deny", ports: "23", remote_cidr: "0.0.0.0/0", priority: 10 })
      ]
      const first = yield* put(w, policy, { headers: { "x-request-id": "declare-1" } })
      expect(first.status, JSON.stringify(first.body)).toBe(200)
      const answer = first.body as Json
      expect(answer.dry_run).toBe(false)
      expect(answer.created.map((r: Json) => r.name).sort()).toEqual(["https", "no telnet", "ssh from office"])
      expect(answer.deleted).toEqual([seeded[0]!.id])
      expect(answer.updated).toEqual([])
      expect(answer.unchanged).toEqual([])
      expect(answer.rules.map((r: Json) => r.name)).toEqual(["no telnet", "ssh from office", "https"])
      expect(first.headers["etag"]).toBe(answer.etag)

      const after = yield* list(w)
      expect(byName((after.body as Json).rules)).toEqual(byName(policy))
      expect(after.headers["etag"]).toBe(answer.etag)
      // One audit entry per rule changed, each naming its rule.
      const entries = yield* auditOf("declare-1")
      expect(entries.map((e) => e.resource_id).sort()).toEqual(
        [...answer.created.map((r: Json) => r.id), seeded[0]!.id].sort()
      )

      const again = yield* put(w, policy, { headers: { "x-request-id": "declare-2" } })
      expect(again.status).toBe(200)
      expect((again.body as Json).unchanged.length).toBe(3)
      expect((again.body as Json).created.concat((again.body as Json).updated, (again.body as Json).deleted)).toEqual(
        []
      )
      expect((yield* list(w)).body).toEqual(after.body)
      expect(yield* auditOf("declare-2")).toEqual([])

      // A changed field updates the rule in place; a new name is a new rule, the missing one deleted.
      const https = answer.created.find((r: Json) => r.name === "https")
      const ssh = answer.created.find((r: Json) => r.name === "ssh from office")
      const changed = yield* put(w, [
        rule("https", { ports: "443,8443" }),
        rule("ssh from vpn", { ports: "22", remote_cidr: "192.0.2.0/24", priority: 50 }),
        { ...rule("ssh from office", { ports: "22", remote_cidr: "198.51.100.0/24", priority: 60 }), id: ssh.id }
      ])
      const third = changed.body as Json
      expect(third.updated.map((r: Json) => [r.id, r.ports, r.priority]).sort()).toEqual(
        [[https.id, "443,8443", 100], [ssh.id, "22", 60]].sort()
      )
      expect(third.created.map((r: Json) => r.name)).toEqual(["ssh from vpn"])
      expect(third.deleted.length).toBe(1)
    }))

  it.effect("a plan answers the changes and their impact, and changes nothing", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const before = yield* list(w)
      const plan = yield* put(w, [rule("https")], { query: "?dry_run=true", headers: { "x-request-id": "plan-1" } })
      expect(plan.status).toBe(200)
      const body = plan.body as Json
      expect(body.dry_run).toBe(true)
      expect(body.etag).toBe(before.headers["etag"])
      expect(body.created.map((r: Json) => r.name)).toEqual(["https"])
      expect(body.deleted.length).toBe(1)
      expect(body.impact.opened).toEqual([
        expect.objectContaining({ protocol: "tcp", ports: "443", remote_cidrs: ["203.0.113.0/24"] })
      ])
      // Deleting "Allow internal traffic" closes what it allowed from inside the VPC.
      expect(body.impact.closed.length).toBeGreaterThan(0)
      expect((yield* list(w)).body).toEqual(before.body)
      expect(yield* auditOf("plan-1")).toEqual([])
    }))

  it.effect("invalid and ambiguous items are all named by index; nothing changes", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const before = yield* list(w)
      const bad = yield* put(w, [
        rule("ok"),
        rule("icmp with ports", { protocol: "icmp", ports: "80" }),
        rule("no cidr", { remote_cidr: null }),
        rule("twice"),
        rule("twice", { ports: "80" }),
        { ...rule("ghost"), id: "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a" }
      ])
      expect(bad.status).toBe(422)
      const fields = ((bad.body as Json).errors as Array<Json>).map((e) => e.field)
      expect(fields).toEqual([
        "rules[1].ports",
        "rules[2].remote_cidr",
        "rules[3].name",
        "rules[4].name",
        "rules[5].id"
      ])
      expect((bad.body as Json).detail.field).toBe("rules[1].ports")

      const schema = yield* put(w, [rule("ok"), rule("bad port", { ports: "99999" })])
      expect(schema.status).toBe(422)
      expect(((schema.body as Json).errors as Array<Json>).map((e) => e.field)).toEqual(["rules[1].ports"])
      expect((yield* list(w)).body).toEqual(before.body)

      // Two existing rules of one name: an item naming it must say which by id.
      for (const priority of [100, 200]) {
        yield* raw("POST", "/security-rules", {
          headers: w.headers,
          body: { ...rule("dup", { priority }), vpc_id: w.vpc.id }
        })
      }
      const ambiguous = yield* put(w, [rule("dup")])
      expect(ambiguous.status).toBe(422)
      expect((ambiguous.body as Json).detail).toMatchObject({ field: "rules[0].name" })
      expect((ambiguous.body as Json).detail.message).toContain("names 2 rules")
    }))

  it.effect("the 200-rule limit holds on the end state; another tenant's VPC is 404", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const other = yield* workspace
      const many = Array.from({ length: 201 }, (_, i) => rule(`r${i}`, { ports: String(1000 + i) }))
      const tooMany = yield* put(w, many)
      expect(tooMany.status).toBe(409)
      expect((tooMany.body as Json).detail).toContain("201 rules")
      const exactly = yield* put(w, many.slice(0, 200))
      expect(exactly.status).toBe(200)
      expect((exactly.body as Json).rules.length).toBe(200)
      const foreign = yield* raw("PUT", `/vpcs/${other.vpc.id}/security-rules`, {
        headers: w.headers,
        body: { rules: [] }
      })
      expect(foreign.status).toBe(404)
    }))

  it.effect("If-Match: the rules' ETag applies, a stale one is 412 and changes nothing, * matches", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const etag = (yield* list(w)).headers["etag"]!
      expect(etag).toMatch(/^"[0-9a-f]{32}"$/)
      const applied = yield* put(w, [rule("a")], { headers: { "if-match": etag } })
      expect(applied.status).toBe(200)
      const stale = yield* put(w, [rule("b")], { headers: { "if-match": etag } })
      expect(stale.status).toBe(412)
      expect((stale.body as Json).detail).toContain("changed since")
      expect(((yield* list(w)).body as Json).rules.map((r: Json) => r.name)).toEqual(["a"])
      const any = yield* put(w, [rule("b")], { headers: { "if-match": "*" } })
      expect(any.status).toBe(200)
      const listed = yield* put(w, [rule("c")], { headers: { "if-match": `"0", ${any.headers["etag"]}` } })
      expect(listed.status).toBe(200)
    }))

  it.effect("one rule's ETag: PATCH and DELETE with a stale If-Match are 412 and change nothing", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const made =
        (yield* raw("POST", "/security-rules", { headers: w.headers, body: { ...rule("one"), vpc_id: w.vpc.id } }))
          .body as Json
      const path = `/security-rules/${made.rule.id}`
      const first = yield* raw("GET", path, { headers: w.headers })
      const etag = first.headers["etag"]!
      expect(etag).toMatch(/^"[0-9a-f]{32}"$/)
      // Another rule's change leaves this one's version alone.
      yield* raw("POST", "/security-rules", { headers: w.headers, body: { ...rule("two"), vpc_id: w.vpc.id } })
      expect((yield* raw("GET", path, { headers: w.headers })).headers["etag"]).toBe(etag)

      const patched = yield* raw("PATCH", path, { headers: { ...w.headers, "if-match": etag }, body: { priority: 7 } })
      expect(patched.status, patched.text).toBe(200)
      const now = patched.headers["etag"]!
      expect(now).not.toBe(etag)
      expect((yield* raw("GET", path, { headers: w.headers })).headers["etag"]).toBe(now)

      const stale = yield* raw("PATCH", path, { headers: { ...w.headers, "if-match": etag }, body: { priority: 9 } })
      expect(stale.status).toBe(412)
      expect((stale.body as Json).detail).toContain("changed since")
      const gone = yield* raw("DELETE", path, { headers: { ...w.headers, "if-match": etag } })
      expect(gone.status).toBe(412)
      expect(((yield* raw("GET", path, { headers: w.headers })).body as Json).priority).toBe(7)

      // Unquoted, as a shell passes it, the current version matches.
      const deleted = yield* raw("DELETE", path, { headers: { ...w.headers, "if-match": now.slice(1, -1) } })
      expect(deleted.status, deleted.text).toBe(200)
      expect((yield* raw("GET", path, { headers: w.headers })).status).toBe(404)
    }))

  it.effect("rules sent back as they were read: each item's etag is its If-Match; a rule moved or gone is 412", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      yield* put(w, [rule("a"), rule("b")])
      const read = ((yield* list(w)).body as Json).rules as Array<Json>
      const sentBack = read.map(({ created_at: _c, status: _s, updated_at: _u, vpc_id: _v, ...item }) => item)
      expect(sentBack.every((item) => typeof item.etag === "string")).toBe(true)
      const a = sentBack.find((item) => item.name === "a")!

      const changed = yield* put(w, sentBack.map((item) => item === a ? { ...item, priority: 300 } : item))
      expect(changed.status, changed.text).toBe(200)
      expect((changed.body as Json).updated.map((r: Json) => r.id)).toEqual([a.id])

      // The same items again: "a" moved since it was read.
      const stale = yield* put(w, sentBack)
      expect(stale.status, stale.text).toBe(412)
      expect((stale.body as Json).detail).toContain(`rules[${sentBack.indexOf(a)}]`)
      yield* raw("DELETE", `/security-rules/${a.id}`, { headers: w.headers })
      const gone = yield* put(w, sentBack.filter((item) => item !== a).concat([{ ...a, id: undefined }]))
      expect(gone.status, gone.text).toBe(412)
      expect(((yield* list(w)).body as Json).rules.map((r: Json) => r.name)).toEqual(["b"])
    }))
})
