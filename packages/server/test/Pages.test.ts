/**
 * Lists a page at a time: `limit` and `page_token`, the next page in `Link: <...>; rel="next"`.
 * Walked while items are created and deleted between pages, the pages together hold every item
 * that lived through the walk exactly once, nothing twice, in key order. Tokens are bound to
 * their list and caller.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import {
  adminLogin,
  EDGE_ACCOUNT,
  newTenant,
  raw,
  setProviderConfig,
  testServer,
  uniqueName,
  workspace
} from "./Harness.js"

type Json = Record<string, any>

const admin = Effect.map(adminLogin, (s) => ({ "x-admin-token": s.api_token }))

/** The `rel="next"` target of a `Link` header, if any. */
const nextOf = (link: string | undefined) => link === undefined ? undefined : /<([^>]+)>;\s*rel="next"/.exec(link)?.[1]

/**
 * Every page of `path` from the first, `between(n)` run after page n is read; the items of each
 * page (`itemsOf` picks them from the body).
 */
const walk = <E = never, R = never>(
  path: string,
  headers: Record<string, string>,
  between: (page: number) => Effect.Effect<void, E, R> = () => Effect.void,
  itemsOf: (body: any) => ReadonlyArray<Json> = (body) => body
) =>
  Effect.gen(function*() {
    const pages: Array<ReadonlyArray<Json>> = []
    let next: string | undefined = path
    while (next !== undefined) {
      const response = yield* raw("GET", next, { headers })
      expect(response.status, JSON.stringify(response.body)).toBe(200)
      pages.push(itemsOf(response.body))
      next = nextOf(response.headers["link"])
      if (next !== undefined) yield* between(pages.length)
      expect(pages.length).toBeLessThan(500)
    }
    return pages
  })

const keyOf = (item: Json) => [Date.parse(item.created_at), item.id] as const
const ascending = (items: ReadonlyArray<Json>) =>
  items.every((item, i) => {
    if (i === 0) return true
    const [a, b] = [keyOf(items[i - 1]!), keyOf(item)]
    return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])
  })

layer(testServer(), { excludeTestServices: true })("pages", (it) => {
  it.effect("without limit or page_token a list is answered whole, with no Link", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const whole = yield* raw("GET", "/vpcs", { headers: w.headers })
      expect(whole.body).toEqual([expect.objectContaining({ id: w.vpc.id })])
      expect(whole.headers["link"]).toBeUndefined()
      const one = yield* raw("GET", "/vpcs?limit=1", { headers: w.headers })
      expect(one.body).toEqual(whole.body)
      expect(one.headers["link"]).toBeUndefined()
    }))

  it.effect.prop(
    "VPC pages walked while VPCs are created and deleted hold each survivor once, nothing twice, in order",
    [
      fc.integer({ min: 0, max: 12 }),
      fc.integer({ min: 1, max: 5 }),
      fc.array(fc.record({ create: fc.integer({ min: 0, max: 2 }), remove: fc.integer({ min: 0, max: 2 }) }), {
        maxLength: 12
      })
    ],
    ([initial, limit, churn]) =>
      Effect.gen(function*() {
        const { session, tenant } = yield* newTenant()
        const headers = { "x-auth-token": session.api_token }
        const creds = { token: session.api_token, tenant_id: tenant.id }
        const create = Effect.suspend(() =>
          raw("POST", "/vpcs", { headers, body: { ...creds, name: uniqueName("v"), enable_internet: false } })
        ).pipe(
          Effect.map((r) => {
            expect(r.status, JSON.stringify(r.body)).toBe(200)
            return r.body as Json
          })
        )
        const alive = new Map<string, Json>()
        for (let i = 0; i < initial; i++) {
          const vpc = yield* create
          alive.set(vpc.id, vpc)
        }
        const everyId = new Set(alive.keys())
        const removed = new Set<string>()
        const pages = yield* walk(`/vpcs?limit=${limit}`, headers, (page) =>
          Effect.gen(function*() {
            const step = churn[page - 1]
            if (step === undefined) return
            for (let i = 0; i < step.create; i++) {
              const vpc = yield* create
              alive.set(vpc.id, vpc)
              everyId.add(vpc.id)
            }
            for (const id of [...alive.keys()].slice(0, step.remove)) {
              expect((yield* raw("DELETE", `/vpcs/${id}`, { headers })).status).toBe(204)
              alive.delete(id)
              removed.add(id)
            }
          }))
        const seen = pages.flat()
        for (const page of pages) expect(page.length).toBeLessThanOrEqual(limit)
        expect(new Set(seen.map((v) => v.id)).size).toBe(seen.length)
        expect(ascending(seen), JSON.stringify(seen.map(keyOf))).toBe(true)
        for (const vpc of seen) expect(everyId.has(vpc.id)).toBe(true)
        // Every VPC there from the start to the end of the walk is on a page.
        const survivors = [...everyId].filter((id) => !removed.has(id) && initialIds(everyId, initial).has(id))
        for (const id of survivors) expect(seen.some((v) => v.id === id), id).toBe(true)
      }),
    // Up to 60 VPCs made and deleted per run: on the real API server under the whole suite's
    // load, a deleted VPC's three commits and the cluster's calls took 26 s and once over 60 s.
    { fastCheck: { numRuns: 12 }, timeout: 180_000 }
  )

  it.effect("tenant pages (the store's key range) walked while tenants come and go hold each survivor once", () =>
    Effect.gen(function*() {
      const headers = yield* admin
      const made: Array<Json> = []
      for (let i = 0; i < 9; i++) made.push((yield* newTenant()).tenant)
      const removed = new Set<string>()
      const pages = yield* walk("/tenants?limit=2", headers, (page) =>
        Effect.gen(function*() {
          // Delete one not yet reached and one already passed, and make a new one, each page.
          const ahead = made.find((t) => !removed.has(t.id) && t !== made[page])
          if (ahead !== undefined && page % 2 === 0) {
            expect((yield* raw("DELETE", `/tenants/${ahead.id}`, { headers })).status).toBe(204)
            removed.add(ahead.id)
          }
          yield* newTenant()
        }))
      const seen = pages.flat()
      expect(new Set(seen.map((t) => t.id)).size).toBe(seen.length)
      expect(ascending(seen)).toBe(true)
      for (const tenant of made.filter((t) => !removed.has(t.id))) {
        expect(seen.filter((t) => t.id === tenant.id)).toHaveLength(1)
      }
      expect(Object.keys(seen[0]!).sort()).toEqual(["created_at", "description", "etag", "id", "name"])
    }))

  it.effect("a rule list pages its rules in evaluation order, and keeps the whole list's ETag", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      for (const [i, priority] of [300, 100, 200, 100, 50].entries()) {
        const made = yield* raw("POST", "/security-rules", {
          headers: w.headers,
          body: {
            vpc_id: w.vpc.id,
            name: `r${i}`,
            priority,
            direction: "ingress",
            action: i % 2 === 0 ? "allow" : "deny",
            protocol: "tcp",
            ports: String(8000 + i),
            remote_type: "cidr",
            remote_cidr: "10.9.0.0/16"
          }
        })
        expect(made.status, JSON.stringify(made.body)).toBe(201)
      }
      const whole = yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })
      const pages = yield* walk(
        `/security-rules?vpc_id=${w.vpc.id}&limit=2`,
        w.headers,
        undefined,
        (body) => body.rules
      )
      expect(pages.map((p) => p.length)).toEqual([2, 2, 2])
      expect(pages.flat().map((r) => r.id)).toEqual((whole.body as Json).rules.map((r: Json) => r.id))
      const first = yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}&limit=2`, { headers: w.headers })
      expect(first.headers["etag"]).toBe(whole.headers["etag"])
      expect(Object.keys(first.body as Json).sort()).toEqual(Object.keys(whole.body as Json).sort())
      // The link keeps the filter.
      expect(nextOf(first.headers["link"])).toContain(`vpc_id=${w.vpc.id}`)
    }))

  it.effect("a token is refused (400) on another list, for another caller, or edited; limits outside 1-1000 too", () =>
    Effect.gen(function*() {
      const a = yield* workspace
      const b = yield* workspace
      yield* a.newVpc()
      const first = yield* raw("GET", "/vpcs?limit=1", { headers: a.headers })
      const next = nextOf(first.headers["link"])!
      const token = new URL(next, "http://x").searchParams.get("page_token")!
      expect((yield* raw("GET", next, { headers: a.headers })).status).toBe(200)
      const refusals = [
        yield* raw("GET", `/vpcs?limit=1&page_token=${token}`, { headers: b.headers }),
        yield* raw("GET", `/subnets?limit=1&page_token=${token}`, { headers: a.headers }),
        yield* raw("GET", `/vpcs?limit=1&page_token=${token.slice(0, -2)}xx`, { headers: a.headers }),
        yield* raw("GET", `/vpcs?page_token=not-a-token`, { headers: a.headers })
      ]
      for (const refused of refusals) {
        expect(refused.status).toBe(400)
        expect((refused.body as Json).detail).toMatch(/page_token/)
      }
      for (const limit of ["0", "1001", "-1", "two", "1.5"]) {
        const response = yield* raw("GET", `/vpcs?limit=${limit}`, { headers: a.headers })
        expect(response.status, limit).toBe(400)
        expect((response.body as Json).detail).toMatch(/limit/)
      }
      expect((yield* raw("GET", "/vpcs?limit=1000", { headers: a.headers })).status).toBe(200)
    }))

  it.effect("every list endpoint pages", () =>
    Effect.gen(function*() {
      yield* setProviderConfig(EDGE_ACCOUNT)
      const w = yield* workspace
      const adminHeaders = yield* admin
      yield* w.newVpc()
      const pod = (yield* w.createPod()).body as Json
      for (const name of ["one", "two"]) {
        yield* raw("POST", `/pods/${pod.id}/tunnel`, {
          headers: w.headers,
          body: { tunnel_name: uniqueName(name), subdomain: uniqueName("s"), protocol_type: "http" }
        })
        yield* raw("POST", `/tenants/${w.tenant.id}/registry-credentials`, {
          headers: w.headers,
          body: { name: uniqueName("reg"), server: "r.example.com", username: "u", password: "p" }
        })
        yield* raw("POST", `/vpcs/${w.vpc.id}/guardrails`, {
          headers: w.headers,
          body: {
            name: uniqueName("g"),
            require: "deny",
            direction: "ingress",
            protocol: "tcp",
            ports: "23",
            remote_cidr: "198.51.100.0/24"
          }
        })
        yield* raw("POST", `/tenants/${w.tenant.id}/guardrails`, {
          headers: adminHeaders,
          body: {
            name: uniqueName("g"),
            require: "deny",
            direction: "ingress",
            protocol: "tcp",
            ports: "23",
            remote_cidr: "198.51.100.0/24"
          }
        })
        yield* raw("POST", `/tenants/${w.tenant.id}/domains`, {
          headers: adminHeaders,
          body: { domain: `${uniqueName(name)}.example.com` }
        })
        yield* raw("POST", `/subnets`, {
          headers: w.headers,
          body: {
            ...w.creds,
            vpc_id: w.vpc.id,
            name: uniqueName("s"),
            cidr: name === "one" ? "10.0.2.0/24" : "10.0.3.0/24",
            gateway_ip: name === "one" ? "10.0.2.1" : "10.0.3.1"
          }
        })
      }
      const lists: ReadonlyArray<readonly [string, Record<string, string>]> = [
        ["/vpcs", w.headers],
        ["/subnets", w.headers],
        ["/tunnels", w.headers],
        [`/pods/${pod.id}/tunnels`, w.headers],
        [`/tenants/${w.tenant.id}/registry-credentials`, w.headers],
        [`/vpcs/${w.vpc.id}/guardrails`, w.headers],
        [`/tenants/${w.tenant.id}/guardrails`, adminHeaders],
        [`/tenants/${w.tenant.id}/domains`, adminHeaders],
        ["/tenants", adminHeaders]
      ]
      for (const [path, headers] of lists) {
        const whole = (yield* raw("GET", path, { headers })).body as ReadonlyArray<Json>
        expect(whole.length, path).toBeGreaterThanOrEqual(2)
        const pages = yield* walk(`${path}?limit=1`, headers)
        expect(pages.flat(), path).toEqual(
          [...whole].sort((x, y) =>
            (Date.parse(x.created_at) - Date.parse(y.created_at)) || ((x.id ?? x.name) < (y.id ?? y.name) ? -1 : 1)
          )
        )
      }
      // Pods too, with their status.
      yield* w.createPod()
      const pods = yield* walk("/pods?limit=1", w.headers)
      expect(pods).toHaveLength(2)
    }))
})

/** The ids made before the walk: the first `initial` of `ids` in insertion order. */
const initialIds = (ids: ReadonlySet<string>, initial: number) => new Set([...ids].slice(0, initial))
