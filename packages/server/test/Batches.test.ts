/**
 * Writes that arrive while another commit of their tenant is under way are decided in turn and
 * committed together (`changes/Pipeline.ts`, "Writes in batches"). Each request of a batch keeps
 * its own answer, refusal, idempotency key and audit entry. The store's commit is held
 * (`CommitGate`) until the requests have queued behind it, so the batch forms whatever the
 * machine's speed. Runs on
 * each store (memory, embedded PostgreSQL, PostgreSQL) and on a real Kubernetes API server.
 */
import { expect, layer } from "@effect/vitest"
import { Pipeline } from "@tenet/core"
import { Effect, Metric } from "effect"
import * as CommitGate from "./CommitGate.js"
import { asAdmin, httpsIn, planApplies, raw, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

/** How many commits carried more than one request, so far in this process. */
const batchesOfSeveral = Effect.map(Metric.value(Pipeline.batchRequests), (state) => {
  const alone = state.buckets.find(([boundary]) => boundary === 1)?.[1] ?? 0
  return state.count - alone
})

const subnetBody = (w: Json, i: number) => ({
  ...w.creds,
  vpc_id: w.vpc.id,
  name: `batch-${i}`,
  cidr: `10.0.${10 + i}.0/24`,
  gateway_ip: `10.0.${10 + i}.1`
})

layer(testServer({ storeDecorator: CommitGate.decorator }), { excludeTestServices: true, timeout: 120_000 })(
  "writes in batches",
  (it) => {
    it.effect("a batch answers each request its own: made or refused, its key kept, its entry written", () =>
      Effect.gen(function*() {
        const w = yield* workspace
        // The workspace's subnet, the opener's and two more: the rest of the batch passes the quota.
        yield* Effect.flatMap(asAdmin, (admin) =>
          admin.quotas.set({
            path: { tenant_id: w.tenant.id as never },
            payload: { vpcs: null, subnets: 4, pods: null, watchers: null }
          }))
        const before = yield* batchesOfSeveral
        const send = (i: number, request = `batch-request-${i}`) =>
          raw("POST", "/subnets", {
            headers: { ...w.headers, "idempotency-key": `batch-key-${i}`, "x-request-id": request },
            body: subnetBody(w, i)
          })
        const [opened, ...answers] = yield* CommitGate.behindAHeldCommit(
          w.tenant.id,
          send(0),
          [1, 2, 3, 4, 5, 6, 7, 8].map((i) => send(i))
        )
        expect(opened.status, opened.text).toBe(200)
        expect(yield* batchesOfSeveral).toBeGreaterThan(before)

        const made = answers.filter((a) => a.status === 200)
        expect(made, JSON.stringify(answers.map((a) => a.status))).toHaveLength(2)
        for (const refused of answers.filter((a) => a.status !== 200)) {
          expect(refused.status, refused.text).toBe(409)
          expect((refused.body as Json).detail).toMatch(/quota of 4 subnets/)
        }
        // Each made what it asked for.
        answers.forEach((answer, i) => {
          if (answer.status === 200) expect((answer.body as Json).cidr).toBe(subnetBody(w, i + 1).cidr)
        })
        const stored = (yield* raw("GET", "/subnets", { headers: w.headers })).body as Array<Json>
        expect(stored.map((s) => s.id).sort()).toEqual(
          [w.subnet.id, (opened.body as Json).id, ...made.map((m) => (m.body as Json).id)].sort()
        )

        // Sent again with its key, each made request answers as it did, and nothing more is made.
        for (const [i, answer] of answers.entries()) {
          if (answer.status !== 200) continue
          const again = yield* send(i + 1, `batch-request-${i + 1}-again`)
          expect(again.status).toBe(200)
          expect((again.body as Json).id).toBe((answer.body as Json).id)
        }
        expect(((yield* raw("GET", "/subnets", { headers: w.headers })).body as Array<Json>).length).toBe(4)

        // One entry per request, under its own request id, with its own outcome and subject.
        const trail = (yield* raw("GET", `/tenants/${w.tenant.id}/audit-log?action=subnets.create&limit=100`, {
          headers: w.headers
        })).body as Json
        for (const [i, answer] of [opened, ...answers].entries()) {
          const entries = (trail.entries as Array<Json>).filter((e) => e.request_id === `batch-request-${i}`)
          expect(entries, `request ${i}`).toHaveLength(1)
          expect(entries[0]!.outcome).toBe(answer.status === 200 ? "success" : "Conflict")
          if (answer.status === 200) expect(entries[0]!.resource_id).toBe((answer.body as Json).id)
        }
      }))

    it.effect("a batch into one VPC is one convergence, and each request's applied is that convergence's", () =>
      Effect.gen(function*() {
        const w = yield* workspace
        const rule = (i: number) =>
          raw("POST", "/security-rules", {
            headers: w.headers,
            body: { ...httpsIn(w.vpc.id), name: `batched ${i}`, ports: String(9000 + i), priority: 100 + i }
          })
        const before = yield* planApplies
        const [opened, ...answers] = yield* CommitGate.behindAHeldCommit(
          w.tenant.id,
          rule(0),
          [1, 2, 3, 4, 5, 6, 7, 8].map(rule)
        )
        for (const answer of [opened, ...answers]) {
          expect(answer.status, answer.text).toBe(201)
          // Answered from a convergence begun after its own commit: in force.
          expect((answer.body as Json).applied, answer.text).toBe(true)
        }
        // The opener's convergence, and one for the batch behind it (the opener's may have begun
        // first): not one per request. One more is room for a resync of this process's controller.
        const applies = (yield* planApplies) - before
        expect(applies).toBeGreaterThanOrEqual(1)
        expect(applies).toBeLessThanOrEqual(3)
        const rules = ((yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })).body as Json)
          .rules as Array<Json>
        expect(rules.map((r) => r.id)).toEqual(
          expect.arrayContaining([opened, ...answers].map((a) => (a.body as Json).rule.id))
        )
      }))

    it.effect("a batch the store refuses whole is made again request by request: one name, one VPC", () =>
      Effect.gen(function*() {
        const w = yield* workspace
        const vpc = (name: string) =>
          raw("POST", "/vpcs", { headers: w.headers, body: { ...w.creds, name, enable_internet: false } })
        const [opened, ...answers] = yield* CommitGate.behindAHeldCommit(w.tenant.id, vpc("opener"), [
          vpc("same"),
          vpc("other"),
          vpc("same"),
          vpc("another")
        ])
        expect(opened.status, opened.text).toBe(200)
        const statuses = answers.map((a) => a.status)
        expect(statuses.filter((s) => s === 200), JSON.stringify(statuses)).toHaveLength(3)
        const refused = answers.filter((a) => a.status !== 200)
        expect(refused).toHaveLength(1)
        expect(refused[0]!.status, refused[0]!.text).toBe(409)
        expect([answers[1]!.status, answers[3]!.status]).toEqual([200, 200])
        const names = ((yield* raw("GET", "/vpcs", { headers: w.headers })).body as Array<Json>).map((v) => v.name)
        expect(names.filter((n) => n === "same")).toHaveLength(1)
        expect(names).toEqual(expect.arrayContaining(["opener", "same", "other", "another"]))
      }))
  }
)
