/**
 * What no request body may hold, whatever its endpoint: nesting deeper than `MAX_DEPTH`, text
 * that cannot be stored as sent, or a key named `__proto__`. Every payload schema of the
 * contract checks this first (`Payloads`), before the body's own schema reads a field of it:
 * the platform decodes bodies with these schemas, and describing a failure inside a body nested
 * thousands deep would exhaust the stack.
 */
import { ParseResult, Schema, SchemaAST as AST } from "effect"

/** Far deeper than any body of the API. */
export const MAX_DEPTH = 32

/** A UTF-16 surrogate without its pair: not a character, and not storable as sent. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** What no stored text may hold, whatever the store: PostgreSQL refuses U+0000 and replaces lone surrogates. */
const textProblem = (text: string): string | null =>
  text.includes("\u0000")
    ? "must not contain the NUL character (U+0000)"
    : LONE_SURROGATE.test(text)
    ? "must not contain a lone UTF-16 surrogate (text that is not Unicode)"
    : null

interface FieldPath {
  readonly key: string | number
  readonly parent: FieldPath | null
}

const keysOf = (path: FieldPath | null): Array<string | number> => {
  const keys: Array<string | number> = []
  for (let p = path; p !== null; p = p.parent) keys.unshift(p.key)
  return keys
}

export interface Problem {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

/**
 * The first field no endpoint may accept, and why. A loop over shared path links, not
 * recursion: a body may nest as deep as its size allows. A key named `__proto__` is refused
 * because an object built from the body would take it as its prototype and silently lose it.
 */
export const problemOf = (body: unknown): Problem | null => {
  const pending: Array<readonly [unknown, FieldPath | null, number]> = [[body, null, 0]]
  while (pending.length > 0) {
    const [value, path, depth] = pending.pop()!
    if (typeof value === "string") {
      const message = textProblem(value)
      if (message !== null) return { path: keysOf(path), message }
    }
    if (typeof value === "object" && value !== null) {
      if (depth >= MAX_DEPTH) return { path: keysOf(path), message: `nests deeper than ${MAX_DEPTH} levels` }
      for (const [name, item] of Object.entries(value)) {
        const message = name === "__proto__" ? "'__proto__' is not accepted as a name" : textProblem(name)
        const key = Array.isArray(value) ? Number(name) : name
        if (message !== null) return { path: keysOf({ key, parent: path }), message }
        pending.push([item, { key, parent: path }, depth + 1])
      }
    }
  }
  return null
}

/**
 * `schema`, checked for `problemOf` before it decodes anything. Its JSON Schema (and so the
 * OpenAPI document) is `schema`'s own: the check is a declaration with `schema` as its surrogate.
 */
export const guarded = <A, I>(schema: Schema.Schema<A, I>): Schema.Schema<A, I> =>
  Schema.declare([schema], {
    decode: (inner) => {
      const decodeInner = ParseResult.decodeUnknown(inner)
      return (input, options, ast) => {
        const problem = problemOf(input)
        if (problem === null) return decodeInner(input, options)
        const refused = new ParseResult.Type(ast, input, problem.message)
        const [first, ...rest] = problem.path
        return ParseResult.fail(
          first === undefined ? refused : new ParseResult.Pointer([first, ...rest], input, refused)
        )
      }
    },
    encode: (inner) => ParseResult.encodeUnknown(inner)
  }).annotations({ [AST.SurrogateAnnotationId]: schema.ast })
