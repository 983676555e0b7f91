/**
 * A version per object: every view carries its `etag`; a change sent with `If-Match` naming
 * another version is 412 and changes nothing; with the object's own, it goes through and the
 * object's etag moves (or, for a delete, the object goes). Decided inside the commit: of two
 * changes made against one version at once, one goes through and the other is 412.
 */
import { HttpApi } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { SimulatedEdge } from "@tenet/adapters-memory"
import { Api } from "@tenet/core"
import { Effect, Option, SchemaAST as AST } from "effect"
import {
  adminLogin,
  asAdmin,
  EDGE_ACCOUNT,
  httpsIn,
  newTenant,
  raw,
  setProviderConfig,
  testServer,
  uniqueName,
  workspace
} from "./Harness.js"

type Json = Record<string, any>

const STALE = "\"00000000000000000000000000000000\""

const noTelnet = {
  name: "no telnet",
  require: "deny",
  direction: "ingress",
  protocol: "tcp",
  ports: "23",
  remote_cidr: "203.0.113.0/24"
}

/** A schema's field names, as its JSON has them. */
const fieldsOf = (ast: AST.AST): ReadonlyArray<string> => {
  const encoded = AST.encodedAST(ast)
  return AST.isTypeLiteral(encoded) ? encoded.propertySignatures.map((p) => String(p.name)) : []
}

/** An answer that is an object with its version: the view itself, or a rule change's `rule`. */
const carriesEtag = (ast: AST.AST): boolean =>
  fieldsOf(ast).includes("etag") ||
  (AST.isTypeLiteral(AST.encodedAST(ast)) &&
    (AST.encodedAST(ast) as AST.TypeLiteral).propertySignatures.some((p) => p.name === "rule" && carriesEtag(p.type)))

/** Every create of the contract (what it makes is its audit subject) that answers an object with its etag. */
const createsWithEtag: ReadonlyArray<string> = (() => {
  const found: Array<string> = []
  HttpApi.reflect(Api.TenetApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, successes }) => {
      const made = Api.endpoints.find((e) => e.endpoint === `${group.identifier}.${endpoint.name}`)?.audit
      const answers = [...successes.values()].flatMap(({ ast }) => Option.toArray(ast))
      if (endpoint.method === "POST" && made?.from === "change" && answers.some(carriesEtag)) {
        found.push(`${group.identifier}.${endpoint.name}`)
      }
    }
  })
  return found
})()

const refusedAsStale = (response: { readonly status: number; readonly body: unknown }, what: string) => {
  expect(response.status, JSON.stringify(response.body)).toBe(412)
  expect((response.body as Json).detail).toContain(`${what} changed since ${STALE}`)
}

layer(testServer(), { excludeTestServices: true })("etags", (it) => {
  it.effect("VPCs and subnets: listed with the etag their create answered; a VPC deleted only at its own", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const vpc = yield* w.newVpc()
      expect(vpc.etag).toMatch(/^"[0-9a-f]{32}"$/)
      const listed = (yield* raw("GET", "/vpcs", { headers: w.headers })).body as Array<Json>
      expect(listed.find((v) => v.id === vpc.id)?.etag).toBe(vpc.etag)
      const subnets = (yield* raw("GET", "/subnets", { headers: w.headers })).body as Array<Json>
      expect(subnets.find((s) => s.id === w.subnet.id)?.etag).toBe(w.subnet.etag)

      refusedAsStale(
        yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: { ...w.headers, "if-match": STALE } }),
        `VPC ${vpc.id}`
      )
      const still = (yield* raw("GET", "/vpcs", { headers: w.headers })).body as Array<Json>
      expect(still.map((v) => v.id)).toContain(vpc.id)
      const deleted = yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: { ...w.headers, "if-match": vpc.etag } })
      expect(deleted.status).toBe(204)
    }))

  it.effect("pods: a configuration change moves the etag; changes against the old one are 412 and change nothing", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const pod = (yield* w.createPod()).body as Json
      expect(pod.etag).toMatch(/^"[0-9a-f]{32}"$/)
      const path = `/pods/${pod.id}`
      const changed = yield* raw("PATCH", `${path}/config`, {
        headers: { ...w.headers, "if-match": pod.etag },
        body: { env_vars: { MODE: "blue" } }
      })
      expect(changed.status, JSON.stringify(changed.body)).toBe(200)
      const now = (changed.body as Json).etag
      expect(now).not.toBe(pod.etag)

      for (
        const [method, suffix] of [["POST", "/replicas"], ["DELETE", "/replicas"], ["DELETE", ""]] as const
      ) {
        const stale = yield* raw(method, `${path}${suffix}`, { headers: { ...w.headers, "if-match": pod.etag } })
        expect(stale.status, `${method} ${suffix}`).toBe(412)
      }
      const listed = ((yield* raw("GET", "/pods", { headers: w.headers })).body as Array<Json>).find((p) =>
        p.id === pod.id
      )
      expect(listed).toMatchObject({ etag: now, replica_count: pod.replica_count, env_var_names: ["MODE"] })

      const scaled = yield* raw("POST", `${path}/replicas`, { headers: { ...w.headers, "if-match": now } })
      expect(scaled.status).toBe(200)
      const deleted = yield* raw("DELETE", path, { headers: { ...w.headers, "if-match": (scaled.body as Json).etag } })
      expect(deleted.status).toBe(204)
    }))

  it.effect("every create answers the version of what it made as its ETag header, as a read of it does", () =>
    Effect.gen(function*() {
      yield* setProviderConfig(EDGE_ACCOUNT)
      const w = yield* workspace
      const admin = { "x-admin-token": (yield* adminLogin).api_token }
      const pod = (yield* w.createPod()).body as Json
      const creates: Record<string, Effect.Effect<{ readonly headers: Json; readonly body: unknown }, unknown, any>> = {
        "tenants.create": raw("POST", "/tenants", {
          headers: admin,
          body: { name: uniqueName("t"), password: "long enough password" }
        }),
        "vpcs.create": raw("POST", "/vpcs", {
          headers: w.headers,
          body: { ...w.creds, name: uniqueName("vpc"), enable_internet: true }
        }),
        "subnets.create": raw("POST", "/subnets", {
          headers: w.headers,
          body: { ...w.creds, vpc_id: w.vpc.id, name: "db", cidr: "10.0.2.0/24", gateway_ip: "10.0.2.1" }
        }),
        "securityRules.create": raw("POST", "/security-rules", { headers: w.headers, body: httpsIn(w.vpc.id) }),
        "pods.create": w.createPod(),
        "tunnels.createForPod": raw("POST", `/pods/${pod.id}/tunnel`, {
          headers: w.headers,
          body: { tunnel_name: uniqueName("tun"), subdomain: uniqueName("sub"), protocol_type: "http" }
        }),
        "tunnels.create": raw("POST", `/tunnels?pod_id=${pod.id}`, {
          headers: w.headers,
          body: { subdomain: uniqueName("sub"), protocol_type: "tcp" }
        }),
        "registryCredentials.create": raw("POST", `/tenants/${w.tenant.id}/registry-credentials`, {
          headers: w.headers,
          body: { name: uniqueName("reg"), server: "registry.example.com", username: "ci", password: "secret" }
        }),
        "guardrails.create": raw("POST", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers, body: noTelnet }),
        "tenantGuardrails.create": raw("POST", `/tenants/${w.tenant.id}/guardrails`, {
          headers: admin,
          body: { ...noTelnet, name: "no telnet anywhere" }
        }),
        "addressSets.create": raw("POST", "/address-sets", {
          headers: w.headers,
          body: { name: uniqueName("set"), entries: [{ cidr: "198.51.100.0/24" }] }
        })
      }
      expect(Object.keys(creates).sort()).toEqual([...createsWithEtag].sort())
      for (const [endpoint, create] of Object.entries(creates)) {
        const made = yield* create
        const body = made.body as Json
        const etag = body.etag ?? body.rule?.etag
        expect(etag, `${endpoint} ${JSON.stringify(body)}`).toMatch(/^"[0-9a-f]{32}"$/)
        expect(made.headers["etag"], endpoint).toBe(etag)
      }
      // A dry run made nothing: no version to answer.
      const preview = yield* raw("POST", "/security-rules?dry_run=true", {
        headers: w.headers,
        body: { ...httpsIn(w.vpc.id), name: "ssh in", ports: "22" }
      })
      expect([preview.status, preview.headers["etag"]]).toEqual([200, undefined])
    }))

  it.effect("If-Match compares strongly: a weak tag of the current version is 412 saying why; a malformed one 400", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const vpc = yield* w.newVpc()
      const weak = yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: { ...w.headers, "if-match": `W/${vpc.etag}` } })
      expect(weak.status).toBe(412)
      expect((weak.body as Json).detail).toBe(
        `VPC ${vpc.id}: weak validators cannot be used with If-Match, which compares strongly (RFC 9110, 13.1.1), ` +
          `so W/${vpc.etag} never matches; send ${vpc.etag}`
      )
      const malformed = yield* raw("DELETE", `/vpcs/${vpc.id}`, {
        headers: { ...w.headers, "if-match": "hello world" }
      })
      expect(malformed.status).toBe(400)
      expect((malformed.body as Json).errors.map((e: Json) => e.field)).toEqual(["If-Match"])
      const listed = (yield* raw("GET", "/vpcs", { headers: w.headers })).body as Array<Json>
      expect(listed.map((v) => v.id)).toContain(vpc.id)
      // Its own tag, in a list and with the other forms RFC 9110 allows, goes through.
      const deleted = yield* raw("DELETE", `/vpcs/${vpc.id}`, {
        headers: { ...w.headers, "if-match": ` W/${vpc.etag} ,, ${vpc.etag}` }
      })
      expect(deleted.status).toBe(204)
    }))

  it.effect("two changes made against one version at once: one goes through, the other is 412", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const pod = (yield* w.createPod()).body as Json
      const answers = yield* Effect.all(
        ["a", "b"].map((mode) =>
          raw("PATCH", `/pods/${pod.id}/config`, {
            headers: { ...w.headers, "if-match": pod.etag },
            body: { env_vars: { MODE: mode } }
          })
        ),
        { concurrency: "unbounded" }
      )
      expect(answers.map((a) => a.status).sort()).toEqual([200, 412])
    }))

  it.effect("guardrails and registry credentials: deleted only at their own etag", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const made = yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
        headers: w.headers,
        body: noTelnet
      })
      expect(made.status, JSON.stringify(made.body)).toBe(201)
      const guardrail = made.body as Json
      expect(guardrail.etag).toMatch(/^"[0-9a-f]{32}"$/)
      refusedAsStale(
        yield* raw("DELETE", `/guardrails/${guardrail.id}`, { headers: { ...w.headers, "if-match": STALE } }),
        `guardrail ${guardrail.id}`
      )
      const kept = (yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })).body as Array<Json>
      expect(kept.map((g) => g.etag)).toContain(guardrail.etag)
      expect(
        (yield* raw("DELETE", `/guardrails/${guardrail.id}`, { headers: { ...w.headers, "if-match": guardrail.etag } }))
          .status
      ).toBe(204)

      const credentials = `/tenants/${w.tenant.id}/registry-credentials`
      const credential = (yield* raw("POST", credentials, {
        headers: w.headers,
        body: { name: "ghcr", server: "ghcr.io", username: "ci-bot", password: "pull-secret-value" }
      })).body as Json
      refusedAsStale(
        yield* raw("DELETE", `${credentials}/ghcr`, { headers: { ...w.headers, "if-match": STALE } }),
        "registry credential 'ghcr'"
      )
      const removed = yield* raw("DELETE", `${credentials}/ghcr`, {
        headers: { ...w.headers, "if-match": credential.etag }
      })
      expect(removed.status).toBe(200)
      expect((removed.body as Json).etag).toBe(credential.etag)
    }))

  it.effect("tunnels and tenant-wide guardrails: deleted only at their own etag, a stale one withdrawing nothing", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const admin = { "x-admin-token": (yield* adminLogin).api_token }
      yield* setProviderConfig(EDGE_ACCOUNT)
      const pod = (yield* w.createPod({ service_port: 8080 })).body as Json
      const made = yield* raw("POST", `/pods/${pod.id}/tunnel`, {
        headers: w.headers,
        body: { tunnel_name: uniqueName("tun"), subdomain: uniqueName("sub"), protocol_type: "http" }
      })
      expect(made.status, JSON.stringify(made.body)).toBe(201)
      const tunnel = made.body as Json
      expect(tunnel).toMatchObject({ status: "active", etag: expect.stringMatching(/^"[0-9a-f]{32}"$/) })
      refusedAsStale(
        yield* raw("DELETE", `/tunnels/${tunnel.id}`, { headers: { ...w.headers, "if-match": STALE } }),
        `tunnel ${tunnel.id}`
      )
      // Refused before the provider was asked: the hostname is still routed.
      const edge = yield* SimulatedEdge.EdgeSwitches
      expect((yield* edge.routes).some((r) => r.key === tunnel.id)).toBe(true)
      const kept = (yield* raw("GET", "/tunnels", { headers: w.headers })).body as Array<Json>
      expect(kept.find((t) => t.id === tunnel.id)).toMatchObject({ status: "active", etag: tunnel.etag })
      expect(
        (yield* raw("DELETE", `/tunnels/${tunnel.id}`, { headers: { ...w.headers, "if-match": tunnel.etag } })).status
      ).toBe(204)
      expect((yield* edge.routes).some((r) => r.key === tunnel.id)).toBe(false)

      const guardrails = `/tenants/${w.tenant.id}/guardrails`
      const wide = (yield* raw("POST", guardrails, {
        headers: admin,
        body: { ...noTelnet, name: "no telnet anywhere" }
      })).body as Json
      refusedAsStale(
        yield* raw("DELETE", `${guardrails}/${wide.id}`, { headers: { ...admin, "if-match": STALE } }),
        `guardrail ${wide.id}`
      )
      const seen = (yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })).body as Array<Json>
      expect(seen.map((g) => g.etag)).toEqual([wide.etag])
      expect(
        (yield* raw("DELETE", `${guardrails}/${wide.id}`, { headers: { ...admin, "if-match": wide.etag } })).status
      )
        .toBe(204)
      expect((yield* raw("GET", `/vpcs/${w.vpc.id}/guardrails`, { headers: w.headers })).body).toEqual([])
    }))

  it.effect("tenants: a rotated token moves the etag; a delete against the old one is 412 and keeps everything", () =>
    Effect.gen(function*() {
      const admin = { "x-admin-token": (yield* adminLogin).api_token }
      const { session, tenant } = yield* newTenant("etag")
      expect(tenant.etag).toMatch(/^"[0-9a-f]{32}"$/)
      const rotated = yield* raw("POST", `/tenants/${tenant.id}/rotate-token`, {
        headers: { "x-auth-token": session.api_token }
      })
      expect(rotated.status, JSON.stringify(rotated.body)).toBe(200)
      const now = (yield* raw("GET", `/tenants/${tenant.id}`, { headers: admin })).body as Json
      expect(now.etag).not.toBe(tenant.etag)

      const stale = yield* raw("DELETE", `/tenants/${tenant.id}`, { headers: { ...admin, "if-match": tenant.etag } })
      expect(stale.status, JSON.stringify(stale.body)).toBe(412)
      expect((stale.body as Json).detail).toContain(`tenant ${tenant.id} changed since ${tenant.etag}`)
      expect((yield* raw("GET", `/tenants/${tenant.id}`, { headers: admin })).status).toBe(200)

      // Through the SDK, at its own version: gone.
      yield* (yield* asAdmin).tenants.delete({ path: { tenant_id: tenant.id }, headers: { "if-match": now.etag } })
      expect((yield* raw("GET", `/tenants/${tenant.id}`, { headers: admin })).status).toBe(404)
    }))
})
