/**
 * The public TypeScript API of every published package, as API Extractor reports it: one
 * `etc/<package>[-<entry>].api.md` per entry point of a package's `exports` (wildcard subpaths
 * reach the same modules the entry points re-export as namespaces).
 */
import { Extractor, ExtractorConfig, ExtractorLogLevel } from "@microsoft/api-extractor"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ReportDiff from "./ReportDiff.js"

export const ROOT = join(import.meta.dirname, "..", "..", "..")

export interface Entry {
  /** The package's name, e.g. `@tenet/core`. */
  readonly pkg: string
  readonly folder: string
  /** The export's subpath, e.g. `.` or `./testing`. */
  readonly subpath: string
  /** The declaration file the subpath's types resolve to, in the package's build. */
  readonly types: string
  /** The report's file name, e.g. `core.api.md` or `core-testing.api.md`. */
  readonly report: string
}

interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly exports?: Record<string, { readonly types?: string } | string>
}

/** Every entry point of every published package of the workspace. */
export const entries = (root = ROOT): ReadonlyArray<Entry> =>
  readdirSync(join(root, "packages")).sort().flatMap((dir) => {
    const folder = join(root, "packages", dir)
    const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as Manifest
    if (manifest.private === true) return []
    return Object.entries(manifest.exports ?? {}).flatMap(([subpath, target]) => {
      if (subpath.includes("*") || typeof target === "string" || target.types === undefined) return []
      const suffix = subpath === "." ? "" : `-${subpath.slice(2).replaceAll("/", "-")}`
      return [{
        pkg: manifest.name,
        folder,
        subpath,
        types: join(folder, target.types),
        report: `${dir}${suffix}.api.md`
      }]
    })
  })

/** Where a package keeps the reports of its entry points, as API Extractor does by default. */
export const reportPath = (entry: Entry): string => join(entry.folder, "etc", entry.report)

/**
 * The report of an entry point, generated from the package's build (`pnpm build` first).
 * Declarations of other packages (`@tenet/core` in the server's, say) are imports in it, as
 * they are for a user.
 */
export const generate = (entry: Entry): string => {
  const work = mkdtempSync(join(tmpdir(), "tenet-api-report-"))
  try {
    const config = ExtractorConfig.prepare({
      configObject: {
        projectFolder: entry.folder,
        newlineKind: "lf",
        mainEntryPointFilePath: entry.types,
        compiler: {
          // The build's own resolution, without the workspace's source condition: a user's
          // compiler reads the other packages' declarations, not their sources.
          overrideTsconfig: {
            compilerOptions: {
              module: "NodeNext",
              moduleResolution: "NodeNext",
              target: "ES2022",
              lib: ["ES2022"],
              types: ["node"],
              strict: true,
              exactOptionalPropertyTypes: true,
              skipLibCheck: true
            }
          }
        },
        apiReport: {
          enabled: true,
          reportFolder: work,
          reportTempFolder: join(work, "temp"),
          reportFileName: entry.report.replace(/\.api\.md$/, "")
        },
        docModel: { enabled: false },
        dtsRollup: { enabled: false },
        tsdocMetadata: { enabled: false },
        messages: {
          compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Warning } },
          extractorMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
          tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } }
        }
      },
      configObjectFullPath: join(entry.folder, "api-extractor.json"),
      packageJsonFullPath: join(entry.folder, "package.json")
    })
    mkdirSync(join(work, "temp"))
    // Its console chatter (the compiler it bundles, a report "created") says nothing here;
    // errors still fail the run.
    const result = Extractor.invoke(config, {
      localBuild: true,
      messageCallback: (message) => {
        message.handled = message.logLevel !== ExtractorLogLevel.Error
      }
    })
    if (!result.succeeded) {
      throw new Error(`API Extractor failed on ${entry.pkg} ${entry.subpath}: ${result.errorCount} errors`)
    }
    return ReportDiff.normalize(readFileSync(join(work, "temp", entry.report), "utf8"))
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
