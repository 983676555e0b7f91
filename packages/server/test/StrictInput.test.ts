/**
 * Every body and query string of the contract is strict: a field the body does not have is
 * refused (400, or 422 where the endpoint declares `RuleValidation`) naming the field, wherever
 * in the body it is; a query parameter the endpoint does not take is refused (400) naming it;
 * and nothing changes. A misspelt `port` for `ports` once saved a rule open on every TCP port,
 * and `?dryrun=true` for `?dry_run=true` once applied what was meant as a preview.
 */
import { expect, layer } from "@effect/vitest"
import { Api, InputProblems } from "@tenet/core"
import { Effect, Either, FastCheck as fc, Schema, SchemaAST as AST } from "effect"
import { adminLogin, raw, setProviderConfig, testServer, uniqueName, workspace } from "./Harness.js"

type World = Effect.Effect.Success<typeof makeWorld>

const makeWorld = Effect.gen(function*() {
  yield* setProviderConfig({ edge_domain: "apps.example.com" })
  const w = yield* workspace
  const admin = { "x-admin-token": (yield* adminLogin).api_token }
  const pod = (yield* w.createPod()).body as { id: string }
  const rule = (yield* raw("POST", "/security-rules", {
    headers: w.headers,
    body: {
      vpc_id: w.vpc.id,
      name: "ssh",
      direction: "ingress",
      action: "allow",
      priority: 10,
      protocol: "tcp",
      ports: "22",
      remote_type: "cidr",
      remote_cidr: "10.0.0.0/8"
    }
  })).body as { rule: { id: string } }
  const addressSet = (yield* raw("POST", "/address-sets", {
    headers: w.headers,
    body: { name: "offices", entries: [{ cidr: "198.51.100.0/24" }] }
  })).body as { id: string }
  return { ...w, admin, pod, rule: rule.rule, addressSet }
})

/** One world for the whole file: refused requests change nothing in it. */
const world = Effect.runSync(Effect.cached(makeWorld))

interface Call {
  readonly as: "admin" | "tenant" | "nobody"
  readonly body: Record<string, unknown>
  readonly query?: string
}

/** A valid body for every endpoint that takes one, in the world above. */
const CALLS: { readonly [K in Api.PayloadKey]: (w: World) => Call } = {
  "adminIdentity.login": () => ({ as: "nobody", body: { username: "admin", password: "not the password" } }),
  "tenantIdentity.login": (w) => ({ as: "nobody", body: { name: w.tenant.name, password: "not the password" } }),
  "tenants.create": () => ({ as: "admin", body: { name: uniqueName("t"), password: "long enough password" } }),
  "quotas.set": () => ({ as: "admin", body: { vpcs: 100, subnets: null, pods: 2000, watchers: null } }),
  "domains.assign": () => ({ as: "admin", body: { domain: `${uniqueName("d")}.example.com` } }),
  "providerConfig.put": () => ({
    as: "admin",
    body: {
      external_subnet_cidr: "198.51.100.0/24",
      external_subnet_gateway: "198.51.100.1",
      peering_subnet_cidr: "100.64.0.0/16"
    }
  }),
  "serviceTunnels.create": () => ({ as: "admin", body: { service: "api", subdomain: uniqueName("api") } }),
  "vpcs.create": (w) => ({ as: "tenant", body: { ...w.creds, name: uniqueName("vpc"), enable_internet: true } }),
  "subnets.create": (w) => ({
    as: "tenant",
    body: { ...w.creds, vpc_id: w.vpc.id, name: uniqueName("s"), cidr: "10.0.9.0/24", gateway_ip: "10.0.9.1" }
  }),
  "securityRules.create": (w) => ({
    as: "tenant",
    body: {
      vpc_id: w.vpc.id,
      name: "web",
      direction: "ingress",
      action: "allow",
      priority: 100,
      protocol: "tcp",
      ports: "8080",
      remote_type: "cidr",
      remote_cidr: "10.9.0.0/16"
    }
  }),
  "securityRules.update": () => ({ as: "tenant", body: { priority: 20, ports: "2222" } }),
  "securityRules.reorder": (w) => ({ as: "tenant", body: { vpc_id: w.vpc.id, rule_ids: [w.rule.id] } }),
  "securityRules.replace": () => ({
    as: "tenant",
    body: {
      rules: [{
        name: "ssh",
        direction: "ingress",
        action: "allow",
        priority: 10,
        protocol: "tcp",
        ports: "22",
        remote_type: "cidr",
        remote_cidr: "10.0.0.0/8"
      }]
    }
  }),
  "securityRules.evaluate": (w) => ({
    as: "tenant",
    body: { vpc_id: w.vpc.id, direction: "ingress", protocol: "tcp", port: 22, remote_ip: "10.1.2.3" }
  }),
  "pods.create": (w) => ({
    as: "tenant",
    body: {
      ...w.creds,
      vpc_id: w.vpc.id,
      subnet_id: w.subnet.id,
      name: uniqueName("pod"),
      container_image: "nginx:1.27",
      env_vars: { MODE: "production" },
      tunnels: [{ tunnel_name: "web", subdomain: uniqueName("web"), protocol_type: "http" }]
    }
  }),
  "pods.configure": () => ({ as: "tenant", body: { auto_healing: true, env_vars: { MODE: "staging" } } }),
  "tunnels.createForPod": () => ({
    as: "tenant",
    body: { tunnel_name: uniqueName("tn"), subdomain: uniqueName("sd"), protocol_type: "https" }
  }),
  "tunnels.create": (w) => ({ as: "tenant", body: { protocol_type: "tcp" }, query: `?pod_id=${w.pod.id}` }),
  "registryCredentials.create": () => ({
    as: "tenant",
    body: { name: uniqueName("reg"), server: "registry.example.com", username: "ci", password: "secret" }
  }),
  "guardrails.create": () => ({
    as: "tenant",
    body: {
      name: "no telnet",
      require: "deny",
      direction: "ingress",
      protocol: "tcp",
      ports: "23",
      remote_cidr: "0.0.0.0/0",
      local: { subnet_ids: [] }
    }
  }),
  "tenantGuardrails.create": () => ({
    as: "admin",
    body: { name: "no telnet", require: "deny", direction: "ingress", protocol: "tcp", remote_cidr: "0.0.0.0/0" }
  }),
  "addressSets.create": () => ({
    as: "tenant",
    body: { name: uniqueName("set"), description: null, entries: [{ cidr: "10.0.0.0/8", description: "all" }] }
  }),
  "addressSets.update": () => ({
    as: "tenant",
    body: { description: "ours", entries: [{ cidr: "10.0.0.0/8", description: "all" }] }
  }),
  "topology.deploy": (w) => ({
    as: "tenant",
    body: {
      token: w.creds.token,
      vpcs: [{ name: uniqueName("tv"), enable_internet: false }],
      subnets: [],
      pods: []
    }
  })
}

const endpoints = Object.keys(CALLS) as Array<Api.PayloadKey>

const params = (w: World): Record<string, string> => ({
  tenant_id: w.tenant.id,
  rule_id: w.rule.id,
  pod_id: w.pod.id,
  vpc_id: w.vpc.id,
  address_set_id: w.addressSet.id
})

/** The request the contract routes `key` to, with `body` as its body. */
const send = (w: World, key: Api.PayloadKey, body: unknown, query = "") => {
  const route = Api.endpoints.find((e) => e.endpoint === key)!
  const path = route.path.replace(/:(\w+)/g, (_, name: string) => params(w)[name]!)
  const call = CALLS[key](w)
  const headers = call.as === "admin" ? w.admin : call.as === "tenant" ? w.headers : {}
  return raw(route.method as "POST" | "PATCH" | "PUT", `${path}${query}`, { headers, body })
}

/** Every field name the body's schema has, at any depth. */
const fieldNames = (ast: AST.AST, into = new Set<string>()): Set<string> => {
  const encoded = AST.encodedAST(ast)
  if (AST.isTypeLiteral(encoded)) {
    for (const p of encoded.propertySignatures) {
      into.add(String(p.name))
      fieldNames(p.type, into)
    }
  } else if (AST.isUnion(encoded)) encoded.types.forEach((t) => fieldNames(t, into))
  else if (AST.isTupleType(encoded)) {
    ;[...encoded.elements.map((e) => e.type), ...encoded.rest.map((r) => r.type)].forEach((t) => fieldNames(t, into))
  } else if (AST.isSuspend(encoded)) fieldNames(encoded.f(), into)
  return into
}

/** The objects of a body a field could be added to (not env_vars, whose keys are the user's). */
const objectsIn = (
  value: unknown,
  path: ReadonlyArray<string | number> = []
): Array<ReadonlyArray<string | number>> => {
  if (Array.isArray(value)) return value.flatMap((item, i) => objectsIn(item, [...path, i]))
  if (typeof value !== "object" || value === null) return []
  return [
    path,
    ...Object.entries(value).flatMap(([key, item]) => key === "env_vars" ? [] : objectsIn(item, [...path, key]))
  ]
}

const withField = (body: unknown, at: ReadonlyArray<string | number>, key: string): unknown => {
  const copy = structuredClone(body) as Record<string | number, unknown>
  let target = copy
  for (const step of at) target = target[step] as Record<string | number, unknown>
  target[key] = "1"
  return copy
}

type Typo = "drop" | "double" | "swap" | "plural"

/** A typo of `name`: a letter dropped, doubled or swapped with the next, or a plural. */
const typoOf = (name: string, n: number, how: Typo): string => {
  const i = n % name.length
  switch (how) {
    case "drop":
      return name.slice(0, i) + name.slice(i + 1)
    case "double":
      return name.slice(0, i) + name[i] + name.slice(i)
    case "swap":
      return i + 1 < name.length ? name.slice(0, i) + name[i + 1] + name[i] + name.slice(i + 2) : `${name}x`
    case "plural":
      return name.endsWith("s") ? name.slice(0, -1) : `${name}s`
  }
}

const snapshot = (w: World) =>
  Effect.gen(function*() {
    const reads = [
      ["/tenants", w.admin],
      ["/service-tunnels", w.admin],
      ["/provider-config", w.admin],
      [`/tenants/${w.tenant.id}/domains`, w.admin],
      [`/tenants/${w.tenant.id}/topology`, w.headers],
      [`/security-rules?vpc_id=${w.vpc.id}`, w.headers],
      [`/tenants/${w.tenant.id}/registry-credentials`, w.headers],
      ["/tunnels", w.headers]
    ] as const
    const bodies = yield* Effect.forEach(reads, ([path, headers]) => raw("GET", path, { headers }))
    // What the cluster and the provider report moves on by itself; what was saved does not.
    return JSON.stringify(bodies.map((r) => r.body), (key, value) =>
      ["status", "applied", "apply_error", "error", "ready_replicas"].includes(key) ? undefined : value)
  })

/** A valid value for each path parameter of the contract, in the world above. */
const pathValues = (w: World): Record<string, string> => ({
  ...params(w),
  domain: "apps.example.com",
  name: "registry",
  service_tunnel_id: "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a",
  guardrail_id: "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a",
  tunnel_id: "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a"
})

/** The query each endpoint needs to be a valid call, in the world above. */
const requiredQuery = (w: World, endpoint: Api.Endpoint): Record<string, string> => {
  switch (endpoint.endpoint) {
    case "securityRules.list":
    case "securityRules.analysis":
      return { vpc_id: w.vpc.id }
    case "vpcs.explain":
      return { from: "internet", to: w.subnet.id, protocol: "tcp", port: "443" }
    case "tunnels.create":
      return { pod_id: w.pod.id }
    default:
      return {}
  }
}

/** A call of `endpoint` as a valid request would make it, with `query` as its query string. */
const callWith = (w: World, endpoint: Api.Endpoint, query: URLSearchParams, path = pathValues(w)) => {
  const call = endpoint.endpoint in CALLS ? CALLS[endpoint.endpoint as Api.PayloadKey](w) : undefined
  return raw(
    endpoint.method as "GET",
    `${endpoint.path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(path[name]!))}?${query}`,
    {
      headers: { ...w.admin, ...w.headers, "x-api-token": w.creds.token },
      ...(call === undefined ? {} : { body: call.body })
    }
  )
}

/** Words no message may hold: the schema library's own, which name types and patterns rather than what to send. */
const SCHEMA_TEXT = /\bExpected\b|\bactual\b|Unable to decode|pattern|character\(s\)|DateTime|to be decoded|Universally/

layer(testServer(), { excludeTestServices: true })("strict input", (it) => {
  it.effect("every endpoint with a body is listed here, with a body its schema accepts", () =>
    Effect.gen(function*() {
      const w = yield* world
      expect(endpoints.sort()).toEqual(Object.keys(Api.Payloads).sort())
      for (const key of endpoints) {
        const schema = Api.Payloads[key] as Schema.Schema.AnyNoContext
        expect(() => Schema.decodeUnknownSync(schema)(CALLS[key](w).body), key).not.toThrow()
      }
    }))

  it.effect.prop(
    "a field the body does not have is refused wherever it is, named, with the closest known one, and nothing changes",
    {
      endpoint: fc.constantFrom(...endpoints),
      where: fc.nat(),
      // A name of its own, or a typo of a field the body has there.
      name: fc.option(fc.stringMatching(/^[a-z][a-z0-9_]{0,19}$/)),
      pick: fc.nat(),
      how: fc.constantFrom<Array<Typo>>("drop", "double", "swap", "plural")
    },
    ({ endpoint, how, name, pick, where }) =>
      Effect.gen(function*() {
        const w = yield* world
        const call = CALLS[endpoint](w)
        const known = fieldNames(Api.Payloads[endpoint].ast)
        const places = objectsIn(call.body)
        const at = places[where % places.length]!
        const present = Object.keys(at.reduce<any>((o, k) => o[k], call.body))
        const typo = name === null && present.length > 0
        let key = typo ? typoOf(present[pick % present.length]!, pick, how) : name ?? "unknown"
        // A typo that spells a field already there (a swap of two equal letters) is no typo.
        while (known.has(key) || present.includes(key) || key === "__proto__") key = `${key}x`
        const before = yield* snapshot(w)
        const response = yield* send(w, endpoint, withField(call.body, at, key), call.query)
        const ruleEndpoint = Api.endpoints.find((e) => e.endpoint === endpoint)!.error === "RuleValidation"
        expect(response.status, JSON.stringify(response.body)).toBe(ruleEndpoint ? 422 : 400)
        const { errors } = response.body as { errors: Array<InputProblems.Problem> }
        const problem = errors.find((e) => e.field === InputProblems.fieldOf([...at, key]))
        expect(problem?.message, JSON.stringify(errors)).toMatch(new RegExp(`^unknown field ${JSON.stringify(key)}`))
        if (typo) expect(problem?.message).toContain("did you mean")
        expect(yield* snapshot(w)).toBe(before)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 60 } }
  )

  it.effect("an endpoint that takes no body refuses one rather than ignore it, and nothing changes", () =>
    Effect.gen(function*() {
      const w = yield* world
      const takeNone = Api.endpoints.filter((e) => e.method !== "GET" && !(e.endpoint in Api.Payloads))
      expect(takeNone.map((e) => e.endpoint)).toContain("pods.addReplica")
      const ids = pathValues(w)
      const before = yield* snapshot(w)
      for (const endpoint of takeNone) {
        const path = endpoint.path.replace(/:(\w+)/g, (_, name: string) => ids[name]!)
        const response = yield* raw(endpoint.method as "POST" | "DELETE", path, {
          headers: { ...w.admin, ...w.headers, "x-api-token": w.creds.token },
          body: { count: 3 }
        })
        expect(response.status, endpoint.endpoint).toBe(endpoint.error === "RuleValidation" ? 422 : 400)
        expect((response.body as { errors: Array<InputProblems.Problem> }).errors).toEqual([
          { field: "count", message: `unknown field "count"; ${endpoint.method} ${endpoint.path} takes no body` }
        ])
      }
      expect(yield* snapshot(w)).toBe(before)
      // An empty object is no body.
      const replica = yield* raw("POST", `/pods/${w.pod.id}/replicas`, { headers: w.headers, body: {} })
      expect(replica.status).toBe(200)
    }))

  it.effect("the newcomer's typo: `port` for `ports` is refused, and no rule opens every port", () =>
    Effect.gen(function*() {
      const w = yield* world
      const { ports: _, ...body } = CALLS["securityRules.create"](w).body
      const response = yield* send(w, "securityRules.create", { ...body, port: "8080" })
      const problem = { field: "port", message: "unknown field \"port\"; did you mean \"ports\"?" }
      expect(response).toMatchObject({ status: 422, body: { detail: problem, errors: [problem] } })
      const rules = yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })
      expect((rules.body as { rules: Array<{ name: string }> }).rules.map((r) => r.name)).not.toContain("web")
    }))

  it.effect("every problem of a body at once: missing fields, enums with their values, the body's credentials", () =>
    Effect.gen(function*() {
      const w = yield* world
      const subnet = yield* raw("POST", "/subnets", { headers: w.headers, body: { vpc_id: w.vpc.id, cidr: 7 } })
      expect(subnet.status).toBe(400)
      const { detail, errors } = subnet.body as { detail: string; errors: Array<InputProblems.Problem> }
      expect(errors.map((e) => e.field)).toEqual(["tenant_id", "token", "name", "cidr", "gateway_ip"])
      expect(errors[0]!.message).toContain("X-Auth-Token")
      expect(errors[3]).toEqual({ field: "cidr", message: "must be a string; got 7" })
      expect(detail).toBe(InputProblems.summary(errors))
      const rule = yield* send(w, "securityRules.create", { ...CALLS["securityRules.create"](w).body, direction: "in" })
      expect(rule.body).toMatchObject({
        detail: { field: "direction", message: "must be one of \"ingress\", \"egress\"; got \"in\"" }
      })
    }))

  it.effect.prop(
    "a query parameter the endpoint does not take is refused (400) naming it, with the closest it takes, and nothing changes",
    {
      at: fc.nat(),
      // A name of its own, or a typo of a parameter the endpoint takes.
      name: fc.option(fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9_.-]{0,19}$/)),
      pick: fc.nat(),
      how: fc.constantFrom<Array<Typo>>("drop", "double", "swap", "plural")
    },
    ({ at, how, name, pick }) =>
      Effect.gen(function*() {
        const w = yield* world
        const endpoint = Api.endpoints[at % Api.endpoints.length]!
        const typo = name === null && endpoint.query.length > 0
        let key = typo ? typoOf(endpoint.query[pick % endpoint.query.length]!, pick, how) : name ?? "unknown"
        while (endpoint.query.includes(key)) key = `${key}x`
        const query = new URLSearchParams({ ...requiredQuery(w, endpoint), [key]: "true" })
        const before = yield* snapshot(w)
        const response = yield* callWith(w, endpoint, query)
        expect(response.status, `${endpoint.endpoint} ${JSON.stringify(response.body)}`).toBe(400)
        const { detail, errors } = response.body as { detail: string; errors: Array<InputProblems.Problem> }
        const problem = errors.find((e) => e.field === key)
        expect(problem?.message, JSON.stringify(errors)).toMatch(
          new RegExp(`^unknown query parameter ${JSON.stringify(key).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`)
        )
        if (typo) expect(problem?.message).toContain("did you mean")
        expect(detail).toContain(problem!.message)
        expect(yield* snapshot(w)).toBe(before)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 80 } }
  )

  it.effect("the newcomer's typos: `?dryrun=true` is refused, and no rule is created; `?proto=` means `protocol`", () =>
    Effect.gen(function*() {
      const w = yield* world
      const response = yield* send(w, "securityRules.create", CALLS["securityRules.create"](w).body, "?dryrun=true")
      const problem = { field: "dryrun", message: "unknown query parameter \"dryrun\"; did you mean \"dry_run\"?" }
      expect(response).toMatchObject({ status: 400, body: { errors: [problem] } })
      const rules = yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })
      expect((rules.body as { rules: Array<{ name: string }> }).rules.map((r) => r.name)).not.toContain("web")
      // An abbreviation is taken for the name it begins, not for another a few edits away.
      const proto = yield* raw("GET", `/vpcs/${w.vpc.id}/explain?from=internet&to=${w.subnet.id}&proto=tcp&port=22`, {
        headers: w.headers
      })
      expect(proto).toMatchObject({
        status: 400,
        body: {
          errors: expect.arrayContaining([{
            field: "proto",
            message: "unknown query parameter \"proto\"; did you mean \"protocol\"?"
          }])
        }
      })
      // A parameter sent twice is refused too: reading either would be a guess.
      const twice = yield* raw("GET", "/vpcs?limit=2&limit=3", { headers: w.headers })
      expect(twice).toMatchObject({
        status: 400,
        body: { errors: [{ field: "limit", message: "given 2 times; send it once" }] }
      })
    }))

  it.effect.prop(
    "a path or query parameter's bad value is 400 naming it in words of its own, never the schema's, and nothing changes",
    {
      at: fc.nat(),
      pick: fc.nat(),
      value: fc.oneof(
        fc.string({ minLength: 1 }),
        fc.stringMatching(/^-?[0-9]{1,6}(\.[0-9])?$/),
        fc.constantFrom("yes", "TCP", "0", "true", "null")
      )
    },
    ({ at, pick, value }) =>
      Effect.gen(function*() {
        const w = yield* world
        const withParameters = Api.endpoints.filter((e) => e.pathSchema !== undefined || e.querySchema !== undefined)
        const endpoint = withParameters[at % withParameters.length]!
        const path = pathValues(w)
        const query = requiredQuery(w, endpoint)
        const names = [
          ...(endpoint.pathSchema === undefined ? [] : Object.keys(
            Schema.encodeSync(endpoint.pathSchema)(Schema.decodeUnknownSync(endpoint.pathSchema)(path))
          )),
          ...endpoint.query
        ]
        const name = names[pick % names.length]!
        const inPath = !endpoint.query.includes(name)
        const given = inPath ? { ...path, [name]: value } : { ...query, [name]: value }
        // Only values the parameter's schema refuses (and a path the router still reaches).
        const schema = (inPath ? endpoint.pathSchema : endpoint.querySchema)!
        fc.pre(Either.isLeft(Schema.decodeUnknownEither(schema)(given)) && value.trim() !== "")
        fc.pre(!inPath || !/^\.{1,2}$/.test(value))
        const before = yield* snapshot(w)
        const response = inPath
          ? yield* callWith(w, endpoint, new URLSearchParams(query), given)
          : yield* callWith(w, endpoint, new URLSearchParams(given))
        expect(
          response.status,
          `${endpoint.endpoint} ${name}=${JSON.stringify(value)} ${JSON.stringify(response.body)}`
        )
          .toBe(400)
        const { errors } = response.body as { errors: Array<InputProblems.Problem> }
        expect(errors.map((e) => e.field)).toContain(name)
        for (const error of errors) expect(error.message).not.toMatch(SCHEMA_TEXT)
        expect(yield* snapshot(w)).toBe(before)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 120 } }
  )
  it.effect("a malformed id in any path is 400 naming it, on every endpoint, the security-rule ones included", () =>
    Effect.gen(function*() {
      const w = yield* world
      const before = yield* snapshot(w)
      const withPath = Api.endpoints.filter((e) => e.pathSchema !== undefined)
      expect(withPath.length).toBeGreaterThan(30)
      for (const endpoint of withPath) {
        for (const [, name] of endpoint.path.matchAll(/:(\w+)/g)) {
          // Neither an id, nor a DNS label, nor a domain name.
          const response = yield* callWith(w, endpoint, new URLSearchParams(requiredQuery(w, endpoint)), {
            ...pathValues(w),
            [name!]: "x_y"
          })
          const where = `${endpoint.method} ${endpoint.path} ${JSON.stringify(response.body)}`
          expect(response.status, where).toBe(400)
          const { detail, errors } = response.body as { detail: unknown; errors: Array<InputProblems.Problem> }
          expect(detail, where).toMatch(new RegExp(`^${name}: must be .+; got "x_y"$`))
          expect(errors.map((e) => e.field), where).toEqual([name])
        }
      }
      expect(yield* snapshot(w)).toBe(before)
    }))

  it.effect("a query parameter's value is refused in the API's words: a limit its bounds, a revision what it is", () =>
    Effect.gen(function*() {
      const w = yield* world
      const limit = yield* raw("GET", "/vpcs?limit=abc", { headers: w.headers })
      expect(limit).toMatchObject({
        status: 400,
        body: { detail: "limit: must be an integer from 1 to 1000; got \"abc\"" }
      })
      const since = yield* raw("GET", "/watch?since=abc", { headers: w.headers })
      expect(since.status).toBe(400)
      expect((since.body as { detail: string }).detail).toMatch(/^since: must be a revision .*; got "abc"$/)
      // Out of bounds or incoherent, a query is bad input on every endpoint: 400, never 422.
      const ask = (query: string) =>
        raw("GET", `/vpcs/${w.vpc.id}/explain?from=internet&to=${w.subnet.id}&${query}`, { headers: w.headers })
      expect(yield* ask("protocol=tcp&port=99999")).toMatchObject({
        status: 400,
        body: { detail: "port: must be an integer from 1 to 65535; got \"99999\"" }
      })
      expect(yield* ask("protocol=icmp&port=22")).toMatchObject({
        status: 400,
        body: { detail: "port: icmp has no ports" }
      })
    }))

  it.effect("an If-Match that is neither * nor a list of entity-tags is 400 on every endpoint taking one", () =>
    Effect.gen(function*() {
      const w = yield* world
      const taking = Api.endpoints.filter((e) => e.headersSchema !== undefined && e.headers.includes("if-match"))
      expect(taking.length).toBeGreaterThan(10)
      const before = yield* snapshot(w)
      for (const endpoint of taking) {
        const call = endpoint.endpoint in CALLS ? CALLS[endpoint.endpoint as Api.PayloadKey](w) : undefined
        const response = yield* raw(
          endpoint.method as "DELETE",
          endpoint.path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(pathValues(w)[name]!)),
          {
            headers: { ...w.admin, ...w.headers, "if-match": "hello world" },
            ...(call === undefined ? {} : { body: call.body })
          }
        )
        expect(response.status, `${endpoint.endpoint} ${JSON.stringify(response.body)}`).toBe(400)
        expect((response.body as { detail: string }).detail).toMatch(/^If-Match: must be .*; got "hello world"$/)
      }
      expect(yield* snapshot(w)).toBe(before)
    }))
})
