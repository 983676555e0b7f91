/**
 * The files the gate reads and the release writes: the build's reports and OpenAPI document,
 * the committed reports, the last release's copies (`tools/contract/released/`) and the pending
 * changesets.
 */
import { OpenApi } from "@effect/platform"
import { Api } from "@tenet/core"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import * as ApiReport from "./ApiReport.js"
import * as Changeset from "./Changeset.js"
import type * as Gate from "./Gate.js"

export const RELEASED = join(ApiReport.ROOT, "tools", "contract", "released")
export const RELEASED_OPENAPI = join(RELEASED, "openapi.json")
const CHANGESETS = join(ApiReport.ROOT, ".changeset")

const readIfThere = (path: string): string | undefined => existsSync(path) ? readFileSync(path, "utf8") : undefined

/** The OpenAPI document the server serves at `/openapi.json`, as stable JSON text. */
export const openApiText = (): string => `${JSON.stringify(OpenApi.fromApi(Api.TenetApi), null, 2)}\n`

export const changesets = (): ReadonlyArray<Changeset.Changeset> =>
  readdirSync(CHANGESETS)
    .filter((f) => f.endsWith(".md") && f !== "README.md")
    .sort()
    .map((f) => Changeset.parse(`.changeset/${f}`, readFileSync(join(CHANGESETS, f), "utf8")))

export const versions = (): ReadonlyMap<string, string> =>
  new Map(
    [...new Set(ApiReport.entries().map((e) => e.folder))].map((folder) => {
      const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as {
        name: string
        version: string
      }
      return [manifest.name, manifest.version]
    })
  )

/** Every report generated from the build, with its committed and released copies. */
export const reports = (
  log: (line: string) => void
): ReadonlyArray<Gate.Report & { readonly entry: ApiReport.Entry }> =>
  ApiReport.entries().map((entry) => {
    log(`API report of ${entry.pkg} ${entry.subpath}`)
    return {
      entry,
      pkg: entry.pkg,
      path: relative(ApiReport.ROOT, ApiReport.reportPath(entry)),
      generated: ApiReport.generate(entry),
      committed: readIfThere(ApiReport.reportPath(entry)),
      released: readIfThere(join(RELEASED, entry.report))
    }
  })

export const releasedOpenApi = (): unknown => JSON.parse(readIfThere(RELEASED_OPENAPI) ?? "{}")
