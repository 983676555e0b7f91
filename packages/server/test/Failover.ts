/**
 * A PostgreSQL failover under write load, as a failover manager runs one: a primary with a
 * synchronous standby (`pg_basebackup -R`, `synchronous_standby_names`), two Tenet replicas
 * (the server in processes of their own) on a multi-host URL, four writers creating VPCs with
 * an `Idempotency-Key` each and retrying a 503 with it, a change stream held on one replica,
 * the primary killed (SIGKILL) and the standby promoted (`pg_ctl promote`) once the store reads
 * as down. What every request got and what the store, the stream and the logs hold after: for
 * `Failover.test.ts` to judge and `bench/Failover.ts` to time.
 */
import { NodeVault } from "@tenet/core/node"
import { randomUUID } from "node:crypto"
import { launchServer } from "./Launch.js"
import { call, tenantOver, until } from "./Loopback.js"
import * as PgServers from "./PgServers.js"
import * as Sse from "./Sse.js"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The request timeout the replicas run with: no request may take longer. */
export const REQUEST_TIMEOUT_MS = 10_000

export interface Attempt {
  readonly status: number
  readonly retryAfter: string | null
  readonly started: number
  readonly ms: number
  readonly detail?: string
}

const attempt = async (port: number, method: string, path: string, body: unknown, headers: Record<string, string>) => {
  const started = Date.now()
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })
    const parsed = await response.json() as { readonly id?: string; readonly detail?: unknown }
    return {
      attempt: {
        status: response.status,
        retryAfter: response.headers.get("retry-after"),
        started,
        ms: Date.now() - started,
        ...(response.status === 200 ? {} : { detail: String(parsed.detail) })
      } satisfies Attempt,
      body: parsed
    }
  } catch (error) {
    return { attempt: { status: 0, retryAfter: null, started, ms: Date.now() - started, detail: String(error) } }
  }
}

const leadingLines = (output: string) => (output.match(/leading the cluster controller"/g) ?? []).length

export const available = PgServers.pgBin !== undefined

export const run = async () => {
  const primary = await PgServers.initdb()
  // The standby connects as `walreceiver` (pg_basebackup -R's primary_conninfo); naming it
  // makes every commit wait for it, so what is acknowledged is on both.
  primary.start({ synchronous_standby_names: "walreceiver" })
  const replicas: Array<Awaited<ReturnType<typeof launchServer>>> = []
  let standby: PgServers.PgServer | undefined
  try {
    standby = await primary.standby()
    standby.start()
    await until(
      () => primary.query("SELECT sync_state FROM pg_stat_replication") === "sync",
      "the standby streaming synchronously",
      30_000
    )

    const env = {
      TENET_STORE: "postgres",
      TENET_DATABASE_URL: `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres` +
        "?target_session_attrs=read-write",
      TENET_ENCRYPTION_KEY: NodeVault.generateKey(),
      TENET_ADMIN_PASSWORD: "failover-admin-password",
      TENET_REQUEST_TIMEOUT: `${REQUEST_TIMEOUT_MS} millis`,
      TENET_LOG_LEVEL: "info"
    }
    replicas.push(await launchServer(env), await launchServer(env))
    for (const replica of replicas) {
      const deadline = Date.now() + 60_000
      while ((await call(replica.port, "GET", "/healthz").catch(() => ({ status: 0 }))).status !== 200) {
        if (Date.now() > deadline) throw new Error(`a replica did not start: ${replica.output()}`)
        await sleep(200)
      }
    }
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]]
    const { headers, session } = await tenantOver(a.port, "failover-admin-password", "steady", { vpcs: 10_000 })

    // The change stream, held across the failover as the SDK holds it: reopened from its last
    // revision whenever the server ends it.
    const streamed: Array<
      { readonly revision: number; readonly type: string; readonly kind: string; readonly id: string }
    > = []
    let watching = true
    let watch = await Sse.open(`http://127.0.0.1:${a.port}/watch`, headers)
    const follower = (async () => {
      let seen = 0
      while (watching) {
        await watch.until((frames) => frames.length > seen || !watching, 1_000_000).catch(() => {})
        for (const frame of watch.frames.slice(seen)) {
          if (frame.data.type !== "BOOKMARK") {
            streamed.push({ ...frame.data, revision: Number(frame.data.revision) })
          }
        }
        seen = watch.frames.length
        if (watch.ended() && watching) {
          const last = watch.frames.at(-1)?.id
          await sleep(200)
          watch = await Sse.open(
            `http://127.0.0.1:${a.port}/watch${last === undefined ? "" : `?since=${last}`}`,
            headers
          ).catch(() => watch)
          seen = 0
        }
      }
    })()

    const attempts: Array<Attempt> = []
    const settled: Array<string> = []
    let killedAt = Number.POSITIVE_INFINITY
    let promotedAt = Number.POSITIVE_INFINITY
    let sent = 0
    // Writes keep going until each worker has had five acknowledged after the promotion.
    const worker = async (index: number) => {
      let after = 0
      while (after < 5) {
        const key = randomUUID()
        const name = `vpc-${index}-${sent++}`
        for (let tries = 0;; tries++) {
          const replica = replicas[(index + tries) % 2]!
          const { attempt: answered, body } = await attempt(replica.port, "POST", "/vpcs", {
            token: session.api_token,
            tenant_id: session.id,
            name,
            enable_internet: false
          }, { ...headers, "idempotency-key": key })
          attempts.push(answered)
          if (answered.status === 200) {
            settled.push(body!.id!)
            if (answered.started > promotedAt) after++
            await sleep(50)
            break
          }
          if (answered.status !== 503) return
          await sleep(100)
        }
      }
    }
    const writing = Promise.all([0, 1, 2, 3].map(worker))

    await sleep(1_500)
    const leadingBefore = replicas.map((r) => leadingLines(r.output()))
    primary.kill()
    killedAt = Date.now()
    // No primary answers until the standby is promoted: the store reads as down meanwhile.
    const deadline = Date.now() + 15_000
    let healthWhileDown = 0
    while (healthWhileDown !== 503 && Date.now() < deadline) {
      healthWhileDown = (await call(b.port, "GET", "/healthz")).status
      await sleep(100)
    }
    await sleep(1_000)
    standby.promote()
    promotedAt = Date.now()
    await writing

    // Leadership: the lock died with the primary; a replica takes it again on the new one.
    const leadsAgain = await until(
      () => replicas.some((r, i) => leadingLines(r.output()) > leadingBefore[i]!),
      "a replica to lead again",
      30_000
    ).then(() => true, () => false)
    await until(
      () => streamed.filter((e) => e.kind === "vpc" && e.type === "ADDED").length >= settled.length,
      "the stream to catch up",
      30_000
    ).catch(() => {})
    watching = false
    await watch.close()
    await follower
    const stored = ((await call(b.port, "GET", "/vpcs", undefined, headers)).body as Array<{ id: string }>)
      .map((v) => v.id)
    return {
      attempts,
      settled,
      stored,
      streamed,
      killedAt,
      promotedAt,
      healthWhileDown,
      healthAfter: (await call(a.port, "GET", "/healthz")).status,
      leadsAgain,
      leadershipEnded: replicas.some((r) => r.output().includes("leading the cluster controller ended; asking again"))
    }
  } finally {
    for (const replica of replicas) replica.kill()
    primary.remove()
    standby?.remove()
  }
}

export type Outcome = Awaited<ReturnType<typeof run>>

/** Milliseconds from the kill and from the promotion to the first write acknowledged after the kill. */
export const timings = (outcome: Outcome) => {
  const firstBack = Math.min(
    ...outcome.attempts.filter((x) => x.status === 200 && x.started > outcome.killedAt).map((x) => x.started + x.ms)
  )
  return { killToWrite: firstBack - outcome.killedAt, promoteToWrite: firstBack - outcome.promotedAt }
}
