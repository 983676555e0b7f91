/**
 * The contract gate: what the build's public API and HTTP contract are, set against what the
 * committed reports say and what the last release promised, and the changesets that explain
 * the difference. Pure: the bins read the files and print the verdict.
 */
import * as Changeset from "./Changeset.js"
import * as OpenApiDiff from "./OpenApiDiff.js"
import * as ReportDiff from "./ReportDiff.js"

/** The package whose changesets announce changes to the HTTP contract (it serves it). */
export const HTTP_PACKAGE = "@tenet/server"

export interface Report {
  readonly pkg: string
  /** Where the report is committed, as the user should read it. */
  readonly path: string
  readonly generated: string
  readonly committed: string | undefined
  /** The report as the last release had it; undefined for an entry point new since. */
  readonly released: string | undefined
}

export interface Input {
  readonly reports: ReadonlyArray<Report>
  readonly openapi: { readonly generated: unknown; readonly released: unknown }
  readonly changesets: ReadonlyArray<Changeset.Changeset>
  readonly versions: ReadonlyMap<string, string>
}

export interface Verdict {
  readonly failures: ReadonlyArray<string>
  /** What changed since the release, for the log. */
  readonly changes: ReadonlyArray<string>
}

const SHOWN = 12

const listed = (lines: ReadonlyArray<string>): string =>
  lines.slice(0, SHOWN).map((l) => `\n    ${l}`).join("") +
  (lines.length > SHOWN ? `\n    … and ${lines.length - SHOWN} more` : "")

/** Whether a changeset's words mention a broken thing: an operation by its path, a declaration by its name. */
const mentions = (changeset: Changeset.Changeset, thing: string): boolean => {
  const path = thing.split(" ")[1]
  const escaped = (path ?? thing).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  // A path is mentioned whole: `/security-rules/{rule_id}` does not mention `/security-rules`.
  const word = path === undefined ? "[\\w$]" : "[\\w$/{}-]"
  return new RegExp(`(?<!${word})${escaped}(?!${word})`).test(changeset.summary)
}

/**
 * The verdict on things a change removes (a breaking changeset must mention each), and on
 * things it changes (some changeset must mention each: whether a changed signature breaks its
 * callers is the author's to say, a removal never is). One change announced must not let
 * another through unsaid.
 */
const announced = (
  changesets: ReadonlyArray<Changeset.Changeset>,
  pkg: string,
  what: string,
  broken: { readonly removed: ReadonlyArray<string>; readonly changed: ReadonlyArray<string> },
  detail: ReadonlyArray<string>
): ReadonlyArray<string> => {
  if (broken.removed.length === 0 && broken.changed.length === 0) return []
  const naming = changesets.filter((c) => c.bumps.has(pkg))
  const breaking = naming.filter(Changeset.isBreaking)
  if (broken.removed.length > 0 && breaking.length === 0) {
    return [
      `${what} removes what the release had, and no changeset naming ${pkg} marks it **Breaking**:${listed(detail)}`
    ]
  }
  const unsaid = (things: ReadonlyArray<string>, by: ReadonlyArray<Changeset.Changeset>) =>
    [...new Set(things)].filter((thing) => !by.some((c) => mentions(c, thing))).map((t) => `\`${t}\``).join(", ")
  const removedUnsaid = unsaid(broken.removed, breaking)
  const changedUnsaid = unsaid(broken.changed, naming)
  return [
    ...(removedUnsaid === ""
      ? []
      : [`${what} removes ${removedUnsaid}, which no **Breaking** changeset naming ${pkg} mentions`]),
    ...(changedUnsaid === "" ? [] : [
      `${what} changes ${changedUnsaid}, which no changeset naming ${pkg} mentions (mark it **Breaking** if callers must change)`
    ])
  ]
}

export const decide = (input: Input): Verdict => {
  const failures: Array<string> = []
  const changes: Array<string> = []
  const naming = (pkg: string) => input.changesets.filter((c) => c.bumps.has(pkg))

  for (const report of input.reports) {
    if (report.committed !== report.generated) {
      failures.push(
        `${report.path} is not the public API of the build: run \`pnpm contract:update\` and commit the report`
      )
    }
    if (report.released === report.generated) continue
    const compared = report.released === undefined
      ? { removed: [], changed: [], lines: [] }
      : ReportDiff.compare(report.released, report.generated)
    changes.push(
      `${report.path}: ${
        compared.lines.length === 0 ? "additions" : `${compared.lines.length} lines removed or changed`
      }`
    )
    if (naming(report.pkg).length === 0) {
      failures.push(
        `${report.pkg}'s public API changed since the release with no changeset naming it: run \`pnpm changeset\``
      )
    }
    failures.push(...announced(input.changesets, report.pkg, `${report.pkg}'s public API`, compared, compared.lines))
  }

  const http = OpenApiDiff.diff(
    input.openapi.released as Parameters<typeof OpenApiDiff.diff>[0],
    input.openapi.generated as Parameters<typeof OpenApiDiff.diff>[1]
  )
  changes.push(...http.map(OpenApiDiff.format))
  if (http.length > 0 && naming(HTTP_PACKAGE).length === 0) {
    failures.push(
      `the HTTP contract changed since the release with no changeset naming ${HTTP_PACKAGE}: run \`pnpm changeset\``
    )
  }
  const breaking = OpenApiDiff.breaking(http)
  failures.push(
    ...announced(
      input.changesets,
      HTTP_PACKAGE,
      "the HTTP contract",
      { removed: breaking.map((c) => c.at.split(" ").slice(0, 2).join(" ")), changed: [] },
      breaking.map(OpenApiDiff.format)
    )
  )

  for (const changeset of input.changesets) {
    if (Changeset.isBreaking(changeset)) failures.push(...Changeset.breakingProblems(changeset, input.versions))
  }
  return { failures, changes }
}
