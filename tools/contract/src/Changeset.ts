/**
 * The pending changesets (`.changeset/*.md`) and what they promise. A changeset names the
 * packages it bumps and says, for users, what changed. One that breaks callers says so: its
 * summary begins with `**Breaking**` and carries a `Migration:` paragraph, and it bumps the
 * package enough for its version (a minor below 1.0, a major from 1.0).
 */

export type Bump = "patch" | "minor" | "major"

export interface Changeset {
  readonly file: string
  readonly bumps: ReadonlyMap<string, Bump>
  readonly summary: string
}

const BUMPS: ReadonlyArray<Bump> = ["patch", "minor", "major"]

/** A changeset file's packages and summary; an error names what is wrong with it. */
export const parse = (file: string, text: string): Changeset => {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text)
  if (match === null) throw new Error(`${file}: a changeset begins with a front matter between --- lines`)
  const bumps = new Map<string, Bump>()
  for (const line of match[1]!.split(/\r?\n/).filter((l) => l.trim() !== "")) {
    const pair = /^\s*["']?([^"':]+)["']?\s*:\s*(\w+)\s*$/.exec(line)
    if (pair === null || !BUMPS.includes(pair[2] as Bump)) {
      throw new Error(`${file}: "${line}" is not "<package>": patch|minor|major`)
    }
    bumps.set(pair[1]!, pair[2] as Bump)
  }
  return { file, bumps, summary: match[2]!.trim() }
}

/** Whether a changeset announces a breaking change. */
export const isBreaking = (changeset: Changeset): boolean => /^\*\*Breaking\*\*/.test(changeset.summary)

/** What is missing from a breaking changeset for it to be one users can act on. */
export const breakingProblems = (
  changeset: Changeset,
  versions: ReadonlyMap<string, string>
): ReadonlyArray<string> => {
  const problems: Array<string> = []
  if (!/^Migration:/m.test(changeset.summary)) {
    problems.push(`${changeset.file}: a breaking change says what to do, in a paragraph beginning "Migration:"`)
  }
  for (const [pkg, bump] of changeset.bumps) {
    const major = Number((versions.get(pkg) ?? "0.0.0").split(".")[0])
    const needed: Bump = major >= 1 ? "major" : "minor"
    if (BUMPS.indexOf(bump) < BUMPS.indexOf(needed)) {
      problems.push(
        `${changeset.file}: a breaking change to ${pkg} ${versions.get(pkg)} is a ${needed} bump, not ${bump}`
      )
    }
  }
  return problems
}
