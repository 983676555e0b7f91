/**
 * `pnpm contract:update` (after `pnpm build`): writes every package's API report from the build,
 * for the change to be reviewed and committed with the code.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"
import * as ApiReport from "../ApiReport.js"

for (const entry of ApiReport.entries()) {
  const path = ApiReport.reportPath(entry)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, ApiReport.generate(entry))
  console.log(`wrote ${path}`)
}
