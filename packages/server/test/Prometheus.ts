/**
 * A real Prometheus (Debian's `prometheus` package, which CI installs) scraping one target
 * every second, in a data directory of its own, and its HTTP API for the checks.
 */
import { Effect } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./Loopback.js"

/** Whether the `prometheus` binary is on PATH. */
export const available = (): boolean => spawnSync("prometheus", ["--version"], { stdio: "ignore" }).status === 0

export interface Prometheus {
  /** An instant query's series (it fails when Prometheus refuses the expression). */
  readonly query: (expression: string) => Effect.Effect<ReadonlyArray<Series>>
  /** An instant query's one series' value, none when no series matches (it fails when several do). */
  readonly value: (expression: string) => Effect.Effect<number | undefined>
  /** Completes once Prometheus has scraped the target, successfully, after `since` (ms since the epoch). */
  readonly scrapedAfter: (since: number) => Effect.Effect<void>
}

export interface Series {
  readonly metric: Record<string, string>
  readonly value: readonly [number, string]
}

const getJson = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { ok: response.ok, body: (await response.json().catch(() => undefined)) as Record<string, any> | undefined }
  })

const poll = <A>(what: string, attempt: Effect.Effect<A | undefined>, timeoutMs = 30_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const found = yield* attempt.pipe(Effect.catchAllDefect(() => Effect.succeed(undefined)))
      if (found !== undefined) return found
      yield* Effect.sleep("200 millis")
    }
    return yield* Effect.dieMessage(`Prometheus: timed out waiting for ${what}`)
  })

/** Starts Prometheus scraping `target` (host:port, path /metrics); stopped with the scope. */
export const start = (target: string) =>
  Effect.gen(function*() {
    const dir = mkdtempSync(join(tmpdir(), "tenet-prometheus-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
    const config = join(dir, "prometheus.yml")
    writeFileSync(
      config,
      [
        "global:",
        "  scrape_interval: 1s",
        "  scrape_timeout: 1s",
        "scrape_configs:",
        "  - job_name: tenet",
        "    static_configs:",
        `      - targets: ["${target}"]`,
        ""
      ].join("\n")
    )
    const port = yield* Effect.promise(freePort)
    const child = spawn("prometheus", [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`
    ], { stdio: ["ignore", "ignore", "pipe"] })
    let log = ""
    child.stderr.on("data", (chunk) => void (log += String(chunk)))
    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
    )
    const api = `http://127.0.0.1:${port}`
    const ready = yield* poll(
      "it to be ready",
      Effect.suspend(() =>
        child.exitCode !== null
          ? Effect.succeed(false)
          : Effect.map(getJson(`${api}/-/ready`), (r) => (r.ok ? true : undefined))
      )
    )
    if (!ready) return yield* Effect.dieMessage(`prometheus exited with ${child.exitCode}:\n${log}`)

    const query = (expression: string) =>
      Effect.flatMap(getJson(`${api}/api/v1/query?query=${encodeURIComponent(expression)}`), ({ body }) =>
        body?.status === "success"
          ? Effect.succeed(body.data.result as ReadonlyArray<Series>)
          : Effect.dieMessage(`query ${expression}: ${JSON.stringify(body)}`))
    const prometheus: Prometheus = {
      query,
      value: (expression) =>
        Effect.flatMap(query(expression), (series) =>
          series.length > 1
            ? Effect.dieMessage(`query ${expression} matched ${series.length} series`)
            : Effect.succeed(series.length === 0 ? undefined : Number(series[0]!.value[1]))),
      // From the stored samples, not the targets page: the page names a scrape as it starts,
      // before its samples are committed, and a query then still reads the scrape before.
      scrapedAfter: (since) =>
        poll(
          "a scrape after the scenario",
          Effect.zipWith(
            prometheus.value("timestamp(up)"),
            prometheus.value("up"),
            (at, up) =>
              up === 1 && at !== undefined && at * 1000 > since ? true : undefined
          )
        )
    }
    return prometheus
  })
