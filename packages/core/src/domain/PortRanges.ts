/**
 * The `ports` field of a security rule: `"80"`, `"8000-8080"`, or a comma list of those
 * (at most 32 entries), every port in 1-65535, written with digits alone: no signs, exponents
 * or whitespace, which would otherwise be stored as sent and reach the cluster. Parsing is pure
 * and total: it returns the ranges or a message saying what is wrong.
 */
import { Either } from "effect"

export interface PortRange {
  readonly from: number
  readonly to: number
}

export const MAX_ENTRIES = 32
export const MIN_PORT = 1
export const MAX_PORT = 65535

const NUMBER = /^[0-9]{1,5}$/

const parsePort = (text: string): Either.Either<number, string> => {
  if (!NUMBER.test(text)) return Either.left(`'${text}' is not a port number (digits only, no spaces)`)
  const port = Number(text)
  if (port < MIN_PORT || port > MAX_PORT) return Either.left(`port ${port} is outside ${MIN_PORT}-${MAX_PORT}`)
  return Either.right(port)
}

const parseEntry = (entry: string): Either.Either<PortRange, string> => {
  const dash = entry.indexOf("-")
  if (dash < 0) return Either.map(parsePort(entry), (port) => ({ from: port, to: port }))
  return Either.flatMap(
    Either.all([parsePort(entry.slice(0, dash)), parsePort(entry.slice(dash + 1))]),
    ([from, to]) => from <= to ? Either.right({ from, to }) : Either.left(`range '${entry}' ends before it starts`)
  )
}

/** Parses a ports expression into its ranges, in the order written. */
export const parse = (text: string): Either.Either<ReadonlyArray<PortRange>, string> => {
  const entries = text.split(",")
  if (entries.length > MAX_ENTRIES) {
    return Either.left(`at most ${MAX_ENTRIES} entries are allowed, got ${entries.length}`)
  }
  return Either.all(entries.map(parseEntry))
}

/** Formats ranges back into the canonical text form (`"80,8000-8080"`). */
export const format = (ranges: ReadonlyArray<PortRange>): string =>
  ranges.map(({ from, to }) => from === to ? `${from}` : `${from}-${to}`).join(",")

/** Whether `port` falls in any of the ranges. */
export const includes = (ranges: ReadonlyArray<PortRange>, port: number): boolean =>
  ranges.some(({ from, to }) => port >= from && port <= to)
