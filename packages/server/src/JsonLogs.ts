/**
 * The server's logs: one flat JSON object per line, `timestamp`, `logLevel` and `message` (a
 * string) first, then the line's fields and annotations (`request_id`, `status`, ...) at the
 * top level, where `jq` and log pipelines find them. No empty structures: spans only when a
 * line has some, a cause only when there is one, no fiber ids.
 */
import { Cause, HashMap, Inspectable, List, Logger } from "effect"

/** One line as the server writes it, for the few written outside a fiber (signals, exits). */
export const line = (logLevel: string, message: string, fields: Record<string, unknown> = {}): string =>
  JSON.stringify({ timestamp: new Date().toISOString(), logLevel, message, ...fields })

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) && !(u instanceof Error)

/** A log call's message parts: the text ones make the message, the objects its fields. */
const split = (message: unknown): { readonly text: string; readonly fields: Record<string, unknown> } => {
  const parts = Array.isArray(message) ? message : [message]
  const texts: Array<string> = []
  let fields: Record<string, unknown> = {}
  for (const part of parts) {
    if (isRecord(part)) fields = { ...fields, ...part }
    else texts.push(typeof part === "string" ? part : Inspectable.toStringUnknown(part))
  }
  return { text: texts.join(" "), fields }
}

export const logger = Logger.make<unknown, string>(({ annotations, cause, date, logLevel, message, spans }) => {
  const { fields, text } = split(message)
  const now = date.getTime()
  const spanTimes = List.toArray(spans).map((span) => [span.label, now - span.startTime] as const)
  return JSON.stringify({
    timestamp: date.toISOString(),
    logLevel: logLevel.label,
    message: text,
    ...Object.fromEntries(HashMap.toEntries(annotations).map(([key, value]) => [key, Inspectable.toJSON(value)])),
    ...Inspectable.toJSON(fields) as Record<string, unknown>,
    ...(spanTimes.length === 0 ? {} : { spans: Object.fromEntries(spanTimes) }),
    ...(Cause.isEmpty(cause) ? {} : { cause: Cause.pretty(cause, { renderErrorCause: true }) })
  })
})

/** The logger in place of Effect's default, writing each line to standard output. */
export const layer = Logger.replace(Logger.defaultLogger, Logger.withConsoleLog(logger))
