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

export const decide = (input: Input): Verdict => {
  const failures: Array<string> = []
  const changes: Array<string> = []
  const naming = (pkg: string) => input.changesets.filter((c) => c.bumps.has(pkg))
  const announcedBreaking = (pkg: string) => naming(pkg).some(Changeset.isBreaking)

  for (const report of input.reports) {
    if (report.committed !== report.generated) {
      failures.push(
        `${report.path} is not the public API of the build: run \`pnpm contract:update\` and commit the report`
      )
    }
    if (report.released === report.generated) continue
    const removed = report.released === undefined ? [] : ReportDiff.removed(report.released, report.generated)
    changes.push(`${report.path}: ${removed.length === 0 ? "additions" : `${removed.length} removed or changed`}`)
    if (naming(report.pkg).length === 0) {
      failures.push(
        `${report.pkg}'s public API changed since the release with no changeset naming it: run \`pnpm changeset\``
      )
    }
    if (removed.length > 0 && !announcedBreaking(report.pkg)) {
      failures.push(
        `${report.pkg}'s public API removes or changes what the release had, and no changeset marks it **Breaking**:${
          listed(removed)
        }`
      )
    }
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
  if (breaking.length > 0 && !announcedBreaking(HTTP_PACKAGE)) {
    failures.push(
      `the HTTP contract breaks what the release promised, and no changeset naming ${HTTP_PACKAGE} marks it **Breaking**:${
        listed(breaking.map(OpenApiDiff.format))
      }`
    )
  }

  for (const changeset of input.changesets) {
    if (Changeset.isBreaking(changeset)) failures.push(...Changeset.breakingProblems(changeset, input.versions))
  }
  return { failures, changes }
}
