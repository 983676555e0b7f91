/**
 * The change stream (`GET /watch`) as a client sees it: a tenant's own changes as they are
 * committed, the admin's every tenant's, secrets hidden; resumed from any revision (query or
 * `Last-Event-ID`) it sends every later change exactly once, in order; bookmarks; 410 once the
 * revision is compacted away.
 */
import { expect, layer } from "@effect/vitest"
import { ChangeFeed } from "@tenet/core"
import { Effect, FastCheck as fc } from "effect"
import { adminLogin, raw, testServer, uniqueName, workspace } from "./Harness.js"
import * as Sse from "./Sse.js"

type Json = Record<string, any>

const adminHeaders = Effect.map(adminLogin, (s) => ({ "x-admin-token": s.api_token }))

layer(testServer(), { excludeTestServices: true })("watch", (it) => {
  it.effect("a tenant sees its own changes as they commit (cascades too), never another's; the admin sees all", () =>
    Effect.gen(function*() {
      const base = yield* Sse.baseUrl
      const a = yield* workspace
      const b = yield* workspace
      const admin = yield* adminHeaders
      const [mine, theirs, all] = yield* Effect.promise(() =>
        Promise.all([
          Sse.open(`${base}/watch`, a.headers),
          Sse.open(`${base}/watch`, b.headers),
          Sse.open(`${base}/watch`, admin)
        ])
      )
      expect(mine.response.status).toBe(200)
      expect(mine.response.headers.get("content-type")).toMatch(/^text\/event-stream/)
      // The first frame is a bookmark: where the stream starts.
      const [start] = yield* Effect.promise(() => mine.until((f) => f.length >= 1))
      expect(start!.data).toEqual({ type: "BOOKMARK", revision: expect.stringMatching(/^\d+$/) })

      const vpc = yield* a.newVpc()
      yield* raw("POST", `/tenants/${a.tenant.id}/registry-credentials`, {
        headers: a.headers,
        body: { name: "reg", server: "r.example.com", username: "u", password: "registry-secret-password" }
      })
      const pod = (yield* a.createPod({ env_vars: { API_KEY: "pod-secret-value" } })).body as Json
      expect((yield* raw("DELETE", `/vpcs/${vpc.id}`, { headers: a.headers })).status).toBe(204)

      const seen = yield* Effect.promise(() =>
        mine.until((f) => Sse.changes(f).some((e) => e.type === "DELETED" && e.id === vpc.id))
      )
      const events = Sse.changes(seen)
      const revisions = events.map((e) => Number(e.revision))
      expect(revisions).toEqual([...revisions].sort((x, y) => x - y))
      expect(new Set(revisions).size).toBe(revisions.length)
      expect(events.filter((e) => e.id === vpc.id).map((e) => e.type)[0]).toBe("ADDED")
      expect(events.find((e) => e.id === vpc.id && e.type === "ADDED")!.object).toMatchObject({
        id: vpc.id,
        name: vpc.name,
        tenant_id: a.tenant.id
      })
      expect(events.find((e) => e.kind === "pod" && e.id === pod.id)).toMatchObject({ type: "ADDED" })
      expect(events.find((e) => e.kind === "registry_credential")).toMatchObject({ type: "ADDED", id: "reg" })
      // The VPC's delete takes its rules along: each a DELETED event of its own.
      const deletedRules = events.filter((e) => e.kind === "security_rule" && e.type === "DELETED")
      expect(deletedRules.length).toBeGreaterThanOrEqual(1)
      for (const e of events) expect(e.object.tenant_id ?? a.tenant.id).toBe(a.tenant.id)
      const text = JSON.stringify(events)
      expect(text).not.toContain("registry-secret-password")
      expect(text).not.toContain("pod-secret-value")
      expect(text).not.toContain("ciphertext")

      // Another tenant's stream has none of it; the admin's has it all.
      yield* b.newVpc()
      yield* Effect.promise(() => theirs.until((f) => Sse.changes(f).length >= 1))
      expect(Sse.changes(theirs.frames).some((e) => e.id === vpc.id)).toBe(false)
      yield* Effect.promise(() => all.until((f) => Sse.changes(f).some((e) => e.type === "DELETED" && e.id === vpc.id)))
      yield* Effect.promise(() => Promise.all([mine.close(), theirs.close(), all.close()]))
    }))

  it.effect.prop(
    "resumed from any revision (since or Last-Event-ID), a stream sends every later change once, in order",
    [fc.nat({ max: 1000 }), fc.boolean()],
    ([pick, byHeader]) =>
      Effect.gen(function*() {
        const base = yield* Sse.baseUrl
        const w = yield* workspace
        const first = yield* Effect.promise(() => Sse.open(`${base}/watch`, w.headers))
        const [start] = yield* Effect.promise(() => first.until((f) => f.length >= 1))
        const made: Array<string> = []
        for (let i = 0; i < 4; i++) made.push((yield* w.newVpc(uniqueName("r"))).id)
        yield* raw("DELETE", `/vpcs/${made[1]}`, { headers: w.headers })
        const whole = Sse.changes(
          yield* Effect.promise(() => first.until((f) => Sse.changes(f).some((e) => e.type === "DELETED")))
        )
        yield* Effect.promise(() => first.close())
        const revisions = [Number(start!.data.revision), ...whole.map((e) => Number(e.revision))]
        const since = revisions[pick % revisions.length]!
        const expected = whole.filter((e) => Number(e.revision) > since)
        const resumed = yield* Effect.promise(() =>
          Sse.open(
            byHeader ? `${base}/watch` : `${base}/watch?since=${since}`,
            byHeader ? { ...w.headers, "last-event-id": String(since) } : w.headers
          )
        )
        const got = yield* Effect.promise(() => resumed.until((f) => f.some((frame) => frame.data.type === "BOOKMARK")))
        // The backlog, then the bookmark at the last revision seen.
        const backlog = Sse.changes(got)
        expect(backlog.map((e) => e.revision)).toEqual(expected.map((e) => e.revision))
        expect(backlog).toEqual(expected)
        yield* Effect.promise(() => resumed.close())
      }),
    { timeout: 60_000, fastCheck: { numRuns: 8 } }
  )

  it.effect("a rotated token ends the streams opened with it, saying why; another tenant's goes on", () =>
    Effect.gen(function*() {
      const base = yield* Sse.baseUrl
      const w = yield* workspace
      const other = yield* workspace
      const stream = yield* Effect.promise(() => Sse.open(`${base}/watch`, w.headers))
      const untouched = yield* Effect.promise(() => Sse.open(`${base}/watch`, other.headers))
      yield* Effect.promise(() =>
        Promise.all([stream.until((f) => f.length >= 1), untouched.until((f) => f.length >= 1)])
      )
      const rotated = yield* raw("POST", `/tenants/${w.tenant.id}/rotate-token`, { headers: w.headers })
      expect(rotated.status).toBe(200)
      const frames = yield* Effect.promise(() => stream.until((f) => f.some((frame) => frame.data.type === "ERROR")))
      yield* Effect.promise(() => stream.finished)
      expect(frames[frames.length - 1]!.data).toMatchObject({ type: "ERROR", status: 401 })
      expect(frames[frames.length - 1]!.id).toBeUndefined()
      // Another tenant's stream goes on; the old token opens none.
      expect(untouched.ended()).toBe(false)
      expect((yield* raw("GET", "/watch", { headers: w.headers })).status).toBe(401)
      yield* Effect.promise(() => untouched.close())
    }))

  it.effect("a revision ahead of the latest is 400; a malformed one too", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const ahead = yield* raw("GET", "/watch?since=999999999999", { headers: w.headers })
      expect(ahead.status).toBe(400)
      expect((ahead.body as Json).detail).toMatch(/since/)
      expect((yield* raw("GET", "/watch?since=-1", { headers: w.headers })).status).toBe(400)
      expect((yield* raw("GET", "/watch")).status).toBe(401)
    }))
})

layer(testServer({ watch: { bookmarkEvery: "200 millis", retention: "1 millis" } }), { excludeTestServices: true })(
  "watch: bookmarks and compaction",
  (it) => {
    it.effect("a quiet stream gets bookmarks; once compacted, resuming from before is 410 with a JSON detail", () =>
      Effect.gen(function*() {
        const base = yield* Sse.baseUrl
        const w = yield* workspace
        const quiet = yield* Effect.promise(() => Sse.open(`${base}/watch`, w.headers))
        const frames = yield* Effect.promise(() => quiet.until((f) => f.length >= 3))
        expect(frames.every((f) => f.data.type === "BOOKMARK")).toBe(true)
        yield* Effect.promise(() => quiet.close())

        const before = Number(frames[0]!.data.revision)
        yield* w.newVpc()
        // Read once, so readable (numbered, where the store numbers them) before retention runs out.
        expect((yield* raw("GET", `/watch?since=${before}`, { headers: w.headers })).status).toBe(200)
        yield* Effect.sleep("20 millis")
        expect(yield* (yield* ChangeFeed.ChangeFeed).compact).toBeGreaterThan(0)
        const gone = yield* raw("GET", `/watch?since=${before}`, { headers: w.headers })
        expect(gone.status).toBe(410)
        expect((gone.body as Json).detail).toMatch(/list again/)
      }))
  }
)
