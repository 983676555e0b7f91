/**
 * Per-tenant quotas as a user meets them: the administrator sets them, a tenant reads its own;
 * a create that would pass one is 409 naming it and changes nothing (a topology too), however
 * many race for the last place; a quota lowered below what a tenant has takes nothing away; a
 * tenant's change streams beyond its quota are 429.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { adminLogin, asAdmin, raw, testServer, workspace } from "./Harness.js"
import * as Sse from "./Sse.js"

type Json = Record<string, any>

const setQuotas = (tenantId: string, quotas: Json) =>
  Effect.flatMap(
    asAdmin,
    (admin) =>
      admin.quotas.set({
        path: { tenant_id: tenantId as never },
        payload: { vpcs: null, subnets: null, pods: null, watchers: null, ...quotas }
      })
  )

layer(testServer(), { excludeTestServices: true })("quotas", (it) => {
  it.effect("the admin sets a tenant's quotas, the tenant reads its own; another's is not found", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const other = yield* workspace
      const mine = yield* raw("GET", `/tenants/${w.tenant.id}/quotas`, { headers: w.headers })
      expect(mine.status).toBe(200)
      expect(mine.body).toMatchObject({
        tenant_id: w.tenant.id,
        vpcs: { limit: 100, used: 1, default: true },
        subnets: { limit: 1000, used: 1, default: true },
        pods: { limit: 2000, used: 0, default: true },
        watchers: { limit: 20, used: 0, default: true }
      })
      expect((yield* raw("GET", `/tenants/${other.tenant.id}/quotas`, { headers: w.headers })).status).toBe(404)
      // Setting is the administrator's.
      const byTenant = yield* raw("PUT", `/tenants/${w.tenant.id}/quotas`, { headers: w.headers, body: { vpcs: 1000 } })
      expect(byTenant.status).toBe(401)
      const set = yield* setQuotas(w.tenant.id, { pods: 5 })
      expect(set.pods).toEqual({ limit: 5, used: 0, default: false })
      expect(set.vpcs.default).toBe(true)
      // Out of range or unknown: 400, nothing set.
      const headers = { "x-admin-token": (yield* adminLogin).api_token }
      for (const body of [{ pods: -1 }, { pods: 1.5 }, { pods: 2_000_000 }, { pod: 3 }]) {
        const refused = yield* raw("PUT", `/tenants/${w.tenant.id}/quotas`, { headers, body })
        expect([JSON.stringify(body), refused.status]).toEqual([JSON.stringify(body), 400])
      }
      expect((yield* raw("GET", `/tenants/${w.tenant.id}/quotas`, { headers: w.headers })).body).toMatchObject({
        pods: { limit: 5 }
      })
    }))

  it.effect("a create past a quota is 409 naming it and makes nothing, a topology's too", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      yield* setQuotas(w.tenant.id, { pods: 2, vpcs: 2, subnets: 2 })
      expect((yield* w.createPod()).status).toBe(200)
      expect((yield* w.createPod()).status).toBe(200)
      const third = yield* w.createPod()
      expect(third.status).toBe(409)
      expect((third.body as Json).detail).toMatch(/quota of 2 pods/)
      expect(((yield* raw("GET", "/pods", { headers: w.headers })).body as Array<Json>).length).toBe(2)
      yield* w.newVpc("second")
      const vpc = yield* raw("POST", "/vpcs", {
        headers: w.headers,
        body: { ...w.creds, name: "third", enable_internet: false }
      })
      expect(vpc.status).toBe(409)
      expect((vpc.body as Json).detail).toMatch(/quota of 2 VPCs/)
      // A topology that would pass the subnets' quota creates nothing at all.
      const topologyBody = {
        token: w.creds.token,
        vpcs: [],
        subnets: [
          { name: "t1", vpc_name: w.vpc.name, cidr: "10.0.5.0/24", gateway_ip: "10.0.5.1" },
          { name: "t2", vpc_name: w.vpc.name, cidr: "10.0.6.0/24", gateway_ip: "10.0.6.1" }
        ]
      }
      // Its dry run says so too, as the post would.
      for (const path of [`/tenants/${w.tenant.id}/topology?dry_run=true`, `/tenants/${w.tenant.id}/topology`]) {
        const topology = yield* raw("POST", path, { headers: w.headers, body: topologyBody })
        expect(topology.status).toBe(409)
        expect((topology.body as Json).detail).toMatch(/quota of 2 subnets/)
      }
      expect(((yield* raw("GET", "/subnets", { headers: w.headers })).body as Array<Json>).length).toBe(1)
      // Lowered below what the tenant has: nothing is taken away, the next create is refused.
      yield* setQuotas(w.tenant.id, { pods: 1 })
      expect(((yield* raw("GET", "/pods", { headers: w.headers })).body as Array<Json>).length).toBe(2)
      expect((yield* w.createPod()).status).toBe(409)
      // Raised: it goes through.
      yield* setQuotas(w.tenant.id, { pods: 3 })
      expect((yield* w.createPod()).status).toBe(200)
    }))

  it.effect(
    "of many creates racing for the last places, only as many as the quota allows go through",
    () =>
      Effect.gen(function*() {
        const w = yield* workspace
        yield* setQuotas(w.tenant.id, { pods: 4, vpcs: 6 })
        // Pods in different VPCs race: each VPC is decided on its own, the count on the tenant's.
        const second = yield* w.newVpc("race")
        const subnet = (yield* raw("POST", "/subnets", {
          headers: w.headers,
          body: { ...w.creds, vpc_id: second.id, name: "apps", cidr: "10.1.1.0/24", gateway_ip: "10.1.1.1" }
        })).body as Json
        const answers = yield* Effect.all(
          Array.from(
            { length: 12 },
            (_, i) => w.createPod(i % 2 === 0 ? {} : { vpc_id: second.id, subnet_id: subnet.id })
          ),
          { concurrency: "unbounded" }
        )
        expect(answers.filter((a) => a.status === 200)).toHaveLength(4)
        expect(answers.filter((a) => a.status === 409)).toHaveLength(8)
        expect(((yield* raw("GET", "/pods", { headers: w.headers })).body as Array<Json>).length).toBe(4)
        const vpcs = yield* Effect.all(
          Array.from(
            { length: 10 },
            (_, i) =>
              raw("POST", "/vpcs", { headers: w.headers, body: { ...w.creds, name: `v${i}`, enable_internet: false } })
          ),
          { concurrency: "unbounded" }
        )
        expect(vpcs.filter((a) => a.status === 201 || a.status === 200)).toHaveLength(4)
        expect(((yield* raw("GET", "/vpcs", { headers: w.headers })).body as Array<Json>).length).toBe(6)
      }),
    { timeout: 60_000 }
  )

  it.effect("a tenant's change streams beyond its quota are 429 naming it; one closed makes room", () =>
    Effect.gen(function*() {
      const base = yield* Sse.baseUrl
      const w = yield* workspace
      yield* setQuotas(w.tenant.id, { watchers: 2 })
      const open = () => Effect.promise(() => Sse.open(`${base}/watch`, w.headers))
      const first = yield* open()
      const second = yield* open()
      expect([first.response.status, second.response.status]).toEqual([200, 200])
      const third = yield* open()
      expect(third.response.status).toBe(429)
      expect(third.response.headers.get("retry-after")).toBe("5")
      expect(((yield* Effect.promise(() => third.response.json())) as Json).detail).toMatch(/quota of change streams/)
      expect((yield* raw("GET", `/tenants/${w.tenant.id}/quotas`, { headers: w.headers })).body).toMatchObject({
        watchers: { limit: 2, used: 2 }
      })
      yield* Effect.promise(() => first.close())
      yield* Effect.sleep("100 millis")
      const again = yield* open()
      expect(again.response.status).toBe(200)
      yield* Effect.promise(() => Promise.all([second.close(), again.close()]))
    }))

  it.effect("of a burst of streams opened at once, never more than the quota run; the rest end 429", () =>
    Effect.gen(function*() {
      const base = yield* Sse.baseUrl
      const w = yield* workspace
      yield* setQuotas(w.tenant.id, { watchers: 2 })
      const streams = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: 8 }, () => Sse.open(`${base}/watch`, w.headers)))
      )
      // Each either runs (its first frame a bookmark) or is refused: at once, or as it starts.
      const outcomes = yield* Effect.promise(() =>
        Promise.all(streams.map(async (s) => {
          if (s.response.status !== 200) return s.response.status
          const [first] = await s.until((frames) => frames.length > 0)
          return first!.data.type === "ERROR" ? first!.data.status as number : "running"
        }))
      )
      expect(outcomes.filter((o) => o === "running")).toHaveLength(2)
      expect(outcomes.filter((o) => o !== "running").every((o) => o === 429)).toBe(true)
      expect((yield* raw("GET", `/tenants/${w.tenant.id}/quotas`, { headers: w.headers })).body).toMatchObject({
        watchers: { limit: 2, used: 2 }
      })
      yield* Effect.promise(() => Promise.all(streams.map((s) => s.close())))
    }))
})
