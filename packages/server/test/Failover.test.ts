/**
 * A PostgreSQL failover under write load (`Failover.ts` runs it): every request is answered (200,
 * or 503 with `Retry-After`, within the request timeout), writes come back after the promotion
 * with no restart, every write retried with its `Idempotency-Key` settles exactly once and
 * nothing acknowledged is lost, the change stream resumes with no gap and no duplicate, and the
 * controller's leadership moves off the dead primary.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Failover from "./Failover.js"

describe("PostgreSQL failover", () => {
  // Outside CI a machine without PostgreSQL's server binaries skips this; CI must have them.
  it.live.skipIf(!Failover.available && process.env.CI === undefined)(
    "two replicas on a multi-host URL ride a primary killed and a standby promoted: answered, settled once, streamed once, led",
    () =>
      Effect.promise(async () => {
        const outcome = await Failover.run()
        const { attempts, settled, stored, streamed } = outcome
        const refused = attempts.filter((x) => x.status === 503)
        expect(outcome.healthWhileDown).toBe(503)
        expect(attempts.filter((x) => x.status !== 200 && x.status !== 503), JSON.stringify(attempts.slice(-20)))
          .toEqual([])
        expect(refused.length).toBeGreaterThan(0)
        expect(refused.every((x) => x.retryAfter !== null && x.detail !== undefined && x.detail.length > 0)).toBe(true)
        // Never a hang: every answer within the request timeout (and the time to send it).
        expect(Math.max(...attempts.map((x) => x.ms))).toBeLessThan(Failover.REQUEST_TIMEOUT_MS + 5_000)

        // Settled exactly once: every acknowledged write is there, and no retry made a second VPC.
        expect(new Set(settled).size).toBe(settled.length)
        expect([...stored].sort()).toEqual([...settled].sort())

        // The stream: each VPC added once, in revision order, none missing.
        const added = streamed.filter((e) => e.kind === "vpc" && e.type === "ADDED").map((e) => e.id)
        expect([...added].sort()).toEqual([...stored].sort())
        const revisions = streamed.map((e) => e.revision)
        expect(revisions).toEqual([...new Set(revisions)].sort((x, y) => x - y))

        expect(outcome.leadershipEnded).toBe(true)
        expect(outcome.leadsAgain).toBe(true)
        expect(outcome.healthAfter).toBe(200)
      }),
    { timeout: 240_000 }
  )
})
