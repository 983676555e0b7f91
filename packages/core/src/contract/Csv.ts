/**
 * CSV as Tenet writes and reads it: RFC 4180 (CRLF rows, fields quoted when they hold a quote,
 * comma or line break), with every cell a spreadsheet would run as a formula neutralized as
 * OWASP's "CSV Injection" guidance says. A cell that begins with `=`, `+`, `-`, `@`, a tab or a
 * carriage return is written with a leading `'` (and quoted), so Excel, LibreOffice and Google
 * Sheets show it as text. A cell that begins with `'` itself gets one too, so reading is exact:
 * `read` takes one leading `'` off every cell that has one, and what was written comes back.
 * Pure.
 */
import { Either } from "effect"

/** What makes a spreadsheet read a cell as a formula (or hide what follows), and the escape itself. */
const RUNS = /^[=+\-@\t\r']/

/** A cell as text a spreadsheet shows as it is: `'` before one that would run. */
export const neutralize = (text: string): string => (RUNS.test(text) ? `'${text}` : text)

/** A cell as `neutralize` wrote it, as it was. */
export const restore = (text: string): string => (text.startsWith("'") ? text.slice(1) : text)

/** One field: `null`/`undefined` empty, an array space-separated, neutralized, quoted when it must be. */
export const field = (value: unknown): string => {
  const raw = value === null || value === undefined ? "" : Array.isArray(value) ? value.join(" ") : String(value)
  const text = neutralize(raw)
  return text !== raw || /[",\r\n]/.test(text) ? `"${text.replace(/"/g, "\"\"")}"` : text
}

/** A header and its rows as CSV text, each row ended by CRLF. */
export const write = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<unknown>>): string =>
  [header, ...rows].map((row) => row.map(field).join(",")).join("\r\n") + "\r\n"

/**
 * CSV text as rows of cells, each as it was before `write` neutralized it; a lone LF ends a row
 * too (a file saved by an editor). Fails naming the line of an unterminated quote.
 */
export const read = (text: string): Either.Either<Array<Array<string>>, string> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let cell = ""
  let quoted = false
  let line = 1
  let quoteLine = 0
  const endCell = () => {
    row.push(restore(cell))
    cell = ""
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === "\"" && text[i + 1] === "\"") {
        cell += "\""
        i++
      } else if (c === "\"") quoted = false
      else {
        if (c === "\n") line++
        cell += c
      }
    } else if (c === "\"") {
      quoted = true
      quoteLine = line
    } else if (c === ",") endCell()
    else if (c === "\n" || (c === "\r" && text[i + 1] === "\n")) {
      if (c === "\r") i++
      line++
      endCell()
      rows.push(row)
      row = []
    } else cell += c
  }
  if (quoted) return Either.left(`line ${quoteLine}: a quoted field is never closed`)
  if (cell !== "" || row.length > 0) {
    endCell()
    rows.push(row)
  }
  return Either.right(rows)
}
