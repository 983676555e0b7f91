/**
 * What a packed package must hold to work where it is installed: the JavaScript and
 * declarations of every source module, and every file its manifest points at.
 */

export interface Manifest {
  readonly name: string
  readonly exports?: Record<string, string | { readonly types: string; readonly default: string }>
  readonly bin?: Record<string, string>
}

/** The files a manifest points at; wildcard subpaths are covered by the per-module check. */
const targets = (manifest: Manifest): ReadonlyArray<string> =>
  [
    ...Object.values(manifest.exports ?? {}).flatMap((t) => typeof t === "string" ? [t] : [t.types, t.default]),
    ...Object.values(manifest.bin ?? {})
  ]
    .filter((t) => !t.includes("*"))
    .map((t) => t.replace(/^\.\//, ""))

/**
 * What is missing from a tarball's file list (paths relative to `package/`): an empty list
 * when every `src/**.ts` has its `dist/**.js` and `.d.ts`, and every export and bin target exists.
 */
export const missingBuild = (manifest: Manifest, fileList: ReadonlyArray<string>): ReadonlyArray<string> => {
  const files = new Set(fileList)
  const fromSources = fileList
    .filter((f) => f.startsWith("src/") && f.endsWith(".ts") && !f.endsWith(".d.ts"))
    .flatMap((f) => {
      const base = f.slice("src/".length, -".ts".length)
      return [`dist/${base}.js`, `dist/${base}.d.ts`]
    })
  const wanted = ["dist/index.js", ...fromSources, ...targets(manifest)]
  const missing = wanted.filter((f) => !files.has(f))
  return [...new Set(missing)]
}

/**
 * Compiled modules whose source is gone: left in `dist` by an earlier build, they must not ship.
 * The server's `dist/console` is the console's bundle, built from `packages/console`.
 */
export const staleBuild = (fileList: ReadonlyArray<string>): ReadonlyArray<string> => {
  const sources = new Set(fileList.filter((f) => f.startsWith("src/")).map((f) => f.slice(4).replace(/\.ts$/, "")))
  return fileList
    .filter((f) => f.startsWith("dist/") && f.endsWith(".js") && !f.startsWith("dist/console/"))
    .filter((f) => !sources.has(f.slice(5, -3)))
}
