/**
 * Builds the console into @tenet/server's dist/console: one bundle (Preact, @tenet/client and
 * the Effect it runs on), the page and its style. Nothing is fetched at run time.
 */
import { build } from "esbuild"
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const out = join(here, "../server/dist/console")
mkdirSync(out, { recursive: true })
const result = await build({
  write: false,
  entryPoints: [join(here, "src/main.tsx")],
  outfile: join(out, "console.js"),
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "linked",
  logLevel: "warning",
  // The workspace's TypeScript sources, as tests and `pnpm start` use them: no build needed first.
  conditions: ["@tenet/source"]
})
/** Replaces `path` whole: a server running from this directory never reads a half-written file. */
const replace = (path, contents) => {
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, contents)
  renameSync(temporary, path)
}
for (const file of result.outputFiles) replace(file.path, file.contents)
for (const file of ["index.html", "console.css"]) replace(join(out, file), readFileSync(join(here, "src", file)))
