/**
 * A PostgreSQL failover under write load, timed (`test/Failover.ts` runs it; `Failover.test.ts`
 * judges it): a primary with a synchronous standby, two replicas on a multi-host URL, four
 * writers retrying with their `Idempotency-Key`, the primary SIGKILLed and the standby promoted
 * once the store reads as down. Per round: the time from the kill and from the promotion to the
 * first write acknowledged, the requests answered 503, and what was acknowledged and lost.
 *
 *   node --conditions=@tenet/source --import tsx packages/server/bench/Failover.ts
 */
import * as Failover from "../test/Failover.js"

export const available = () => Failover.available

export interface Round {
  readonly killToWrite: number
  readonly promoteToWrite: number
  readonly requests: number
  readonly refused: number
  readonly acknowledged: number
  readonly lost: number
}

export const run = async (rounds = 3): Promise<ReadonlyArray<Round>> => {
  const result: Array<Round> = []
  for (let i = 0; i < rounds; i++) {
    const outcome = await Failover.run()
    const stored = new Set(outcome.stored)
    result.push({
      ...Failover.timings(outcome),
      requests: outcome.attempts.length,
      refused: outcome.attempts.filter((x) => x.status === 503).length,
      acknowledged: outcome.settled.length,
      lost: outcome.settled.filter((id) => !stored.has(id)).length
    })
  }
  return result
}

export const toMarkdown = (rounds: ReadonlyArray<Round>) =>
  [
    "| round | kill to first write | promotion to first write | requests | answered 503 | acknowledged | lost |",
    "|---:|---:|---:|---:|---:|---:|---:|",
    ...rounds.map((r, i) =>
      `| ${
        i + 1
      } | ${r.killToWrite} ms | ${r.promoteToWrite} ms | ${r.requests} | ${r.refused} | ${r.acknowledged} | ${r.lost} |`
    ),
    "",
    "The standby is promoted about 1 s after `/healthz` first answers 503, as a failover manager",
    "would once it judged the primary dead; the kill-to-write time is that wait plus Tenet's own."
  ].join("\n")

if (import.meta.url === `file://${process.argv[1]}`) {
  if (!available()) console.log("No PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) here: not measured.")
  else console.log(toMarkdown(await run()))
}
