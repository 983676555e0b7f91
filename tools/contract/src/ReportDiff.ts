/**
 * What a change to an API report takes away. An API Extractor report is TypeScript declarations
 * one member to a line; a line of the old report that the new one lacks is a declaration or a
 * member removed or changed, which can break a user's code. Lines only added extend the API.
 */

/** The declaration lines of a report, each keyed by the declaration it belongs to. */
const declarations = (report: string): ReadonlyArray<string> => {
  const start = report.indexOf("```ts")
  const end = report.lastIndexOf("```")
  const body = start === -1 ? report : report.slice(start + 5, end > start ? end : undefined)
  const keyed: Array<string> = []
  let owner = ""
  for (const raw of body.split("\n")) {
    // API Extractor tells apart declarations of one name with `_2`, `_3`...; the numbers move
    // when an unrelated declaration of that name comes or goes.
    // A namespace's export list gains a comma on its last line when a member is added after it.
    const line = raw.trim().replace(/\b([A-Za-z$][\w$]*?)_\d+\b/g, "$1").replace(/,$/, "")
    if (line === "") {
      owner = ""
      continue
    }
    if (line.startsWith("//") || line.startsWith("import ") || line.startsWith("export {") && owner === "") continue
    if (owner === "") owner = line
    keyed.push(owner === line ? line : `${owner} … ${line}`)
  }
  return keyed
}

/** The declarations and members of `before` that `after` no longer has as they were. */
export const removed = (before: string, after: string): ReadonlyArray<string> => {
  const kept = new Set(declarations(after))
  return declarations(before).filter((line) => !kept.has(line))
}

/**
 * The name of the declaration a removed line belongs to (`reachability` of
 * `const reachability: ...`, `Rule` of `export interface Rule { … readonly port: number;`).
 */
export const declarationName = (line: string): string => {
  const owner = line.split(" … ")[0]!
  const named = /\b(?:const|let|var|function|interface|class|type|namespace|enum)\s+([A-Za-z_$][\w$]*)/.exec(owner)
  return named?.[1] ?? owner
}

/**
 * What a new report does to the declarations of an old one, by name: `removed`, those it no
 * longer declares at all; `changed`, those it declares otherwise (a member gone or retyped, a
 * signature changed); `lines`, every line of the old report the new one lacks.
 */
export const compare = (before: string, after: string): {
  readonly removed: ReadonlyArray<string>
  readonly changed: ReadonlyArray<string>
  readonly lines: ReadonlyArray<string>
} => {
  const lines = removed(before, after)
  const still = new Set(declarations(after).map(declarationName))
  const names = [...new Set(lines.map(declarationName))]
  return { removed: names.filter((n) => !still.has(n)), changed: names.filter((n) => still.has(n)), lines }
}

const OPEN = "<([{"
const CLOSE = ">)]}"

/** The bracket depth change at `i` (`=>` is no bracket). */
const step = (text: string, i: number): number => {
  const c = text[i]!
  if (c === ">" && text[i - 1] === "=") return 0
  return OPEN.includes(c) ? 1 : CLOSE.includes(c) ? -1 : 0
}

/** Whether a separator of a union's operands begins at `i`: what ends a type on either side. */
const separatorAt = (text: string, i: number): number => {
  if (text.startsWith("=>", i)) return 2
  return ",;:=?\n".includes(text[i]!) ? 1 : 0
}

/**
 * `text` (a bracket's content, or a whole report) with every union's members in one order, at
 * every depth: the compiler prints a union's members in the order it made their types, which
 * an incremental and a clean build of the same code need not share.
 */
const sortUnions = (text: string): string => {
  // Split at the separators outside brackets; each piece between them is one type or a name.
  const pieces: Array<string> = []
  let depth = 0
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const d = step(text, i)
    depth += d
    if (d !== 0 || depth !== 0) continue
    const width = separatorAt(text, i)
    if (width === 0) continue
    pieces.push(text.slice(from, i), text.slice(i, i + width))
    from = i + width
    i += width - 1
  }
  pieces.push(text.slice(from))
  return pieces.map((piece, n) => n % 2 === 1 ? piece : sortedMembers(piece)).join("")
}

/** One type's union members (each with its brackets' contents in order), sorted. */
const sortedMembers = (piece: string): string => {
  const members: Array<string> = []
  let depth = 0
  let from = 0
  for (let i = 0; i < piece.length; i++) {
    depth += step(piece, i)
    if (depth === 0 && piece[i] === "|") {
      members.push(piece.slice(from, i))
      from = i + 1
    }
  }
  members.push(piece.slice(from))
  const inner = members.map(withinBrackets)
  if (inner.length < 2) return inner[0]!
  const lead = piece.match(/^\s*/)![0]
  const trail = piece.match(/\s*$/)![0]
  return lead + inner.map((m) => m.trim()).sort().join(" | ") + trail
}

/** A member with the content of each of its outermost brackets put in order. */
const withinBrackets = (member: string): string => {
  let out = ""
  let i = 0
  while (i < member.length) {
    if (step(member, i) !== 1) {
      out += member[i]
      i++
      continue
    }
    let depth = 0
    let end = i
    for (; end < member.length; end++) {
      depth += step(member, end)
      if (depth === 0) break
    }
    out += member[i] + sortUnions(member.slice(i + 1, end)) + (member[end] ?? "")
    i = end + 1
  }
  return out
}

/** What reads as syntax outside a string literal: inside one, hidden while unions are sorted. */
const SYNTAX = /[|,;:=?<>()[\]{}\n]/g
const HIDDEN = 0xe000

const hide = (report: string): string =>
  report.replace(
    /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/g,
    (literal) => literal.replace(SYNTAX, (c) => String.fromCharCode(HIDDEN + c.charCodeAt(0)))
  )

const reveal = (report: string): string =>
  report.replace(/[\ue000-\ue07f]/g, (c) => String.fromCharCode(c.charCodeAt(0) - HIDDEN))

/** Whether a text's brackets (outside its comments) close as they open. */
const balanced = (text: string): boolean => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    depth += step(text, i)
    if (depth < 0) return false
  }
  return depth === 0
}

/**
 * A report with every union's members in one order (see `sortUnions`): each declaration of its
 * code block on its own, so that a bracket in the text around them cannot lead the sorting astray.
 */
export const normalize = (crlf: string): string => {
  const report = crlf.replaceAll("\r\n", "\n")
  const start = report.indexOf("```ts\n")
  const end = report.lastIndexOf("```")
  if (start === -1 || end <= start) return report
  const code = report.slice(start + 6, end).split("\n\n").map((declaration) => {
    const hidden = hide(declaration)
    const code = hidden.split("\n").filter((l) => !l.trim().startsWith("//")).join("\n")
    return balanced(code) ? reveal(sortUnions(hidden)) : declaration
  })
  return report.slice(0, start + 6) + code.join("\n\n") + report.slice(end)
}
