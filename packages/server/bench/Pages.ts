/**
 * Pages at scale, on PostgreSQL (`tenet-server` in a process of its own, as in `Load.ts`):
 * 10,000 tenants, then `GET /tenants?limit=100` for the first page and for a page half way
 * (its token reached by following the `Link` headers), against the whole list (target: a page
 * under 20 ms at p50). The tenants are inserted with one SQL statement: made through the API,
 * each would pay a production-cost password hash.
 *
 * Runs by itself too: `node --conditions=@tenet/source --import tsx packages/server/bench/Pages.ts`.
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as Load from "./Load.js"
import { timed } from "./Scale.js"

export interface PagesReport {
  readonly tenants: number
  readonly rows: ReadonlyArray<{ readonly name: string; readonly p50: number; readonly p99: number }>
}

const nextOf = (link: string | null) => link === null ? undefined : /<([^>]+)>;\s*rel="next"/.exec(link)?.[1]

export const runPages = async (tenants = 10_000): Promise<PagesReport | undefined> => {
  if (Load.databaseServer === undefined) return undefined
  const tenet = await Load.startTenet("postgres")
  try {
    execFileSync("psql", [
      tenet.databaseUrl!,
      "-qc",
      `
      INSERT INTO tenants (id, name, description, created_at, password_hash, token_hash, token_ciphertext)
      SELECT gen_random_uuid(), 'bulk-' || i, NULL, now() - make_interval(secs => ${tenants} - i), 'unused',
        'unused-' || i, 'unused'
      FROM generate_series(1, ${tenants}) AS i`
    ])
    const admin = {
      "x-admin-token":
        (await Load.must(tenet.port, "POST", "/admin/login", {}, { username: "admin", password: Load.PASSWORD }))
          .body.api_token as string
    }
    const get = (path: string) => async () => {
      const response = await fetch(`http://127.0.0.1:${tenet.port}${path}`, { headers: admin })
      if (response.status !== 200) throw new Error(`GET ${path}: ${response.status}`)
      await response.arrayBuffer()
      return response.headers.get("link")
    }
    let middle = "/tenants?limit=100"
    for (let page = 0; page < tenants / 200; page++) middle = nextOf(await get(middle)())!
    return {
      tenants,
      rows: [
        { name: "GET /tenants?limit=100 (the first page)", ...(await timed(200, get("/tenants?limit=100"))) },
        { name: "GET /tenants?limit=100&page_token= (page 51)", ...(await timed(200, get(middle))) },
        { name: `GET /tenants (all ${tenants + 0} of them)`, ...(await timed(20, get("/tenants"))) }
      ]
    }
  } finally {
    await tenet.stop()
  }
}

export const toMarkdown = (report: PagesReport | undefined) =>
  report === undefined
    ? "No PostgreSQL server was named (TENET_BENCH_DATABASE_URL): not measured."
    : [
      `${report.tenants.toLocaleString("en-US")} tenants on PostgreSQL, one request at a time (target: a page of 100 ` +
      "under 20 ms at p50):",
      "",
      "| request | p50 (ms) | p99 (ms) |",
      "|---|---:|---:|",
      ...report.rows.map((r) => `| ${r.name} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |`)
    ].join("\n")

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(toMarkdown(await runPages()))
}
