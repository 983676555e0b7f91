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
    const line = raw.trim().replace(/\b([A-Za-z$][\w$]*?)_\d+\b/g, "$1")
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
