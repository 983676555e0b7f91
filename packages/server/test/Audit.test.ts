/**
 * The audit trail as its readers see it. Every endpoint of the contract that changes something
 * is called, in random orders, successfully, without credentials and refused: a success leaves
 * exactly one entry, a refusal of a known caller one entry with its error, a request without
 * valid credentials none. Entries are readable by the admin for everyone and by a tenant for
 * itself only, filter and page, hold no secret, and commit with the change or not at all.
 */
import { expect, layer } from "@effect/vitest"
import { Api, Store } from "@tenet/core"
import { Effect, FastCheck as fc, Layer } from "effect"
import { TestServer } from "../src/index.js"
import {
  adminLogin,
  EDGE_ACCOUNT,
  newTenant,
  raw,
  setProviderConfig,
  TENANT_PASSWORD,
  testServer,
  uniqueName
} from "./Harness.js"

type Json = Record<string, any>
type Method = "GET" | "POST" | "PATCH" | "DELETE" | "PUT"

/** Who calls, updated when a call rotates a token. */
interface Callers {
  admin: string
  tenant: { id: string; name: string; token: string }
}

interface Call {
  readonly method: Method
  readonly path: string
  readonly body?: unknown
  /** Whose credentials it carries: none, or whose name the entry's actor must be. */
  readonly as: "admin" | "tenant" | "none"
  /** A login names no token: its actor is who logged in. */
  readonly actor?: string
}

const FOREIGN = "00000000-0000-4000-8000-000000000000"

/** A request that must succeed, for setting a call up. */
const must = (method: Method, path: string, headers: Record<string, string>, body?: unknown) =>
  Effect.map(raw(method, path, { headers, body }), (response) => {
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
    return response.body as Json
  })

const headersOf = (callers: Callers, as: Call["as"]): Record<string, string> =>
  as === "admin"
    ? { "x-admin-token": callers.admin }
    : as === "tenant"
    ? { "x-auth-token": callers.tenant.token, "x-api-token": callers.tenant.token }
    : {}

/** The ways of calling each endpoint: set up what it needs, answer the call to measure. */
interface Endpoint {
  readonly ok: (c: Callers) => Effect.Effect<Call, unknown, any>
  /** The endpoint refusing a known caller (absent where nothing can be refused). */
  readonly refused?: (c: Callers) => Effect.Effect<Call, unknown, any>
}

const asTenant = (c: Callers) => headersOf(c, "tenant")
const asAdmin = (c: Callers) => headersOf(c, "admin")
const creds = (c: Callers) => ({ token: c.tenant.token, tenant_id: c.tenant.id })

const vpc = (c: Callers) =>
  must("POST", "/vpcs", asTenant(c), { ...creds(c), name: uniqueName("v"), enable_internet: true })
const subnetIn = (c: Callers, vpcId: string) =>
  must("POST", "/subnets", asTenant(c), {
    ...creds(c),
    vpc_id: vpcId,
    name: "s",
    cidr: "10.0.1.0/24",
    gateway_ip: "10.0.1.1"
  })
const addressSet = (c: Callers) =>
  must("POST", "/address-sets", asTenant(c), { name: uniqueName("set"), entries: [{ cidr: "192.0.2.0/24" }] })
const pod = (c: Callers) =>
  Effect.gen(function*() {
    const v = yield* vpc(c)
    const s = yield* subnetIn(c, v.id)
    return yield* must("POST", "/pods", asTenant(c), {
      ...creds(c),
      vpc_id: v.id,
      subnet_id: s.id,
      name: uniqueName("p"),
      container_image: "nginx:1.27",
      env_vars: { SECRET_VALUE: "env-secret-never-audited" }
    })
  })
/** An allow rule for the VPC, unique by name. */
const ruleBody = (vpcId: string) => ({
  vpc_id: vpcId,
  name: uniqueName("r"),
  direction: "ingress",
  action: "allow",
  priority: 100,
  protocol: "tcp",
  ports: "443",
  remote_type: "cidr",
  remote_cidr: "10.0.0.0/8"
})
const rule = (c: Callers) =>
  Effect.flatMap(
    vpc(c),
    (v) => Effect.map(must("POST", "/security-rules", asTenant(c), ruleBody(v.id)), (mutation) => mutation.rule as Json)
  )
const tunnelBody = () => ({ tunnel_name: uniqueName("tun"), subdomain: uniqueName("sub"), protocol_type: "http" })
const throwawayTenant = (c: Callers) =>
  must("POST", "/tenants", asAdmin(c), { name: uniqueName("gone"), password: "throwaway password" })
const credential = () => ({
  name: uniqueName("reg"),
  server: "registry.example.com",
  username: "robot",
  password: "registry-secret-never-audited"
})

const call = (as: Call["as"], method: Method, path: string, body?: unknown, actor?: string): Call => ({
  method,
  path,
  body,
  as,
  ...(actor === undefined ? {} : { actor })
})

const ENDPOINTS: Record<string, Endpoint> = {
  "adminIdentity.login": {
    ok: () =>
      Effect.succeed(
        call(
          "none",
          "POST",
          "/admin/login",
          { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD },
          "admin"
        )
      )
  },
  "adminIdentity.logout": { ok: () => Effect.succeed(call("admin", "POST", "/admin/logout")) },
  "adminIdentity.rotateToken": { ok: () => Effect.succeed(call("admin", "POST", "/admin/rotate-token")) },
  "tenantIdentity.login": {
    ok: (c) =>
      Effect.succeed(
        call("none", "POST", "/tenants/login", { name: c.tenant.name, password: TENANT_PASSWORD }, "tenant")
      )
  },
  "tenantIdentity.logout": { ok: () => Effect.succeed(call("tenant", "POST", "/tenants/logout")) },
  "tenantIdentity.rotateToken": {
    ok: (c) => Effect.succeed(call("tenant", "POST", `/tenants/${c.tenant.id}/rotate-token`)),
    refused: () => Effect.succeed(call("tenant", "POST", `/tenants/${FOREIGN}/rotate-token`))
  },
  "tenants.create": {
    ok: () => Effect.succeed(call("admin", "POST", "/tenants", { name: uniqueName("new"), password: "new password" })),
    refused: (c) => Effect.succeed(call("admin", "POST", "/tenants", { name: c.tenant.name, password: "taken name" }))
  },
  "quotas.set": {
    ok: (c) => Effect.succeed(call("admin", "PUT", `/tenants/${c.tenant.id}/quotas`, { vpcs: 1000 })),
    refused: () => Effect.succeed(call("admin", "PUT", `/tenants/${FOREIGN}/quotas`, { vpcs: 1000 }))
  },
  "tenants.delete": {
    ok: (c) => Effect.map(throwawayTenant(c), (t) => call("admin", "DELETE", `/tenants/${t.id}`)),
    refused: () => Effect.succeed(call("admin", "DELETE", `/tenants/${FOREIGN}`))
  },
  "domains.assign": {
    ok: (c) =>
      Effect.succeed(
        call("admin", "POST", `/tenants/${c.tenant.id}/domains`, { domain: `${uniqueName("d")}.example` })
      ),
    refused: () => Effect.succeed(call("admin", "POST", `/tenants/${FOREIGN}/domains`, { domain: "x.example" }))
  },
  "domains.remove": {
    ok: (c) =>
      Effect.map(
        must("POST", `/tenants/${c.tenant.id}/domains`, asAdmin(c), { domain: `${uniqueName("d")}.example` }),
        (d) => call("admin", "DELETE", `/tenants/${c.tenant.id}/domains/${d.domain}`)
      ),
    refused: (c) => Effect.succeed(call("admin", "DELETE", `/tenants/${c.tenant.id}/domains/absent.example`))
  },
  "providerConfig.put": {
    ok: () =>
      Effect.succeed(call("admin", "POST", "/provider-config", {
        external_subnet_cidr: "203.0.113.0/24",
        external_subnet_gateway: "203.0.113.1",
        peering_subnet_cidr: "100.64.0.0/16",
        ...EDGE_ACCOUNT
      })),
    refused: () => Effect.succeed(call("admin", "POST", "/provider-config", { external_subnet_cidr: "not a cidr" }))
  },
  "serviceTunnels.create": {
    ok: () =>
      Effect.succeed(
        call("admin", "POST", "/service-tunnels", { service: uniqueName("svc"), subdomain: uniqueName("s") })
      ),
    refused: () => Effect.succeed(call("admin", "POST", "/service-tunnels", { service: "Not A Label" }))
  },
  "serviceTunnels.delete": {
    ok: (c) =>
      Effect.map(
        must("POST", "/service-tunnels", asAdmin(c), { service: uniqueName("svc"), subdomain: uniqueName("s") }),
        (t) => call("admin", "DELETE", `/service-tunnels/${t.id}`)
      ),
    refused: () => Effect.succeed(call("admin", "DELETE", `/service-tunnels/${FOREIGN}`))
  },
  "vpcs.create": {
    ok: (c) =>
      Effect.succeed(call("tenant", "POST", "/vpcs", { ...creds(c), name: uniqueName("v"), enable_internet: true })),
    refused: (c) =>
      Effect.succeed(call("tenant", "POST", "/vpcs", { ...creds(c), name: "Not A Label", enable_internet: true }))
  },
  "vpcs.delete": {
    ok: (c) => Effect.map(vpc(c), (v) => call("tenant", "DELETE", `/vpcs/${v.id}`)),
    refused: () => Effect.succeed(call("tenant", "DELETE", `/vpcs/${FOREIGN}`))
  },
  "subnets.create": {
    ok: (c) =>
      Effect.map(vpc(c), (v) =>
        call("tenant", "POST", "/subnets", {
          ...creds(c),
          vpc_id: v.id,
          name: "s",
          cidr: "10.0.1.0/24",
          gateway_ip: "10.0.1.1"
        })),
    refused: (c) =>
      Effect.succeed(call("tenant", "POST", "/subnets", {
        ...creds(c),
        vpc_id: FOREIGN,
        name: "s",
        cidr: "10.0.1.0/24",
        gateway_ip: "10.0.1.1"
      }))
  },
  "securityRules.create": {
    ok: (c) => Effect.map(vpc(c), (v) => call("tenant", "POST", "/security-rules", ruleBody(v.id))),
    refused: () => Effect.succeed(call("tenant", "POST", "/security-rules", ruleBody(FOREIGN)))
  },
  "securityRules.update": {
    ok: (c) => Effect.map(rule(c), (r) => call("tenant", "PATCH", `/security-rules/${r.id}`, { priority: 200 })),
    refused: (c) => Effect.map(rule(c), (r) => call("tenant", "PATCH", `/security-rules/${r.id}`, { priority: -1 }))
  },
  "securityRules.delete": {
    ok: (c) => Effect.map(rule(c), (r) => call("tenant", "DELETE", `/security-rules/${r.id}`)),
    refused: () => Effect.succeed(call("tenant", "DELETE", `/security-rules/${FOREIGN}`))
  },
  "securityRules.reorder": {
    ok: (c) =>
      Effect.gen(function*() {
        const r = yield* rule(c)
        const list = yield* must("GET", `/security-rules?vpc_id=${r.vpc_id}`, asTenant(c))
        return call("tenant", "POST", "/security-rules/reorder", {
          vpc_id: r.vpc_id,
          rule_ids: (list.rules as Array<Json>).map((x) => x.id).reverse()
        })
      }),
    refused: () => Effect.succeed(call("tenant", "POST", "/security-rules/reorder", { vpc_id: FOREIGN, rule_ids: [] }))
  },
  "securityRules.replace": {
    // One rule added to the VPC's rules as they are: one rule changed, one entry.
    ok: (c) =>
      Effect.gen(function*() {
        const v = yield* vpc(c)
        const list = yield* must("GET", `/security-rules?vpc_id=${v.id}`, asTenant(c))
        const kept = (list.rules as Array<Json>).map(
          ({ created_at: _c, status: _s, updated_at: _u, vpc_id: _v, ...declared }) => declared
        )
        const { vpc_id: _vpc, ...added } = ruleBody(v.id)
        return call("tenant", "PUT", `/vpcs/${v.id}/security-rules`, { rules: [...kept, added] })
      }),
    refused: () => Effect.succeed(call("tenant", "PUT", `/vpcs/${FOREIGN}/security-rules`, { rules: [] }))
  },
  "guardrails.create": {
    ok: (c) =>
      Effect.map(vpc(c), (v) =>
        call("tenant", "POST", `/vpcs/${v.id}/guardrails`, {
          name: "no telnet",
          require: "deny",
          direction: "ingress",
          protocol: "tcp",
          ports: "23",
          remote_cidr: "0.0.0.0/0"
        })),
    refused: () =>
      Effect.succeed(call("tenant", "POST", `/vpcs/${FOREIGN}/guardrails`, {
        name: "x",
        require: "deny",
        direction: "ingress",
        protocol: "tcp",
        remote_cidr: "0.0.0.0/0"
      }))
  },
  "guardrails.delete": {
    ok: (c) =>
      Effect.gen(function*() {
        const v = yield* vpc(c)
        const g = yield* must("POST", `/vpcs/${v.id}/guardrails`, asTenant(c), {
          name: "no telnet",
          require: "deny",
          direction: "ingress",
          protocol: "tcp",
          ports: "23",
          remote_cidr: "0.0.0.0/0"
        })
        return call("tenant", "DELETE", `/guardrails/${g.id}`)
      }),
    refused: () => Effect.succeed(call("tenant", "DELETE", `/guardrails/${FOREIGN}`))
  },
  "tenantGuardrails.create": {
    ok: (c) =>
      Effect.succeed(call("admin", "POST", `/tenants/${c.tenant.id}/guardrails`, {
        name: uniqueName("no-telnet"),
        require: "deny",
        direction: "ingress",
        protocol: "tcp",
        ports: "23",
        remote_cidr: "203.0.113.0/24"
      })),
    refused: () =>
      Effect.succeed(call("admin", "POST", `/tenants/${FOREIGN}/guardrails`, {
        name: "x",
        require: "deny",
        direction: "ingress",
        protocol: "tcp",
        remote_cidr: "203.0.113.0/24"
      }))
  },
  "tenantGuardrails.delete": {
    ok: (c) =>
      Effect.map(
        must("POST", `/tenants/${c.tenant.id}/guardrails`, asAdmin(c), {
          name: uniqueName("no-telnet"),
          require: "deny",
          direction: "ingress",
          protocol: "tcp",
          ports: "23",
          remote_cidr: "203.0.113.0/24"
        }),
        (g) => call("admin", "DELETE", `/tenants/${c.tenant.id}/guardrails/${g.id}`)
      ),
    refused: (c) => Effect.succeed(call("admin", "DELETE", `/tenants/${c.tenant.id}/guardrails/${FOREIGN}`))
  },
  "addressSets.create": {
    ok: () =>
      Effect.succeed(call("tenant", "POST", "/address-sets", {
        name: uniqueName("offices"),
        entries: [{ cidr: "198.51.100.0/24" }]
      })),
    refused: (c) =>
      Effect.map(
        addressSet(c),
        (set) => call("tenant", "POST", "/address-sets", { name: set.name, entries: [] })
      )
  },
  "addressSets.update": {
    ok: (c) =>
      Effect.map(
        addressSet(c),
        (set) => call("tenant", "PATCH", `/address-sets/${set.id}`, { entries: [{ cidr: "203.0.113.0/24" }] })
      ),
    refused: () => Effect.succeed(call("tenant", "PATCH", `/address-sets/${FOREIGN}`, { entries: [] }))
  },
  "addressSets.delete": {
    ok: (c) => Effect.map(addressSet(c), (set) => call("tenant", "DELETE", `/address-sets/${set.id}`)),
    refused: () => Effect.succeed(call("tenant", "DELETE", `/address-sets/${FOREIGN}`))
  },
  "pods.create": {
    ok: (c) =>
      Effect.gen(function*() {
        const v = yield* vpc(c)
        const s = yield* subnetIn(c, v.id)
        return call("tenant", "POST", "/pods", {
          ...creds(c),
          vpc_id: v.id,
          subnet_id: s.id,
          name: uniqueName("p"),
          container_image: "nginx:1.27"
        })
      }),
    refused: (c) =>
      Effect.succeed(call("tenant", "POST", "/pods", {
        ...creds(c),
        vpc_id: FOREIGN,
        subnet_id: FOREIGN,
        name: "p",
        container_image: "nginx:1.27"
      }))
  },
  "pods.delete": {
    ok: (c) => Effect.map(pod(c), (p) => call("tenant", "DELETE", `/pods/${p.id}`)),
    refused: () => Effect.succeed(call("tenant", "DELETE", `/pods/${FOREIGN}`))
  },
  "pods.addReplica": {
    ok: (c) => Effect.map(pod(c), (p) => call("tenant", "POST", `/pods/${p.id}/replicas`)),
    refused: () => Effect.succeed(call("tenant", "POST", `/pods/${FOREIGN}/replicas`))
  },
  "pods.removeReplica": {
    ok: (c) =>
      Effect.gen(function*() {
        const p = yield* pod(c)
        yield* must("POST", `/pods/${p.id}/replicas`, asTenant(c))
        return call("tenant", "DELETE", `/pods/${p.id}/replicas`)
      }),
    refused: () => Effect.succeed(call("tenant", "DELETE", `/pods/${FOREIGN}/replicas`))
  },
  "pods.restart": {
    ok: (c) => Effect.map(pod(c), (p) => call("tenant", "POST", `/pods/${p.id}/restart`)),
    refused: () => Effect.succeed(call("tenant", "POST", `/pods/${FOREIGN}/restart`))
  },
  "pods.configure": {
    ok: (c) => Effect.map(pod(c), (p) => call("tenant", "PATCH", `/pods/${p.id}/config`, { auto_healing: false })),
    refused: () => Effect.succeed(call("tenant", "PATCH", `/pods/${FOREIGN}/config`, { auto_healing: false }))
  },
  "tunnels.createForPod": {
    ok: (c) => Effect.map(pod(c), (p) => call("tenant", "POST", `/pods/${p.id}/tunnel`, tunnelBody())),
    refused: () => Effect.succeed(call("tenant", "POST", `/pods/${FOREIGN}/tunnel`, tunnelBody()))
  },
  "tunnels.create": {
    ok: (c) =>
      Effect.map(pod(c), (p) => call("tenant", "POST", `/tunnels?pod_id=${p.id}`, { subdomain: uniqueName("a") })),
    refused: () => Effect.succeed(call("tenant", "POST", `/tunnels?pod_id=${FOREIGN}`, null))
  },
  "tunnels.delete": {
    ok: (c) =>
      Effect.gen(function*() {
        const p = yield* pod(c)
        const t = yield* must("POST", `/pods/${p.id}/tunnel`, asTenant(c), tunnelBody())
        return call("tenant", "DELETE", `/tunnels/${t.id}`)
      }),
    refused: () => Effect.succeed(call("tenant", "DELETE", `/tunnels/${FOREIGN}`))
  },
  "registryCredentials.create": {
    ok: (c) => Effect.succeed(call("tenant", "POST", `/tenants/${c.tenant.id}/registry-credentials`, credential())),
    refused: () => Effect.succeed(call("tenant", "POST", `/tenants/${FOREIGN}/registry-credentials`, credential()))
  },
  "registryCredentials.delete": {
    ok: (c) =>
      Effect.map(
        must("POST", `/tenants/${c.tenant.id}/registry-credentials`, asTenant(c), credential()),
        (r) => call("tenant", "DELETE", `/tenants/${c.tenant.id}/registry-credentials/${r.name}`)
      ),
    refused: (c) => Effect.succeed(call("tenant", "DELETE", `/tenants/${c.tenant.id}/registry-credentials/absent`))
  },
  "topology.deploy": {
    ok: (c) =>
      Effect.succeed(call("tenant", "POST", `/tenants/${c.tenant.id}/topology`, {
        token: c.tenant.token,
        vpcs: [{ name: uniqueName("tv"), enable_internet: false }],
        subnets: [],
        pods: []
      })),
    refused: (c) =>
      Effect.succeed(
        call("tenant", "POST", `/tenants/${FOREIGN}/topology`, {
          token: c.tenant.token,
          vpcs: [],
          subnets: [],
          pods: []
        })
      )
  }
}

/** The contract error each refusal in the table answers with, by status. */
const REFUSED: Record<number, string> = {
  400: "InvalidInput",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  422: "RuleValidation"
}

const SECRETS = [
  TestServer.ADMIN_PASSWORD,
  TENANT_PASSWORD,
  "env-secret-never-audited",
  "registry-secret-never-audited"
]

/** The entries a request left, by its request id. */
const entriesOf = (callers: Callers, requestId: string) =>
  Effect.map(
    must("GET", "/audit-log?limit=500", asAdmin(callers)),
    (page) => (page.entries as Array<Json>).filter((e) => e.request_id === requestId)
  )

/** Sends `call` with a request id of its own; keeps rotated tokens. */
const send = (callers: Callers, measured: Call, variant: "ok" | "anonymous" | "refused") =>
  Effect.gen(function*() {
    const requestId = `audit-${crypto.randomUUID()}`
    const anonymous = variant === "anonymous"
    const body = anonymous && measured.as === "none" && measured.body !== undefined
      ? { ...(measured.body as Json), password: "not the password" }
      : measured.body
    const response = yield* raw(measured.method, measured.path, {
      headers: { ...(anonymous ? {} : headersOf(callers, measured.as)), "x-request-id": requestId },
      ...(body === undefined ? {} : { body })
    })
    const answer = response.body as Json
    if (response.status < 300 && measured.path === "/admin/rotate-token") callers.admin = answer.api_token
    if (response.status < 300 && measured.path.endsWith("/rotate-token") && measured.as === "tenant") {
      callers.tenant.token = answer.api_token
    }
    return { requestId, status: response.status, answer }
  })

/** One call, and the entries it left checked against what it was. */
const step = (c: Callers, action: string, variant: "ok" | "anonymous" | "refused") =>
  Effect.gen(function*() {
    const endpoint = ENDPOINTS[action]!
    const setUp = variant === "refused" && endpoint.refused !== undefined ? endpoint.refused : endpoint.ok
    const measured = yield* setUp(c)
    const actorName = measured.as === "admin" || measured.actor === "admin"
      ? TestServer.ADMIN_USERNAME
      : c.tenant.name
    const sent = yield* send(c, measured, variant === "refused" && endpoint.refused === undefined ? "ok" : variant)
    const entries = yield* entriesOf(c, sent.requestId)
    const label = `${action} ${variant}: ${sent.status}`
    if (variant === "anonymous") {
      expect(sent.status, label).toBe(401)
      expect(entries, label).toEqual([])
    } else if (variant === "ok" || endpoint.refused === undefined) {
      expect(sent.status, `${label} ${JSON.stringify(sent.answer)}`).toBeLessThan(300)
      expect(entries, label).toHaveLength(1)
      expect(entries[0], label).toMatchObject({ action, outcome: "success", actor: actorName })
    } else {
      expect(sent.status, label).toBeGreaterThanOrEqual(400)
      expect(entries, label).toHaveLength(1)
      expect(entries[0], label).toMatchObject({ action, outcome: REFUSED[sent.status], actor: actorName })
    }
    for (const secret of [...SECRETS, c.admin, c.tenant.token]) expect(JSON.stringify(entries)).not.toContain(secret)
  })

layer(testServer(), { excludeTestServices: true })("audit trail", (it) => {
  const callers = Effect.gen(function*() {
    yield* setProviderConfig(EDGE_ACCOUNT)
    const admin = yield* adminLogin
    const t = yield* newTenant("audited")
    return {
      admin: admin.api_token,
      tenant: { id: t.tenant.id, name: t.tenant.name, token: t.session.api_token }
    } satisfies Callers
  })

  it.effect("every changing endpoint of the contract is audited, and nothing else is", () =>
    Effect.sync(() => {
      // Every endpoint but a GET changes something, except evaluating a flow.
      const changing = Api.endpoints.filter((e) => e.method !== "GET" && e.endpoint !== "securityRules.evaluate")
        .map((e) => e.endpoint)
      const audited = Api.endpoints.filter((e) => e.audit !== undefined).map((e) => e.endpoint)
      expect(audited.sort()).toEqual([...changing].sort())
      expect(Object.keys(ENDPOINTS).sort()).toEqual([...changing].sort())
    }))

  it.effect("each endpoint, each way: succeeded, without credentials, refused", () =>
    Effect.gen(function*() {
      const c = yield* callers
      for (const action of Object.keys(ENDPOINTS)) {
        for (const variant of ["ok", "anonymous", "refused"] as const) yield* step(c, action, variant)
      }
    }), 120_000)

  it.effect(
    "a dry run leaves no entry, answered or refused, on every endpoint that takes one",
    () =>
      Effect.gen(function*() {
        const c = yield* callers
        const dryRunnable = Api.endpoints.filter((e) => e.query.includes("dry_run")).map((e) => e.endpoint)
        expect(dryRunnable.length).toBeGreaterThan(0)
        for (const action of dryRunnable) {
          const endpoint = ENDPOINTS[action]!
          for (const setUp of [endpoint.ok, endpoint.refused ?? endpoint.ok]) {
            const measured = yield* setUp(c)
            const sent = yield* send(c, { ...measured, path: `${measured.path}?dry_run=true` }, "ok")
            expect(yield* entriesOf(c, sent.requestId), `${action} dry run: ${sent.status}`).toEqual([])
          }
          // The same call for real leaves its entry: the dry run's absence is not the trail's.
          const sent = yield* send(c, yield* endpoint.ok(c), "ok")
          expect(yield* entriesOf(c, sent.requestId), action).toHaveLength(1)
        }
      }),
    120_000
  )

  it.effect.prop(
    "a success leaves exactly one entry; a refusal of a known caller one with its error; no credentials, none",
    [
      fc.array(
        fc.record({
          action: fc.constantFrom(...Object.keys(ENDPOINTS)),
          variant: fc.constantFrom("ok" as const, "anonymous" as const, "refused" as const)
        }),
        { minLength: 1, maxLength: 6 }
      )
    ],
    ([steps]) =>
      Effect.gen(function*() {
        const c = yield* callers
        for (const { action, variant } of steps) yield* step(c, action, variant)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 12 } }
  )

  it.effect("entries name the resource, the request and the tenant; filters and pages narrow them", () =>
    Effect.gen(function*() {
      const c = yield* callers
      const before = new Date().toISOString()
      const created = yield* send(
        c,
        call("tenant", "POST", "/vpcs", { ...creds(c), name: "audited-vpc", enable_internet: true }),
        "ok"
      )
      const deleted = yield* send(c, call("tenant", "DELETE", `/vpcs/${created.answer.id}`), "ok")
      const [entry] = yield* entriesOf(c, created.requestId)
      expect(entry).toMatchObject({
        request_id: created.requestId,
        actor_type: "tenant",
        actor: c.tenant.name,
        tenant_id: c.tenant.id,
        action: "vpcs.create",
        resource_kind: "vpc",
        resource_id: created.answer.id,
        outcome: "success"
      })
      const byResource = yield* must(
        "GET",
        `/audit-log?resource_kind=vpc&resource_id=${created.answer.id}&since=${before}`,
        asAdmin(c)
      )
      expect((byResource.entries as Array<Json>).map((e) => [e.action, e.request_id])).toEqual([
        ["vpcs.delete", deleted.requestId],
        ["vpcs.create", created.requestId]
      ])
      const later = yield* must("GET", `/audit-log?since=${new Date(Date.now() + 60_000).toISOString()}`, asAdmin(c))
      expect(later.entries).toEqual([])
      // Pages of one, newest first, until the cursor runs out.
      const first = yield* must("GET", `/audit-log?resource_id=${created.answer.id}&limit=1`, asAdmin(c))
      expect(first.entries.map((e: Json) => e.action)).toEqual(["vpcs.delete"])
      const second = yield* must(
        "GET",
        `/audit-log?resource_id=${created.answer.id}&limit=1&before=${first.next_before}`,
        asAdmin(c)
      )
      expect(second.entries.map((e: Json) => e.action)).toEqual(["vpcs.create"])
      expect(second.next_before).toBeNull()
      // An admin's change to a tenant is the tenant's too.
      const rotated = yield* send(c, call("admin", "POST", `/tenants/${c.tenant.id}/rotate-token`), "ok")
      c.tenant.token = rotated.answer.api_token
      const own = yield* must("GET", `/tenants/${c.tenant.id}/audit-log?action=tenantIdentity.rotateToken`, asTenant(c))
      expect(own.entries[0]).toMatchObject({ actor_type: "admin", request_id: rotated.requestId })
    }))

  it.effect("a tenant reads its own trail only; the whole trail is the admin's", () =>
    Effect.gen(function*() {
      const c = yield* callers
      const other = yield* newTenant("other")
      const otherHeaders = { "x-auth-token": other.session.api_token }
      yield* must("POST", "/vpcs", otherHeaders, {
        token: other.session.api_token,
        tenant_id: other.tenant.id,
        name: "theirs",
        enable_internet: true
      })
      const mine = yield* must("GET", `/tenants/${c.tenant.id}/audit-log?limit=500`, asTenant(c))
      expect((mine.entries as Array<Json>).length).toBeGreaterThan(0)
      expect((mine.entries as Array<Json>).every((e) => e.tenant_id === c.tenant.id)).toBe(true)
      expect((yield* raw("GET", `/tenants/${other.tenant.id}/audit-log`, { headers: asTenant(c) })).status).toBe(404)
      expect((yield* raw("GET", "/audit-log", { headers: asTenant(c) })).status).toBe(401)
      expect((yield* raw("GET", `/tenants/${c.tenant.id}/audit-log`)).status).toBe(401)
      const theirs = yield* must("GET", `/audit-log?tenant_id=${other.tenant.id}&action=vpcs.create`, asAdmin(c))
      expect(theirs.entries).toHaveLength(1)
      expect(theirs.entries[0]).toMatchObject({ actor: other.tenant.name })
    }))
})

/** The store's appends to the trail fail: a change must then not happen either. */
const failingAppends = Layer.effect(
  Store.Store,
  Effect.map(Store.Store, (store) => ({
    ...store,
    audit: {
      ...store.audit,
      append: () => Effect.fail(new Store.StoreUnavailable({ detail: "audit_log is not writable" }))
    }
  }))
)

layer(testServer({ storeDecorator: failingAppends }), { excludeTestServices: true })(
  "audit trail, unwritable",
  (it) => {
    it.effect("a change whose entry cannot be written is not made", () =>
      Effect.gen(function*() {
        const admin = yield* adminLogin
        const refused = yield* raw("POST", "/tenants", {
          headers: { "x-admin-token": admin.api_token },
          body: { name: "never-made", password: "never made password" }
        })
        expect(refused.status).toBe(503)
        const tenants = yield* raw("GET", "/tenants", { headers: { "x-admin-token": admin.api_token } })
        expect((tenants.body as Array<Json>).map((t) => t.name)).not.toContain("never-made")
      }))
  }
)
