import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc, Schema, SchemaAST as AST } from "effect"
import { Api, InputProblems } from "../src/index.js"

const problemsOf = <A, I>(schema: Schema.Schema<A, I>, input: unknown) => {
  const decoded = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(input)
  return Either.isLeft(decoded) ? InputProblems.fromParseError(decoded.left) : []
}

const name = fc.stringMatching(/^[a-z][a-z_]{2,15}$/)

/** The schema library's own words, which name types and patterns rather than what to send. */
const SCHEMA_TEXT = /\bExpected\b|\bactual\b|Unable to decode|pattern|character\(s\)|DateTime|to be decoded|Universally/

/** Values a person might send for a parameter by mistake. */
const MISTAKES = ["abc", "", " ", "1.5", "-1", "0", "99999999999999999999", "yes", "TCP", "null", "x_y", "W/\"a\" b"]

/** A parameter's problems, as the server words them, when `value` is sent for it alone. */
const parameterProblems = (schema: Api.Parameters, name: string, value: string) => {
  const decoded = Schema.decodeUnknownEither(schema, { errors: "all" })({ [name]: value })
  return Either.isLeft(decoded) ? InputProblems.fromParameters(decoded.left).filter((p) => p.field === name) : []
}

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

  it("every parameter of the contract (path, query, header) refuses a value in the API's words, one problem each", () => {
    let refused = 0
    for (const endpoint of Api.endpoints) {
      for (const schema of [endpoint.pathSchema, endpoint.querySchema, endpoint.headersSchema]) {
        if (schema === undefined) continue
        for (const field of AST.getPropertySignatures(AST.encodedAST(schema.ast))) {
          for (const value of MISTAKES) {
            const problems = parameterProblems(schema, String(field.name), value)
            if (problems.length === 0) continue
            refused++
            const where = `${endpoint.endpoint} ${String(field.name)}=${JSON.stringify(value)}`
            expect(problems, where).toHaveLength(1)
            expect(problems[0]!.message, where).toMatch(/^must be .+; got /)
            expect(problems[0]!.message.endsWith(`; got ${JSON.stringify(value)}`), where).toBe(true)
            expect(problems[0]!.message, where).not.toMatch(SCHEMA_TEXT)
          }
        }
      }
    }
    expect(refused).toBeGreaterThan(500)
  })

  it("a number parameter says its bounds whatever was sent; a revision and a page token say what they are", () => {
    const vpcs = Api.endpoints.find((e) => e.endpoint === "vpcs.list")!.querySchema!
    for (const value of ["abc", "0", "1.5", "5000"]) {
      expect(parameterProblems(vpcs, "limit", value)).toEqual([
        { field: "limit", message: `must be an integer from 1 to 1000; got ${JSON.stringify(value)}` }
      ])
    }
    const watch = Api.endpoints.find((e) => e.endpoint === "changes.watch")!
    expect(parameterProblems(watch.querySchema!, "since", "abc")[0]!.message).toMatch(/^must be a revision/)
    expect(parameterProblems(watch.headersSchema!, "last-event-id", "abc")[0]!.message).toMatch(/^must be a revision/)
    expect(parameterProblems(vpcs, "page_token", "")).toEqual([
      { field: "page_token", message: "must be 1 to 1024 characters; got \"\"" }
    ])
  })

  it("one line names ten problems and counts the rest", () => {
    const problems = Array.from({ length: 12 }, (_, i) => ({ field: `f${i}`, message: "is missing" }))
    const line = InputProblems.summary(problems)
    expect(line.split("; ")).toHaveLength(11)
    expect(line.endsWith("; and 2 more")).toBe(true)
  })
})
