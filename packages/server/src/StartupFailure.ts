/**
 * What an operator reads when the server cannot start, or stops on a failure: one JSON line
 * saying what went wrong in words and what to do (a port in use, a database out of reach, a
 * held data directory, a missing or invalid setting), not a stack trace. The pretty cause,
 * stack included, is added only for failures nobody foresaw.
 */
import { PgPrimary } from "@tenet/adapters-postgres"
import { Cause, Chunk, ConfigError, Console, Data } from "effect"
import * as JsonLogs from "./JsonLogs.js"

/** A failure to start whose words name what went wrong and what to do. */
export class CannotStart extends Data.TaggedError("CannotStart")<{ readonly message: string }> {}

const hasMessage = (u: unknown): u is { readonly message: string } =>
  typeof u === "object" && u !== null && "message" in u && typeof u.message === "string"

const SETTINGS_HELP = "see `tenet-server --help` for every setting"

/** A configuration error as the variables it names: `TENET_PORT: Expected a network port value ...`. */
const configWords = (error: ConfigError.ConfigError): string => {
  switch (error._op) {
    case "And":
    case "Or":
      return `${configWords(error.left)}; ${configWords(error.right)}`
    case "InvalidData":
      return `invalid setting ${error.path.join(".")}: ${error.message}`
    case "MissingData":
      return `missing setting ${error.path.join(".")}: ${error.message}`
    case "SourceUnavailable":
    case "Unsupported":
      return `setting ${error.path.join(".")}: ${error.message}`
  }
}

/** The words for one failure or defect, when we wrote some. */
const wordsFor = (u: unknown): string | undefined => {
  if (ConfigError.isConfigError(u)) return `${configWords(u)} (${SETTINGS_HELP})`
  if (Cause.isRuntimeException(u)) return u.message
  if (typeof u === "object" && u !== null && "_tag" in u && hasMessage(u) && u.message !== "") return u.message
  return undefined
}

export const describe = (cause: Cause.Cause<unknown>): { readonly message: string; readonly cause?: string } => {
  const all = [...Chunk.toReadonlyArray(Cause.failures(cause)), ...Chunk.toReadonlyArray(Cause.defects(cause))]
  const words = all.map(wordsFor)
  const message = all.map((u, i) => words[i] ?? (hasMessage(u) && u.message !== "" ? u.message : String(u))).join(
    "; "
  )
  return words.every((w) => w !== undefined) ? { message } : { message, cause: Cause.pretty(cause) }
}

/** The system error (`EADDRINUSE`, `ECONNREFUSED`, ...) under a failure, if any. */
const systemError = (u: unknown): { readonly code?: string; readonly message: string } | undefined => {
  for (let e = u, depth = 0; typeof e === "object" && e !== null && depth < 5; depth++) {
    if ("code" in e && typeof e.code === "string" && hasMessage(e)) return { code: e.code, message: e.message }
    e = "cause" in e ? e.cause : undefined
  }
  return hasMessage(u) && u.message !== "" ? { message: u.message } : undefined
}

/** Why a listener could not bind `host:port`, naming the setting that chooses it. */
export const cannotListen = (setting: string, host: string, port: number) => (error: unknown): CannotStart => {
  const address = `${host.includes(":") ? `[${host}]` : host}:${port}`
  const system = systemError(error)
  switch (system?.code) {
    case "EADDRINUSE":
      return new CannotStart({
        message: `cannot listen on ${address}: the port is in use by another process (EADDRINUSE); ` +
          `stop it, or choose another port with ${setting}`
      })
    case "EACCES":
      return new CannotStart({
        message: `cannot listen on ${address}: permission denied (EACCES); ports below 1024 need privileges, ` +
          `so choose another with ${setting}`
      })
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
      return new CannotStart({
        message: `cannot listen on ${address}: this machine has no such address (${system.code}); ` +
          "set TENET_HOST to one of its addresses, or 0.0.0.0 for all"
      })
    default:
      return new CannotStart({ message: `cannot listen on ${address}: ${system?.message ?? String(error)}` })
  }
}

/** The database a URL names, without its password: `user@host:port/database` (every host, when several). */
const whereIs = (url: string): string => {
  const parsed = PgPrimary.parseUrl(url)
  if ("invalid" in parsed) return `the database TENET_DATABASE_URL names (${parsed.invalid})`
  const first = new URL(parsed.target.url)
  const user = first.username === "" ? "" : `${decodeURIComponent(first.username)}@`
  return `${user}${parsed.target.hosts.map(PgPrimary.describeHost).join(",")}${first.pathname}`
}

/** Why the PostgreSQL store could not start. */
export const cannotUseDatabase = (url: string) => (error: unknown): CannotStart => {
  const system = systemError(error)
  return new CannotStart({
    message: `cannot use PostgreSQL at ${whereIs(url)}: ${system?.message ?? String(error)}; ` +
      "check TENET_DATABASE_URL and that the server runs and lets this user in"
  })
}

/** Writes the failure as one JSON log line on stderr. */
export const report = (cause: Cause.Cause<unknown>) =>
  Console.error(JsonLogs.line("FATAL", describe(cause).message, { cause: describe(cause).cause }))
