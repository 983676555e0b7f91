/**
 * Private PostgreSQL servers for tests that stop, kill or promote one: each with its own data
 * directory and port, so no other test notices. Debian's binaries (initdb, pg_ctl,
 * pg_basebackup), run as the `postgres` user when the tests run as root.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./Loopback.js"

/** The PostgreSQL server binaries, from Debian's layout or PATH. */
export const pgBin = (() => {
  const root = "/usr/lib/postgresql"
  if (existsSync(root)) {
    for (const version of readdirSync(root).sort().reverse()) {
      if (existsSync(join(root, version, "bin", "initdb"))) return join(root, version, "bin")
    }
  }
  try {
    return join(execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim())
  } catch {
    return undefined
  }
})()

/** PostgreSQL refuses to run as root: as root, run its tools as the `postgres` user. */
const asPostgres = (tool: string, args: ReadonlyArray<string>) => {
  const isRoot = process.getuid?.() === 0
  const [command, argv] = isRoot
    ? ["runuser", ["-u", "postgres", "--", join(pgBin!, tool), ...args]]
    : [join(pgBin!, tool), [...args]]
  execFileSync(command, argv, { stdio: "pipe" })
}

export interface PgServer {
  readonly port: number
  readonly url: string
  /** Starts it, with settings given on the command line (not in its files, so a base backup does not copy them). */
  readonly start: (settings?: Record<string, string>) => void
  /** A fast shutdown, as an operator stops it. */
  readonly stop: () => void
  /** SIGKILL to the postmaster, as a machine that dies. */
  readonly kill: () => void
  /** A standby made the primary, as a failover manager does. */
  readonly promote: () => void
  /** One statement through psql, its rows as psql prints them unaligned (`-At`). */
  readonly query: (statement: string) => string
  /** A standby streaming from this one (`pg_basebackup -R`), not started. */
  readonly standby: () => Promise<PgServer>
  readonly remove: () => void
}

const serverAt = (dir: string, port: number): PgServer => {
  const data = join(dir, "data")
  let settings: Record<string, string> = {}
  const options = () =>
    [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses=127.0.0.1",
      ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)
    ]
      .join(" ")
  const pgCtl = (...args: Array<string>) => asPostgres("pg_ctl", ["-D", data, "-w", "-l", join(dir, "log"), ...args])
  const server: PgServer = {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: (given = {}) => {
      settings = given
      pgCtl("-o", options(), "start")
    },
    stop: () => pgCtl("-m", "fast", "stop"),
    kill: () => {
      const pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0])
      process.kill(pid, "SIGKILL")
    },
    promote: () => pgCtl("promote"),
    query: (statement) =>
      execFileSync("psql", ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-Atc", statement], {
        encoding: "utf8"
      }).trim(),
    standby: async () => {
      const standby = await fresh()
      asPostgres("pg_basebackup", [
        "-D",
        join(standby.dir, "data"),
        "-R",
        "-h",
        "127.0.0.1",
        "-p",
        String(port),
        "-U",
        "postgres"
      ])
      return standby.server
    },
    remove: () => {
      try {
        pgCtl("-m", "immediate", "stop")
      } catch {
        // Not running (killed, or never started).
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return server
}

const fresh = async () => {
  const dir = mkdtempSync(join(tmpdir(), "tenet-pg-"))
  if (process.getuid?.() === 0) execFileSync("chown", ["-R", "postgres", dir])
  return { dir, server: serverAt(dir, await freePort()) }
}

/** A new, empty server (trust authentication, replication allowed from loopback), not started. */
export const initdb = async (): Promise<PgServer> => {
  const { dir, server } = await fresh()
  asPostgres("initdb", ["-D", join(dir, "data"), "-A", "trust", "-U", "postgres"])
  return server
}
