/**
 * `pnpm contract:check` (CI, after `pnpm build`): fails when a committed API report is not the
 * build's, when the public TypeScript API or the HTTP contract changed since the last release
 * without a changeset that says so (and says it breaks, when it does), or when publint or Are
 * the Types Wrong object to a packed tarball.
 */
import * as Gate from "../Gate.js"
import * as Tarballs from "../Tarballs.js"
import * as Workspace from "../Workspace.js"

const verdict = Gate.decide({
  reports: Workspace.reports((line) => console.log(`… ${line}`)),
  openapi: { generated: JSON.parse(Workspace.openApiText()), released: Workspace.releasedOpenApi() },
  changesets: Workspace.changesets(),
  versions: Workspace.versions()
})
if (verdict.changes.length > 0) {
  console.log(`Changed since the last release:\n${verdict.changes.map((c) => `  ${c}`).join("\n")}`)
}
const failures = [...verdict.failures, ...await Tarballs.lint((line) => console.log(`… ${line}`))]
if (failures.length > 0) {
  console.error(`\nThe contract check failed:\n${failures.map((f) => `- ${f}`).join("\n")}`)
  process.exit(1)
}
console.log(
  "The contract check passed: the reports are the build's, every change since the release has its changeset, " +
    "and the tarballs lint clean."
)
