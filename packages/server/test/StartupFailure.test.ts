import { describe, expect, it } from "@effect/vitest"
import { DataDirectoryLock } from "@tenet/adapters-postgres"
import { StartupFailure } from "@tenet/server"
import { Cause, Config, ConfigProvider, Effect, Exit } from "effect"
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { Cli } from "../src/index.js"
import { freePort, until } from "./Loopback.js"
import { bin, spawnProcess, spawnServer } from "./ServerProcess.js"

const causeOf = <A, E>(effect: Effect.Effect<A, E>) => {
  const exit = Effect.runSyncExit(effect)
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  return exit.cause
}

describe("StartupFailure", () => {
  it("a failure Tenet foresaw is its message alone, without a stack", () => {
    const held = new DataDirectoryLock.DataDirectoryInUse({
      directory: "/var/lib/tenet/pgdata",
      owner: { pid: 42, hostname: "db-1", started_at: "2026-11-23T10:00:00.000Z" }
    })
    for (const cause of [Cause.fail(held), Cause.die(held)]) {
      expect(StartupFailure.describe(cause)).toEqual({ message: held.message })
    }
    expect(StartupFailure.describe(causeOf(Effect.dieMessage("TENET_X is required")))).toEqual({
      message: "TENET_X is required"
    })
  })

  it("an invalid setting names the variable", () => {
    const cause = causeOf(
      Effect.withConfigProvider(Config.port("TENET_PORT"), ConfigProvider.fromMap(new Map([["TENET_PORT", "abc"]])))
    )
    expect(StartupFailure.describe(cause).message).toContain("TENET_PORT")
    expect(StartupFailure.describe(cause).cause).toBeUndefined()
  })

  it("every failure of a parallel start is named; an unforeseen defect keeps its stack", () => {
    const both = Cause.parallel(Cause.die(new Cause.RuntimeException("first")), Cause.die(new TypeError("second")))
    const described = StartupFailure.describe(both)
    expect(described.message).toBe("first; second")
    expect(described.cause).toContain("TypeError: second")
  })
})

/** tsx's loader by its path: the binary runs in a directory of its own, outside the workspace. */
const tsx = pathToFileURL(join(import.meta.dirname, "../../../node_modules/tsx/dist/loader.mjs")).href

/** Runs the real binary with arguments in an empty directory; its output and exit code. */
const runBin = async (args: ReadonlyArray<string>) => {
  const cwd = mkdtempSync(join(tmpdir(), "tenet-cli-"))
  const run = spawnProcess(process.execPath, ["--conditions=@tenet/source", "--import", tsx, bin, ...args], {
    cwd,
    env: { TENET_PORT: "1" }
  })
  return { code: await run.exited, stdout: run.stdout(), stderr: run.stderr(), cwd }
}

/** The one FATAL line a failed start writes. */
const fatalOf = (output: string) => {
  const { cause, message } = JSON.parse(output.split("\n").find((line) => line.includes("\"FATAL\""))!)
  return { cause, message } as { message: string; cause?: string }
}

describe("tenet-server, started for real", () => {
  it("--help and --version answer and exit 0; an unknown argument exits 2; none serves or writes", async () => {
    const help = await runBin(["--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("Usage: tenet-server")
    const readme = readFileSync(join(import.meta.dirname, "../../../README.md"), "utf8")
    for (const [, name] of readme.matchAll(/^\| `((?:TENET|OTEL)_[A-Z_]+)` \|/gm)) {
      if (name!.startsWith("OTEL_") && name !== "OTEL_EXPORTER_OTLP_ENDPOINT") continue
      expect(help.stdout, name).toContain(`  ${name} `)
    }
    const version = await runBin(["--version"])
    expect(version).toMatchObject({ code: 0, stdout: `${Cli.version(version.stdout.split(" ")[1]!)}\n` })
    const unknown = await runBin(["--port", "9000"])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("unknown argument '--port'")
    // TENET_PORT=1 would fail to bind, and the default store would create ./.tenet: neither happened.
    for (const run of [help, version, unknown]) expect(readdirSync(run.cwd)).toEqual([])
  }, 60_000)

  it("a port in use is one line naming the address and TENET_PORT", async () => {
    const holder = createServer()
    const port = await new Promise<number>((resolve) =>
      holder.listen(0, "127.0.0.1", () => resolve((holder.address() as { port: number }).port))
    )
    try {
      const server = await spawnServer({ TENET_STORE: "memory", TENET_PORT: String(port) })
      expect(await server.exited).toBe(1)
      expect(fatalOf(server.output())).toEqual({
        cause: undefined,
        message: `cannot listen on 127.0.0.1:${port}: the port is in use by another process (EADDRINUSE); ` +
          "stop it, or choose another port with TENET_PORT"
      })
    } finally {
      holder.close()
    }
  }, 60_000)

  it("an unreachable PostgreSQL is one line naming where, without the password", async () => {
    const server = await spawnServer({
      TENET_STORE: "postgres",
      TENET_ENCRYPTION_KEY: "a".repeat(64),
      TENET_DATABASE_URL: "postgres://tenet:hunter2@127.0.0.1:1/tenet"
    })
    expect(await server.exited).toBe(1)
    const fatal = fatalOf(server.output())
    expect(fatal.message).toMatch(/^cannot use PostgreSQL at tenet@127\.0\.0\.1:1\/tenet: connect ECONNREFUSED/)
    expect(fatal.message).toContain("check TENET_DATABASE_URL")
    expect(server.output()).not.toContain("hunter2")
  }, 60_000)

  // `pnpm build` makes it (CI builds before testing); a checkout that was never built has none.
  const built = fileURLToPath(new URL("../dist/bin.js", import.meta.url))
  it.skipIf(!existsSync(built) && process.env.CI === undefined)(
    "the built server runs from the checkout with plain node, as it does from npm",
    async () => {
      const port = await freePort()
      const { child, exited, output } = spawnProcess(process.execPath, [built], {
        env: { TENET_STORE: "memory", TENET_PORT: String(port) }
      })
      await until(
        () => output().includes("listening on") || child.exitCode !== null,
        "the built server to listen",
        60_000
      )
      expect(output()).not.toContain("ERR_UNKNOWN_FILE_EXTENSION")
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
      child.kill("SIGTERM")
      expect(await exited).toBe(0)
    },
    90_000
  )

  it("a bad setting is one line naming the variable", async () => {
    const server = await spawnServer({ TENET_STORE: "memry" })
    expect(await server.exited).toBe(1)
    expect(fatalOf(server.output())).toEqual({
      cause: undefined,
      message: "invalid setting TENET_STORE: Expected one of (embedded, postgres, memory) but received \"memry\" " +
        "(see `tenet-server --help` for every setting)"
    })
  }, 60_000)
})
