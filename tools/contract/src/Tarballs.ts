/**
 * What npm users receive, as the tools made for it read the packed tarballs: publint (the
 * manifest's entry points and files; warnings count) and Are the Types Wrong (every entry
 * point's types resolve, and to the module they describe, under Node's ESM resolution and a
 * bundler's; the packages are ESM only, so CommonJS and node10 resolution are not asked).
 */
import { execFile, execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { ROOT } from "./ApiReport.js"

const run = promisify(execFile)

const bin = (tool: string) => join(ROOT, "node_modules", ".bin", tool)

/** What publint and attw find wrong with a tarball: one entry per tool that objects. */
const problemsOf = async (tarball: string): Promise<ReadonlyArray<string>> => {
  const check = (tool: string, args: ReadonlyArray<string>) =>
    run(bin(tool), [...args], { maxBuffer: 16 << 20 }).then(
      () => [],
      (
        e: { readonly stdout?: string; readonly stderr?: string }
      ) => [`${tool} on ${tarball}:\n${e.stdout ?? ""}${e.stderr ?? ""}`]
    )
  return [
    ...await check("publint", ["run", tarball, "--strict"]),
    ...await check("attw", [tarball, "--profile", "esm-only", "--format", "ascii"])
  ]
}

/** Packs every published package (from its build) and lints the tarballs. */
export const lint = async (log: (line: string) => void): Promise<ReadonlyArray<string>> => {
  const dir = mkdtempSync(join(tmpdir(), "tenet-tarballs-"))
  try {
    execFileSync("pnpm", ["-r", "pack", "--pack-destination", dir], { cwd: ROOT, stdio: "ignore" })
    const tarballs = readdirSync(dir).filter((f) => f.endsWith(".tgz")).sort()
    log(`publint and attw on ${tarballs.join(", ")}`)
    const problems: Array<string> = []
    // One tarball at a time: each tool loads a compiler of its own.
    for (const tarball of tarballs) problems.push(...await problemsOf(join(dir, tarball)))
    return problems
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
