import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc, Schema } from "effect"
import { InputProblems } from "../src/index.js"

const problemsOf = <A, I>(schema: Schema.Schema<A, I>, input: unknown) => {
  const decoded = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(input)
  return Either.isLeft(decoded) ? InputProblems.fromParseError(decoded.left) : []
}

const name = fc.stringMatching(/^[a-z][a-z_]{2,15}$/)

describe("InputProblems", () => {
  it("names fields by path as JavaScript reads them", () => {
    expect(InputProblems.fieldOf([])).toBe("body")
    expect(InputProblems.fieldOf(["vpcs", 0, "cidr"])).toBe("vpcs[0].cidr")
    expect(InputProblems.fieldOf(["env_vars", "A"])).toBe("env_vars.A")
  })

  it.prop("a known name is its own closest; one edit away is still found", [
    fc.uniqueArray(name, { minLength: 1, maxLength: 12 }),
    fc.nat()
  ], ([known, n]) => {
    const target = known[n % known.length]!
    expect(InputProblems.closest(target, known)).toBe(target)
    const dropped = target.slice(0, -1)
    if (!known.includes(dropped)) expect(InputProblems.closest(dropped, known)).toBeDefined()
  })

  it("an abbreviation suggests the name it begins, over a name a few edits away", () => {
    expect(InputProblems.closest("proto", ["from", "to", "protocol", "port"])).toBe("protocol")
    expect(InputProblems.closest("port", ["from", "to", "protocol", "port"])).toBe("port")
    expect(InputProblems.closest("pod", ["port", "pod_id"])).toBe("pod_id")
    // Of the names it begins, the shortest: the least that was left unsaid.
    expect(InputProblems.closest("pro", ["protocol_type", "protocol"])).toBe("protocol")
  })

  it.prop("a name's start of three or more suggests a name it begins", [
    fc.uniqueArray(name, { minLength: 1, maxLength: 12 }),
    fc.nat(),
    fc.nat()
  ], ([known, n, cut]) => {
    const target = known[n % known.length]!
    const start = target.slice(0, 3 + (cut % (target.length - 2)))
    expect(InputProblems.closest(start, known)?.startsWith(start)).toBe(true)
  })

  it("an unknown field, an enum and a mistyped value, all at once and in words", () => {
    const Body = Schema.Struct({
      ports: Schema.optional(Schema.NullOr(Schema.String)),
      direction: Schema.Literal("ingress", "egress").annotations({ identifier: "Direction" }),
      name: Schema.String
    })
    expect(problemsOf(Body, { port: "80", direction: "in", ports: 80 })).toEqual([
      { field: "port", message: "unknown field \"port\"; did you mean \"ports\"?" },
      { field: "ports", message: "must be a string or null; got 80" },
      { field: "direction", message: "must be one of \"ingress\", \"egress\"; got \"in\"" },
      { field: "name", message: "is missing" }
    ])
    expect(problemsOf(Body, { direction: "ingress", name: "x", colour: 1 })).toEqual([
      { field: "colour", message: "unknown field \"colour\"; the fields here are \"ports\", \"direction\", \"name\"" }
    ])
  })

  it("one line names ten problems and counts the rest", () => {
    const problems = Array.from({ length: 12 }, (_, i) => ({ field: `f${i}`, message: "is missing" }))
    const line = InputProblems.summary(problems)
    expect(line.split("; ")).toHaveLength(11)
    expect(line.endsWith("; and 2 more")).toBe(true)
  })
})
