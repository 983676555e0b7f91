/**
 * What is wrong with a request's input, in words a person acts on: one problem per field,
 * every field at once, named by its path (`vpcs[0].cidr`). The server answers with these and
 * the client refuses a bad body with the very same words before sending it.
 *
 * Built from the schema's parse issue rather than its default formatting, which would say
 * `is unexpected, expected: "vpc_id" | ...` for a misspelt field, `Expected Direction` for an
 * enum, and list every member a union tried.
 */
import { ParseResult, Schema, SchemaAST as AST } from "effect"

/** One field's problem. `field` is a path into the input (`ports`, `subnets[2].cidr`), or `body`. */
export const Problem = Schema.Struct({
  field: Schema.String,
  message: Schema.String
}).annotations({ identifier: "FieldProblem" })
export interface Problem extends Schema.Schema.Type<typeof Problem> {}

type Path = ReadonlyArray<PropertyKey>

/** `vpcs[0].cidr`, as a JavaScript reader writes it. */
export const fieldOf = (path: Path): string =>
  path.length === 0
    ? "body"
    : path.reduce<string>(
      (text, key) => typeof key === "number" ? `${text}[${key}]` : text === "" ? String(key) : `${text}.${String(key)}`,
      ""
    )

/** Messages quote the values they refuse; a huge value must not come back whole. */
const MAX_MESSAGE = 300

const short = (message: string) =>
  message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE)}... (${message.length} characters)`

/** Edit distance (insertions, deletions, substitutions, adjacent swaps) between two names. */
const distance = (a: string, b: string): number => {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, rows[i - 2]![j - 2]! + 1)
      }
      rows[i]![j] = best
    }
  }
  return rows[a.length]![b.length]!
}

const normalized = (name: string) => name.toLowerCase().replace(/[-\s]/g, "_")

/**
 * The known name closest to a misspelt one, when it is close enough to be what was meant: the
 * shortest one it begins (`protocol` for `proto`, an abbreviation: a few edits from `port` too,
 * but not what was meant), else one a few edits away (`ports` for `port`).
 */
export const closest = (name: string, known: ReadonlyArray<string>): string | undefined => {
  const wanted = normalized(name)
  if (wanted.length >= 3) {
    const begun = known.filter((candidate) => normalized(candidate).startsWith(wanted))
    if (begun.length > 0) return begun.reduce((a, b) => (b.length < a.length ? b : a))
  }
  let best: { readonly name: string; readonly distance: number } | undefined
  for (const candidate of known) {
    const d = distance(wanted, normalized(candidate))
    if (best === undefined || d < best.distance) best = { name: candidate, distance: d }
  }
  return best !== undefined && best.distance <= Math.max(2, Math.floor(name.length / 3)) ? best.name : undefined
}

const quoted = (names: ReadonlyArray<string>) => names.map((n) => JSON.stringify(n)).join(", ")

const unknownField = (name: PropertyKey, known: ReadonlyArray<string>): string => {
  const suggestion = typeof name === "string" ? closest(name, known) : undefined
  return suggestion !== undefined
    ? `unknown field ${JSON.stringify(String(name))}; did you mean ${JSON.stringify(suggestion)}?`
    : `unknown field ${JSON.stringify(String(name))}; the fields here are ${quoted(known)}`
}

/** `unknown query parameter "dryrun"; did you mean "dry_run"?`, or the ones the endpoint takes. */
const unknownParameter = (name: string, known: ReadonlyArray<string>): string => {
  const suggestion = closest(name, known)
  return suggestion !== undefined
    ? `unknown query parameter ${JSON.stringify(name)}; did you mean ${JSON.stringify(suggestion)}?`
    : known.length === 0
    ? `unknown query parameter ${JSON.stringify(name)}; this endpoint takes no query parameters`
    : `unknown query parameter ${JSON.stringify(name)}; this endpoint takes ${quoted(known)}`
}

/**
 * The parameters of a query string no endpoint may be sent: one the endpoint does not take
 * (with the closest it does), and one given more than once (no parameter of the API is a list,
 * and reading the first or the last would be a guess). `given` is each name with how many
 * times it was sent.
 */
export const unknownParameters = (
  given: ReadonlyArray<readonly [name: string, times: number]>,
  known: ReadonlyArray<string>
): ReadonlyArray<Problem> =>
  given.flatMap(([name, times]): ReadonlyArray<Problem> =>
    !known.includes(name)
      ? [{ field: name, message: short(unknownParameter(name, known)) }]
      : times > 1
      ? [{ field: name, message: `given ${times} times; send it once` }]
      : []
  )

/** A value as a message quotes it: JSON where it can be. */
const shown = (value: unknown): string => {
  if (value === undefined) return "nothing"
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** What a member of a union accepts, as the sender writes it (`a string`, `null`, `"tcp"`). */
const accepts = (ast: AST.AST): string => {
  const encoded = AST.encodedAST(ast)
  switch (encoded._tag) {
    case "Literal":
      return encoded.literal === null ? "null" : JSON.stringify(encoded.literal)
    case "StringKeyword":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "true or false"
    case "UndefinedKeyword":
      return "left out"
    case "TupleType":
      return "an array"
    case "TypeLiteral":
      return "an object"
    default:
      return String(encoded)
  }
}

/**
 * The members of a union as the sender writes them, flattened: a union of unions is one list,
 * and so is a member whose wire form is a union (`"true" | "false"` for a boolean in a query).
 */
const membersOf = (ast: AST.Union): ReadonlyArray<AST.AST> =>
  ast.types.flatMap((member) => {
    const encoded = AST.encodedAST(member)
    return AST.isUnion(encoded) ? membersOf(encoded) : [member]
  })

/** A schema's description as a noun a message can follow `must be` with (`a VPC id (UUID)`). */
const describedAs = (ast: AST.AST): string | undefined => {
  const description = AST.getDescriptionAnnotation(ast)
  if (description._tag === "None") return undefined
  const text = description.value
  if (/^(a|an|one of) /i.test(text)) return text
  // A leading acronym keeps its case ("VPC id"); a word is lower-cased ("Tenant id").
  const noun = /^[A-Z][a-z]/.test(text) ? text[0]!.toLowerCase() + text.slice(1) : text
  return `${/^[aeiou]/i.test(noun) ? "an" : "a"} ${noun}`
}

/** A member that failed as a whole (it is another kind of value), rather than somewhere inside. */
const failedAsAWhole = (issue: ParseResult.ParseIssue): boolean =>
  issue._tag === "Type" ||
  (issue._tag === "Refinement" && issue.kind === "From" && failedAsAWhole(issue.issue)) ||
  (issue._tag === "Transformation" && issue.kind === "Encoded" && failedAsAWhole(issue.issue)) ||
  (issue._tag === "Composite" && AST.isUnion(issue.ast) && asArray(issue.issues).every(failedAsAWhole))

const asArray = <A>(items: A | ReadonlyArray<A>): ReadonlyArray<A> =>
  Array.isArray(items) ? items as ReadonlyArray<A> : [items as A]

const hasMessageAnnotation = (ast: AST.AST) => AST.getMessageAnnotation(ast)._tag === "Some"

/** The schema's own words for an issue (filters' messages, annotations, `is missing`). */
const formatted = (issue: ParseResult.ParseIssue, path: Path): Array<Problem> =>
  ParseResult.ArrayFormatter.formatIssueSync(issue).map((i) => ({
    field: fieldOf([...path, ...i.path]),
    message: short(i.message)
  }))

const collect = (issue: ParseResult.ParseIssue, path: Path, out: Array<Problem>): void => {
  switch (issue._tag) {
    case "Pointer":
      return collect(issue.issue, [...path, ...asArray(issue.path)], out)
    case "Composite": {
      if (hasMessageAnnotation(issue.ast)) {
        out.push(...formatted(issue, path))
        return
      }
      const issues = asArray(issue.issues)
      if (AST.isUnion(issue.ast)) {
        // Members that got further than their type say what is wrong; members of another
        // type (`null`, left out) only add noise beside them.
        const inside = issues.filter((i) => !failedAsAWhole(i))
        if (inside.length > 0) return inside.forEach((i) => collect(i, path, out))
        // "left out" is the optional field's own member: what was sent was not left out.
        const members = membersOf(issue.ast).filter((m) => !AST.isUndefinedKeyword(AST.encodedAST(m)))
        const allLiterals = members.every(AST.isLiteral)
        out.push({
          field: fieldOf(path),
          message: short(
            allLiterals
              ? `must be one of ${members.map(accepts).join(", ")}; got ${shown(issue.actual)}`
              : `must be ${members.map(accepts).join(" or ")}; got ${shown(issue.actual)}`
          )
        })
        return
      }
      const known = AST.isTypeLiteral(issue.ast) ? issue.ast.propertySignatures.map((p) => String(p.name)) : []
      for (const i of issues) {
        if (i._tag === "Pointer" && i.issue._tag === "Unexpected" && AST.isTypeLiteral(issue.ast)) {
          const key = asArray(i.path)[0]!
          out.push({ field: fieldOf([...path, key]), message: unknownField(key, known) })
        } else {
          collect(i, path, out)
        }
      }
      return
    }
    case "Refinement": {
      if (hasMessageAnnotation(issue.ast)) {
        out.push(...formatted(issue, path))
        return
      }
      if (issue.kind === "From") return collect(issue.issue, path, out)
      // A filter without words of its own ("Expected VPC id (UUID), actual ..."): its description.
      const worded = issue.issue._tag === "Type" && issue.issue.message !== undefined
      const described = worded ? undefined : describedAs(issue.ast)
      out.push(
        ...(described === undefined
          ? formatted(issue, path)
          : [{ field: fieldOf(path), message: short(`must be ${described}; got ${shown(issue.actual)}`) }])
      )
      return
    }
    case "Transformation":
      if (issue.kind !== "Transformation" && !hasMessageAnnotation(issue.ast)) return collect(issue.issue, path, out)
      out.push(...formatted(issue, path))
      return
    case "Type":
      if (!hasMessageAnnotation(issue.ast) && issue.message === undefined) {
        out.push({ field: fieldOf(path), message: short(`must be ${accepts(issue.ast)}; got ${shown(issue.actual)}`) })
        return
      }
      out.push(...formatted(issue, path))
      return
    case "Unexpected":
    case "Missing":
    case "Forbidden":
      out.push(...formatted(issue, path))
  }
}

/** Every problem an issue holds, one per field and message, in the order the input has them. */
export const fromIssue = (issue: ParseResult.ParseIssue): ReadonlyArray<Problem> => {
  const out: Array<Problem> = []
  collect(issue, [], out)
  const seen = new Set<string>()
  return out.filter((p) => {
    const key = `${p.field}\u0000${p.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

export const fromParseError = (error: ParseResult.ParseError): ReadonlyArray<Problem> => fromIssue(error.issue)

/** Each parameter's own issue: the pointers of its struct, through what wraps them (a default's transformation). */
const byParameter = (
  issue: ParseResult.ParseIssue
): ReadonlyArray<readonly [name: PropertyKey, issue: ParseResult.ParseIssue]> => {
  switch (issue._tag) {
    case "Pointer":
      return [[asArray(issue.path)[0]!, issue.issue]]
    case "Composite":
      return asArray(issue.issues).flatMap(byParameter)
    case "Refinement":
    case "Transformation":
      return byParameter(issue.issue)
    default:
      return []
  }
}

/** What a check of ours said of a value it refused (`must be an integer from 1 to 1000`), when one did. */
const ownWords = (issue: ParseResult.ParseIssue): string | undefined => {
  switch (issue._tag) {
    case "Refinement":
      return issue.kind === "Predicate" && issue.issue._tag === "Type" && issue.issue.message !== undefined
        ? issue.issue.message
        : ownWords(issue.issue)
    case "Transformation":
      return ownWords(issue.issue)
    case "Composite":
      return asArray(issue.issues).map(ownWords).find((words) => words !== undefined)
    default:
      return undefined
  }
}

/**
 * The first description met from the outside in: what a schema says it is (`an integer from 1
 * to 1000`) before what it is made of (`an integer`, a string to parse).
 */
const describedWithin = (ast: AST.AST): string | undefined =>
  describedAs(ast) ??
    (AST.isTransformation(ast)
      ? describedWithin(ast.to) ?? describedWithin(ast.from)
      : AST.isRefinement(ast)
      ? describedWithin(ast.from)
      : AST.isSuspend(ast)
      ? describedWithin(ast.f())
      : undefined)

/** What a parameter must be: its values, for an enum (`true` and `false` for a boolean), or what it is. */
const expected = (ast: AST.AST): string => {
  const members = (AST.isUnion(ast) ? membersOf(ast) : [ast]).filter((m) => !AST.isUndefinedKeyword(AST.encodedAST(m)))
  if (members.length > 0 && members.every(AST.isLiteral)) return `one of ${members.map(accepts).join(", ")}`
  return members.map((m) => describedWithin(m) ?? accepts(m)).join(" or ")
}

/**
 * What is wrong with a request's parameters (its path's, query's or headers': texts on the
 * wire), one problem per parameter, in the API's words: what it must be and what was sent
 * (`must be an integer from 1 to 1000; got "abc"`), said by its own check or by its schema's
 * description of itself, never by how the schema library failed to read it (`Unable to decode
 * "abc" into a number`, `a string matching the pattern ...`). A required one left out `is missing`.
 */
export const fromParameters = (error: ParseResult.ParseError): ReadonlyArray<Problem> =>
  byParameter(error.issue).flatMap(([name, issue]): ReadonlyArray<Problem> => {
    switch (issue._tag) {
      case "Type":
      case "Refinement":
      case "Transformation":
      case "Composite":
        return [{
          field: fieldOf([name]),
          message: short(`${ownWords(issue) ?? `must be ${expected(issue.ast)}`}; got ${shown(issue.actual)}`)
        }]
      default: {
        const out: Array<Problem> = []
        collect(issue, [name], out)
        return out
      }
    }
  })

/** Problems of headers named as HTTP writes a header (`If-Match`; the platform has them in lower case). */
export const ofHeaders = (problems: ReadonlyArray<Problem>): ReadonlyArray<Problem> =>
  problems.map((p) => ({ ...p, field: p.field.replace(/(?:^|-)[a-z]/g, (start) => start.toUpperCase()) }))

/** Problems from issues another formatter already worded (the platform's, for paths and queries). */
export const fromFormatted = (
  issues: ReadonlyArray<{ readonly path: Path; readonly message: string }>
): ReadonlyArray<Problem> => issues.map((issue) => ({ field: fieldOf(issue.path), message: short(issue.message) }))

/** How many problems one line names; the structured list has them all. */
const MAX_IN_SUMMARY = 10

/** The problems in one line: `ports: ...; direction: ...`. */
export const summary = (problems: ReadonlyArray<Problem>): string => {
  const shownProblems = problems.slice(0, MAX_IN_SUMMARY).map((p) => `${p.field}: ${p.message}`)
  const more = problems.length - MAX_IN_SUMMARY
  return more > 0 ? `${shownProblems.join("; ")}; and ${more} more` : shownProblems.join("; ")
}
