/**
 * The size of the server's request path around the framework (issue 34's measure): the modules
 * a request passes through between the socket and the handler, and the Node listener. Lines as
 * `wc -l` counts them, and without blank and comment lines.
 */
import { readFileSync } from "node:fs"

const MODULES = ["RequestContext", "Refusals", "Endpoints", "ResponseJson", "Server"] as const

/** Before issue 34: Routes, RequestGuard, ResponseEncoder, RequestContext and Server, 1,123 lines (823 of code). */
const BEFORE = { lines: 1123, code: 823 }

const count = (module: string) => {
  const lines = readFileSync(new URL(`../src/${module}.ts`, import.meta.url), "utf8").replace(/\n$/, "").split("\n")
  const code = lines.filter((l) => l.trim() !== "" && !/^\s*(\*|\/\*\*|\/\/)/.test(l))
  return { module, lines: lines.length, code: code.length }
}

export const toMarkdown = () => {
  const rows = MODULES.map(count)
  const total = rows.reduce((t, r) => ({ lines: t.lines + r.lines, code: t.code + r.code }), { lines: 0, code: 0 })
  return [
    "| module | lines | of which code |",
    "|---|---:|---:|",
    ...rows.map((r) => `| \`server/src/${r.module}.ts\` | ${r.lines} | ${r.code} |`),
    `| all | ${total.lines} | ${total.code} |`,
    `| before (Routes, RequestGuard, ResponseEncoder, RequestContext, Server) | ${BEFORE.lines} | ${BEFORE.code} |`,
    "",
    `Target: at most half of before (${Math.floor(BEFORE.lines / 2)} lines); measured ${total.lines} (${
      Math.round(100 * total.lines / BEFORE.lines)
    }% of before).`
  ].join("\n")
}
