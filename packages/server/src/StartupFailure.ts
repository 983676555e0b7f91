/**
 * What an operator reads when the server cannot start, or stops on a failure: one JSON line
 * saying what went wrong in words (a held data directory, a missing or invalid setting), not a
 * stack trace. The pretty cause, stack included, is added only for failures nobody foresaw.
 */
import { Cause, Chunk, ConfigError, Console } from "effect"

const hasMessage = (u: unknown): u is { readonly message: string } =>
  typeof u === "object" && u !== null && "message" in u && typeof u.message === "string"

/** The words for one failure or defect, when we wrote some. */
const wordsFor = (u: unknown): string | undefined => {
  // Its string form names the setting (`Invalid data at TENET_PORT: ...`); its message does not.
  if (ConfigError.isConfigError(u)) return String(u)
  if (Cause.isRuntimeException(u)) return u.message
  if (typeof u === "object" && u !== null && "_tag" in u && hasMessage(u)) return u.message
  return undefined
}

export const describe = (cause: Cause.Cause<unknown>): { readonly message: string; readonly cause?: string } => {
  const all = [...Chunk.toReadonlyArray(Cause.failures(cause)), ...Chunk.toReadonlyArray(Cause.defects(cause))]
  const words = all.map(wordsFor)
  const message = all.map((u, i) => words[i] ?? (hasMessage(u) ? u.message : String(u))).join("; ")
  return words.every((w) => w !== undefined) ? { message } : { message, cause: Cause.pretty(cause) }
}

/** Writes the failure as one JSON log line on stderr. */
export const report = (cause: Cause.Cause<unknown>) =>
  Console.error(JSON.stringify({ ...describe(cause), logLevel: "FATAL", timestamp: new Date().toISOString() }))
