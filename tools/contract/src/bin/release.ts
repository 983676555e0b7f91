/**
 * `pnpm release`: cuts a release of the pending changesets, in one commit with its tags.
 * 1. The contract check must pass (the reports are the build's, every change has its changeset).
 * 2. `changeset version` bumps the packages (one version for all, `.changeset/config.json`) and
 *    writes each package's CHANGELOG.md from the changesets, which it consumes.
 * 3. The build's API reports and OpenAPI document become what this release promises
 *    (`tools/contract/released/`), which the next check compares against.
 * 4. The server's image tag, where the docs and the deployment name it, becomes the version.
 * 5. One commit, `Release <version>`, and a tag per package (`@tenet/core@0.2.0`, ...).
 * Publishing the tagged commit is `pnpm -r publish` from a clean build.
 */
import { execFileSync } from "node:child_process"
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as ApiReport from "../ApiReport.js"
import * as Gate from "../Gate.js"
import * as Workspace from "../Workspace.js"

/** Where the server's image is named with its tag. */
const IMAGE_TAGGED = [
  "Dockerfile",
  "README.md",
  "deploy/README.md",
  "deploy/kubernetes/base/deployment.yaml",
  "deploy/kubernetes/example/kustomization.yaml"
]

const run = (command: string, args: ReadonlyArray<string>) =>
  execFileSync(command, args, { cwd: ApiReport.ROOT, stdio: "inherit" })

const dirty = execFileSync("git", ["status", "--porcelain"], { cwd: ApiReport.ROOT, encoding: "utf8" })
if (dirty.trim() !== "") {
  console.error(`A release is cut from a clean tree; commit or stash first:\n${dirty}`)
  process.exit(1)
}
const changesets = Workspace.changesets()
if (changesets.length === 0) {
  console.error("Nothing to release: no pending changesets.")
  process.exit(1)
}
const reports = Workspace.reports((line) => console.log(`… ${line}`))
const openapi = Workspace.openApiText()
const verdict = Gate.decide({
  reports,
  openapi: { generated: JSON.parse(openapi), released: Workspace.releasedOpenApi() },
  changesets,
  versions: Workspace.versions()
})
if (verdict.failures.length > 0) {
  console.error(`The contract check failed; no release:\n${verdict.failures.map((f) => `- ${f}`).join("\n")}`)
  process.exit(1)
}

const before = Workspace.versions().get(Gate.HTTP_PACKAGE)!
run("pnpm", ["exec", "changeset", "version"])
const version = Workspace.versions().get(Gate.HTTP_PACKAGE)!
// The server's image is tagged with the release's version where the docs and the deployment name it.
for (const file of IMAGE_TAGGED) {
  const path = join(ApiReport.ROOT, file)
  writeFileSync(
    path,
    readFileSync(path, "utf8")
      .replaceAll(`tenet-server:${before}`, `tenet-server:${version}`)
      .replaceAll(`newTag: ${before}`, `newTag: ${version}`)
  )
}
mkdirSync(Workspace.RELEASED, { recursive: true })
for (const report of reports) {
  copyFileSync(ApiReport.reportPath(report.entry), join(Workspace.RELEASED, report.entry.report))
}
writeFileSync(Workspace.RELEASED_OPENAPI, openapi)
run("git", ["add", "-A"])
run("git", [
  "commit",
  "-q",
  "-m",
  `Release ${version}`,
  "-m",
  "Versions, changelogs and the contract it promises (tools/contract/released/), from the changesets it consumed."
])
run("pnpm", ["exec", "changeset", "tag"])
console.log(`Released ${version}: the packages' CHANGELOG.md say what changed; push the commit and its tags.`)
