/**
 * Other formats of three answers, for the tools network teams already use: a VPC's rules as
 * CSV (`GET /security-rules?vpc_id=`), reachability as CSV or Graphviz DOT
 * (`GET /vpcs/{id}/reachability`), the analysis as SARIF 2.1.0 (`GET /security-rules/analysis`),
 * so code-scanning tools show shadowed, redundant and conflicting rules as findings. Asked for
 * with `Accept`; JSON stays the default. Renderers are pure functions of the JSON answer's
 * values; the `Formats` an endpoint declares (its annotation) are what the OpenAPI document
 * declares and the server serves.
 */
import { Context, Either } from "effect"
import type { ReachabilityEndpoint, ReachabilityMatrix } from "../domain/ReachabilityMatrix.js"
import type { RuleAnalysis, RuleList } from "../domain/SecurityRule.js"
import * as Declaration from "../rules/Declaration.js"
import { idOf } from "../rules/Reachability.js"
import * as Csv from "./Csv.js"

export const CSV = "text/csv"
export const DOT = "text/vnd.graphviz"
export const SARIF = "application/sarif+json"

export type Format = typeof CSV | typeof DOT | typeof SARIF

/** A format an endpoint answers besides JSON, with what it holds. */
export interface Offered {
  readonly type: Format
  readonly description: string
}

/** The formats an endpoint answers besides JSON, declared on it as an annotation (`Api.Endpoint.formats`). */
export class Formats extends Context.Tag("@tenet/core/api/Exports/Formats")<Formats, ReadonlyArray<Offered>>() {}

/** `GET /security-rules?vpc_id=`'s. */
export const RULE_LIST: ReadonlyArray<Offered> = [{
  type: CSV,
  description: "The rules in evaluation order, one per row"
}]

/** `GET /vpcs/{id}/reachability`'s. */
export const REACHABILITY: ReadonlyArray<Offered> = [
  {
    type: CSV,
    description: "One row per pair: from, to, the tcp/udp ports every flow and some flows get through on, icmp's reach"
  },
  { type: DOT, description: "A Graphviz digraph: an edge per pair with anything reachable, labelled with it" }
]

/** `GET /security-rules/analysis`'s. */
export const ANALYSIS: ReadonlyArray<Offered> = [{ type: SARIF, description: "SARIF 2.1.0: one result per finding" }]

/**
 * The format an `Accept` header asks for among `offered`, or null for JSON: the first media
 * range listed (by quality, then order) that is one of them, unless JSON or anything comes first.
 */
export const negotiate = (accept: string | undefined, offered: ReadonlyArray<Format>): Format | null => {
  if (accept === undefined || offered.length === 0) return null
  const ranges = accept.split(",").map((part, order) => {
    const [type = "", ...params] = part.split(";").map((p) => p.trim().toLowerCase())
    const q = params.find((p) => p.startsWith("q="))
    return { type, quality: q === undefined ? 1 : Number(q.slice(2)), order }
  }).filter((r) => r.quality > 0).sort((a, b) => b.quality - a.quality || a.order - b.order)
  for (const range of ranges) {
    const found = offered.find((type) => type === range.type)
    if (found !== undefined) return found
    if (range.type === "application/json" || range.type === "*/*" || range.type === "application/*") return null
  }
  return null
}

const RULE_COLUMNS = ["id", ...Declaration.FIELDS, "status"] as const

/** A VPC's rules as CSV, in evaluation order (`target_pod_ids` space-separated). */
export const rulesCsv = (list: RuleList): string =>
  Csv.write(RULE_COLUMNS, list.rules.map((rule) => RULE_COLUMNS.map((column) => rule[column])))

/** How a column of `rulesCsv` reads back into a declared field: most are text, these are not. */
const RULE_CELLS: Partial<Record<typeof RULE_COLUMNS[number], (cell: string) => unknown>> = {
  priority: (cell) => /^\d+$/.test(cell) ? Number(cell) : cell,
  enabled: (cell) => cell === "true" ? true : cell === "false" ? false : cell,
  target_pod_ids: (cell) => cell.split(" ").filter((id) => id !== "")
}

/**
 * `rulesCsv` read back as the items of a declaration (`PUT /vpcs/{id}/security-rules`): each
 * row's rule by its `id`, with every declared field it has a cell for; an empty cell is a field
 * left out, `status` (what the platform reports) is not declared. The items are checked by the
 * declaration's own schema, as any other body is; here only the shape of the file is.
 */
export const rulesFromCsv = (text: string): Either.Either<Array<Record<string, unknown>>, string> =>
  Either.flatMap(Csv.read(text), ([header, ...rows]) => {
    if (header === undefined) return Either.left("the file is empty: expected a header row")
    const unknown = header.filter((column) => !(RULE_COLUMNS as ReadonlyArray<string>).includes(column))
    if (unknown.length > 0) return Either.left(`unknown column ${unknown.map((c) => `"${c}"`).join(", ")}`)
    if (!header.includes("name")) return Either.left("the header names no \"name\" column")
    const ragged = rows.findIndex((row) => row.length !== header.length)
    if (ragged >= 0) {
      return Either.left(`row ${ragged + 2} has ${rows[ragged]!.length} cells; the header has ${header.length}`)
    }
    return Either.right(rows.map((row) =>
      Object.fromEntries(
        header.flatMap((column, i) => {
          const cell = row[i]!
          if (column === "status" || cell === "") return []
          const read = RULE_CELLS[column as typeof RULE_COLUMNS[number]]
          return [[column, read === undefined ? cell : read(cell)]]
        })
      )
    ))
  })

const nameOf = (e: ReachabilityEndpoint) => e.kind === "internet" ? "internet" : e.name

/**
 * Reachability as CSV: one row per pair, each protocol's ports every flow gets through on and
 * those some do (`partial`), and icmp's reach (`allowed`, `partial` or `denied`).
 */
export const reachabilityCsv = (matrix: ReachabilityMatrix): string =>
  Csv.write(
    [
      "from_kind",
      "from_id",
      "from_name",
      "to_kind",
      "to_id",
      "to_name",
      "tcp",
      "tcp_partial",
      "udp",
      "udp_partial",
      "icmp"
    ],
    matrix.pairs.map((p) => [
      p.from.kind,
      idOf(p.from),
      nameOf(p.from),
      p.to.kind,
      idOf(p.to),
      nameOf(p.to),
      p.tcp.allowed,
      p.tcp.partial,
      p.udp.allowed,
      p.udp.partial,
      p.icmp.reach
    ])
  )

/** A DOT identifier, quoted; a line break is DOT's `\\n`. */
const quoted = (text: string) => `"${text.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")}"`

const SHAPES: Record<ReachabilityEndpoint["kind"], string> = {
  internet: "doubleoctagon",
  vpc: "box3d",
  subnet: "box",
  pod: "ellipse"
}

/**
 * Reachability as a Graphviz digraph: a node per endpoint, an edge per pair with anything
 * reachable, labelled with it; what only some flows get through on is marked `(some)` and the
 * edge is dashed.
 */
export const reachabilityDot = (matrix: ReachabilityMatrix): string => {
  const nodes = new Map<string, ReachabilityEndpoint>()
  for (const p of matrix.pairs) {
    nodes.set(`${p.from.kind}:${idOf(p.from)}`, p.from)
    nodes.set(`${p.to.kind}:${idOf(p.to)}`, p.to)
  }
  const lines = [`digraph ${quoted(`vpc ${matrix.vpc_id}`)} {`, "  rankdir=LR;"]
  for (const [key, e] of nodes) {
    lines.push(
      `  ${quoted(key)} [label=${quoted(`${e.kind === "internet" ? "" : `${e.kind} `}${nameOf(e)}`)}, shape=${
        SHAPES[e.kind]
      }];`
    )
  }
  for (const p of matrix.pairs) {
    const label = [
      ...(p.tcp.allowed === "" ? [] : [`tcp ${p.tcp.allowed}`]),
      ...(p.tcp.partial === "" ? [] : [`tcp ${p.tcp.partial} (some)`]),
      ...(p.udp.allowed === "" ? [] : [`udp ${p.udp.allowed}`]),
      ...(p.udp.partial === "" ? [] : [`udp ${p.udp.partial} (some)`]),
      ...(p.icmp.reach === "allowed" ? ["icmp"] : p.icmp.reach === "partial" ? ["icmp (some)"] : [])
    ]
    if (label.length === 0) continue
    const some = p.tcp.partial !== "" || p.udp.partial !== "" || p.icmp.reach === "partial"
    lines.push(
      `  ${quoted(`${p.from.kind}:${idOf(p.from)}`)} -> ${quoted(`${p.to.kind}:${idOf(p.to)}`)} [label=${
        quoted(label.join("\n"))
      }${some ? ", style=dashed" : ""}];`
    )
  }
  lines.push("}")
  return lines.join("\n") + "\n"
}

const FINDING_RULES = [
  {
    id: "shadowed",
    text: "The rule never matches: earlier rules (or the core network) cover all of its traffic",
    level: "warning"
  },
  { id: "redundant", text: "Removing the rule changes no verdict", level: "note" },
  {
    id: "conflict",
    text: "An earlier rule with the opposite action takes part of the rule's traffic",
    level: "warning"
  }
] as const

/**
 * The analysis as a SARIF 2.1.0 log: one result per finding, located at the rule (a logical
 * location, and an artifact URI naming it under the API, so results keep their identity across
 * runs). `rules` names the rules.
 */
export const analysisSarif = (analysis: RuleAnalysis, rules: RuleList, version: string): string => {
  const names = new Map(rules.rules.map((r) => [r.id as string, r.name]))
  const levels = new Map(FINDING_RULES.map((r) => [r.id as string, r.level]))
  return JSON.stringify(
    {
      $schema: "https://json.schemastore.org/sarif-2.1.0.json",
      version: "2.1.0",
      runs: [{
        tool: {
          driver: {
            name: "Tenet",
            version,
            rules: FINDING_RULES.map((r) => ({
              id: r.id,
              name: r.id,
              shortDescription: { text: r.text },
              defaultConfiguration: { level: r.level }
            }))
          }
        },
        results: analysis.findings.map((f) => ({
          ruleId: f.kind,
          level: levels.get(f.kind),
          message: { text: `'${names.get(f.rule_id) ?? f.rule_id}' ${f.message}` },
          locations: [{
            physicalLocation: {
              artifactLocation: { uri: `vpcs/${analysis.vpc_id}/security-rules/${f.rule_id}` }
            },
            logicalLocations: [{
              name: names.get(f.rule_id) ?? f.rule_id,
              fullyQualifiedName: `vpcs/${analysis.vpc_id}/security-rules/${f.rule_id}`,
              kind: "resource"
            }]
          }],
          relatedLocations: f.related_rule_ids.map((id, i) => ({
            id: i + 1,
            message: { text: names.get(id) ?? id },
            logicalLocations: [{
              name: names.get(id) ?? id,
              fullyQualifiedName: `vpcs/${analysis.vpc_id}/security-rules/${id}`
            }]
          })),
          partialFingerprints: { "tenetFinding/v1": `${f.kind}:${f.rule_id}` }
        }))
      }]
    },
    null,
    2
  )
}
