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

/** The index of the bracket closing the one at `start`, or -1; `=>` closes nothing. */
const closing = (text: string, start: number): number => {
  let depth = 0
  for (let i = start; i < text.length; i++) {
    const c = text[i]!
    if (c === ">" && text[i - 1] === "=") continue
    if (OPEN.includes(c)) depth++
    else if (CLOSE.includes(c) && --depth === 0) return i
  }
  return -1
}

/** `text` split at `separator` where it is outside every bracket. */
const splitTop = (text: string, separator: string): Array<string> => {
  const parts: Array<string> = []
  let depth = 0
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === ">" && text[i - 1] === "=") continue
    if (OPEN.includes(c)) depth++
    else if (CLOSE.includes(c)) depth--
    else if (c === separator && depth === 0) {
      parts.push(text.slice(from, i))
      from = i + 1
    }
  }
  return [...parts, text.slice(from)]
}

/** A type argument with the members of its union in order: TypeScript prints them as it met them. */
const sortedUnion = (argument: string): string => {
  const members = splitTop(argument, "|").map((m) => m.trim())
  if (members.length < 2 || members.some((m) => splitTop(m, "=").length > 1 || m.includes("=>"))) return argument
  const lead = argument.match(/^\s*/)![0]
  return lead + members.sort().join(" | ")
}

/**
 * A report's lines with the unions of their type arguments (`Layer<A | B, E1 | E2, R>`) in one
 * order: the compiler prints a union's members in the order it created their types, which two
 * builds of the same code need not share.
 */
export const normalize = (report: string): string =>
  report.split("\n").map((line) => {
    const visit = (text: string): string => {
      let out = ""
      let i = 0
      while (i < text.length) {
        const c = text[i]!
        const generic = c === "<" && i > 0 && /[\w$.\]]/.test(text[i - 1]!)
        const end = generic ? closing(text, i) : -1
        if (end === -1) {
          out += c
          i++
          continue
        }
        const args = splitTop(text.slice(i + 1, end), ",").map((a) => sortedUnion(visit(a)))
        out += `<${args.join(",")}>`
        i = end + 1
      }
      return out
    }
    return visit(line)
  }).join("\n")
