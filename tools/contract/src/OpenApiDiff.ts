/**
 * What changed between two OpenAPI 3.1 documents, and what of it breaks a caller.
 *
 * The rules are Stripe's and Kubernetes' (additive by default) read the way oasdiff classifies
 * them, with the direction of each schema in mind: what a caller sends (parameters, request
 * bodies) may only widen; what it receives (responses) may only gain optional things.
 * - breaking: a removed operation, parameter, field, enum value, status or media type; a
 *   narrowed input (a new required input, a tighter bound, a changed pattern or type); an
 *   output that may now be missing, null or of another type.
 * - warning: what a careful client copes with but should hear of: a new enum value or a new
 *   named variant in an answer, a new status an operation may answer.
 * - info: additions and widenings.
 */

export type Severity = "breaking" | "warning" | "info"

export interface Change {
  readonly severity: Severity
  /** Where, e.g. `GET /vpcs query limit` or `POST /vpcs 201 .etag`. */
  readonly at: string
  readonly what: string
}

type Json = Record<string, unknown>
type Direction = "input" | "output"

interface Document {
  readonly paths?: Record<string, Record<string, unknown>>
  readonly components?: { readonly schemas?: Record<string, unknown> }
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const refName = (ref: string): string => ref.slice(ref.lastIndexOf("/") + 1)

/** A schema with its `$ref`s followed (a ref that leads nowhere is an empty schema). */
const deref = (doc: Document, schema: unknown, seen: ReadonlySet<string> = new Set()): Json => {
  if (!isObject(schema)) return {}
  if (typeof schema.$ref !== "string" || seen.has(schema.$ref)) return schema
  const target = doc.components?.schemas?.[refName(schema.$ref)]
  return deref(doc, target, new Set([...seen, schema.$ref]))
}

/** One alternative of a schema: a union's members, each named by what it is. */
interface Alternative {
  readonly key: string
  readonly schema: unknown
}

const typesOf = (schema: Json): ReadonlyArray<string> =>
  Array.isArray(schema.type) ? schema.type.map(String) : typeof schema.type === "string" ? [schema.type] : []

/**
 * A schema's alternatives: a union is its members (flattened), a schema of several types is one
 * alternative per type, an `enum` is one alternative (its values are compared as values).
 */
const alternatives = (doc: Document, schema: unknown): ReadonlyArray<Alternative> => {
  if (!isObject(schema)) return [{ key: "any", schema: {} }]
  const union = schema.anyOf ?? schema.oneOf
  if (Array.isArray(union)) return union.flatMap((member) => alternatives(doc, member))
  if (typeof schema.$ref === "string") return [{ key: `ref ${refName(schema.$ref)}`, schema }]
  if (Array.isArray(schema.enum)) {
    const nulls = schema.enum.includes(null) ? [{ key: "type null", schema: { type: "null" } }] : []
    return [{ key: "enum", schema: { ...schema, enum: schema.enum.filter((v) => v !== null) } }, ...nulls]
  }
  if ("const" in schema) return [{ key: "enum", schema: { enum: [schema.const] } }]
  const types = typesOf(schema)
  if (types.length === 0) return [{ key: "any", schema }]
  return types.map((type) => ({
    key: `type ${type}${type === "object" ? tagOf(schema) : ""}`,
    schema: { ...schema, type }
  }))
}

/**
 * The tag of a member of a tagged union (`kind: "pod"`), which tells it apart from its
 * siblings: a required property that can hold one value only.
 */
const tagOf = (schema: Json): string => {
  const properties = isObject(schema.properties) ? schema.properties : {}
  const required = Array.isArray(schema.required) ? schema.required.map(String) : []
  for (const name of required) {
    const property = properties[name]
    if (isObject(property) && Array.isArray(property.enum) && property.enum.length === 1) {
      return ` ${name}=${show(property.enum[0])}`
    }
  }
  return ""
}

/** Whether an alternative of `before` is still there in `after`, read in a direction. */
const counterpart = (
  before: Alternative,
  after: ReadonlyArray<Alternative>,
  direction: Direction,
  siblings: ReadonlyArray<Alternative>
): Alternative | undefined => {
  const same = after.find((a) => a.key === before.key)
  if (same !== undefined) return same
  // An input that took integers still takes them as numbers; an answer that was a number may
  // now be an integer.
  const wider = direction === "input" ? ["type integer", "type number"] : ["type number", "type integer"]
  if (before.key === wider[0]) return after.find((a) => a.key === wider[1])
  if (before.key !== "any" && after.some((a) => a.key === "any")) return after.find((a) => a.key === "any")
  // An object is the same answer whether it is named or written in place, or renamed: the
  // wire has no names. When one object on each side is left without its like, they are
  // compared field by field.
  const isObjectLike = (a: Alternative) => a.key.startsWith("type object") || a.key.startsWith("ref ")
  const unmatched = (list: ReadonlyArray<Alternative>, other: ReadonlyArray<Alternative>) =>
    list.filter((a) => isObjectLike(a) && !other.some((o) => o.key === a.key))
  const lostObjects = unmatched(siblings, after)
  const newObjects = unmatched(after, siblings)
  return lostObjects.length === 1 && lostObjects[0] === before && newObjects.length === 1 ? newObjects[0] : undefined
}

const show = (value: unknown): string => JSON.stringify(value)

interface Context {
  readonly before: Document
  readonly after: Document
  readonly changes: Array<Change>
  /** Pairs of named schemas already being compared (schemas can be recursive). */
  readonly comparing: Set<string>
}

const report = (ctx: Context, severity: Severity, at: string, what: string) => ctx.changes.push({ severity, at, what })

/**
 * A bound that narrows inputs when it moves one way and widens answers the other way. A bound
 * not given is the loosest: no minimum is -∞ (0 for a length or a count), no maximum +∞.
 */
const compareBound = (
  ctx: Context,
  at: string,
  direction: Direction,
  name: string,
  before: unknown,
  after: unknown,
  lower: boolean
) => {
  const loosest = lower ? (name.endsWith("Length") || name.endsWith("Items") ? 0 : -Infinity) : Infinity
  const b = typeof before === "number" ? before : loosest
  const a = typeof after === "number" ? after : loosest
  if (a === b) return
  const tighter = lower ? a > b : a < b
  const severity: Severity = direction === "input"
    ? tighter ? "breaking" : "info"
    : tighter
    ? "info"
    : "warning"
  report(
    ctx,
    severity,
    at,
    `${name} ${typeof before === "number" ? b : "none"} → ${typeof after === "number" ? a : "none"}`
  )
}

const compareEnum = (ctx: Context, at: string, direction: Direction, before: Json, after: Json) => {
  const b = (before.enum as ReadonlyArray<unknown>).map(show)
  const a = Array.isArray(after.enum) ? after.enum.map(show) : undefined
  if (a === undefined) return
  const removed = b.filter((v) => !a.includes(v))
  const added = a.filter((v) => !b.includes(v))
  if (removed.length > 0) {
    report(
      ctx,
      direction === "input" ? "breaking" : "info",
      at,
      `no longer ${direction === "input" ? "accepts" : "answers"} ${removed.join(", ")}`
    )
  }
  if (added.length > 0) {
    report(
      ctx,
      direction === "input" ? "info" : "warning",
      at,
      `now ${direction === "input" ? "accepts" : "may answer"} ${added.join(", ")}`
    )
  }
}

const compareObject = (ctx: Context, at: string, direction: Direction, before: Json, after: Json) => {
  const bProps = isObject(before.properties) ? before.properties : {}
  const aProps = isObject(after.properties) ? after.properties : {}
  const bRequired = new Set(Array.isArray(before.required) ? before.required.map(String) : [])
  const aRequired = new Set(Array.isArray(after.required) ? after.required.map(String) : [])
  for (const [name, schema] of Object.entries(bProps)) {
    const field = `${at}.${name}`
    if (!(name in aProps)) {
      report(
        ctx,
        "breaking",
        field,
        direction === "input" ? "field removed: sending it is no longer understood" : "field removed"
      )
      continue
    }
    if (direction === "input" && !bRequired.has(name) && aRequired.has(name)) {
      report(ctx, "breaking", field, "field now required")
    }
    if (direction === "output" && bRequired.has(name) && !aRequired.has(name)) {
      report(ctx, "breaking", field, "field may now be missing")
    }
    compareSchema(ctx, field, direction, schema, aProps[name])
  }
  for (const name of Object.keys(aProps)) {
    if (name in bProps) continue
    const required = direction === "input" && aRequired.has(name)
    report(ctx, required ? "breaking" : "info", `${at}.${name}`, required ? "new required field" : "new field")
  }
  const bExtra = before.additionalProperties
  const aExtra = after.additionalProperties
  if (isObject(bExtra) && isObject(aExtra)) compareSchema(ctx, `${at}[*]`, direction, bExtra, aExtra)
  else if (direction === "input" && bExtra !== false && aExtra === false && Object.keys(bProps).length === 0) {
    report(ctx, "breaking", at, "no longer accepts other fields")
  }
}

const compareAlternative = (ctx: Context, at: string, direction: Direction, before: Json, after: Json) => {
  if (Array.isArray(before.enum)) return compareEnum(ctx, at, direction, before, after)
  compareBound(ctx, at, direction, "minimum", before.minimum, after.minimum, true)
  compareBound(ctx, at, direction, "maximum", before.maximum, after.maximum, false)
  compareBound(ctx, at, direction, "exclusiveMinimum", before.exclusiveMinimum, after.exclusiveMinimum, true)
  compareBound(ctx, at, direction, "exclusiveMaximum", before.exclusiveMaximum, after.exclusiveMaximum, false)
  compareBound(ctx, at, direction, "minLength", before.minLength, after.minLength, true)
  compareBound(ctx, at, direction, "maxLength", before.maxLength, after.maxLength, false)
  compareBound(ctx, at, direction, "minItems", before.minItems, after.minItems, true)
  compareBound(ctx, at, direction, "maxItems", before.maxItems, after.maxItems, false)
  for (const keyword of ["pattern", "format"] as const) {
    if (before[keyword] !== after[keyword]) {
      report(
        ctx,
        direction === "input" && after[keyword] !== undefined ? "breaking" : "info",
        at,
        `${keyword} ${show(before[keyword] ?? null)} → ${show(after[keyword] ?? null)}`
      )
    }
  }
  if (before.items !== undefined || after.items !== undefined) {
    compareSchema(ctx, `${at}[]`, direction, before.items, after.items)
  }
  if (isObject(before.properties) || isObject(after.properties) || isObject(before.additionalProperties)) {
    compareObject(ctx, at, direction, before, after)
  }
  for (const part of [...(Array.isArray(before.allOf) ? before.allOf : [])].keys()) {
    const a = Array.isArray(after.allOf) ? after.allOf[part] : undefined
    compareSchema(ctx, at, direction, (before.allOf as Array<unknown>)[part], a)
  }
}

const compareSchema = (ctx: Context, at: string, direction: Direction, before: unknown, after: unknown) => {
  const bAlternatives = alternatives(ctx.before, before)
  const aAlternatives = alternatives(ctx.after, after)
  for (const b of bAlternatives) {
    const a = counterpart(b, aAlternatives, direction, bAlternatives)
    if (a === undefined) {
      // A caller whose input was of this shape is refused now; an answer that has lost a shape
      // is only a problem if nothing is left that was answered before.
      const lostEverything = bAlternatives.every((y) =>
        counterpart(y, aAlternatives, direction, bAlternatives) === undefined
      )
      const severity: Severity = direction === "input" || lostEverything ? "breaking" : "info"
      report(ctx, severity, at, `${b.key} ${direction === "input" ? "no longer accepted" : "no longer answered"}`)
      continue
    }
    const bRef = isObject(b.schema) && typeof b.schema.$ref === "string" ? b.schema.$ref : ""
    const aRef = isObject(a.schema) && typeof a.schema.$ref === "string" ? a.schema.$ref : ""
    const pair = `${direction} ${bRef} ${aRef}`
    if (bRef !== "" && ctx.comparing.has(pair)) continue
    if (bRef !== "") ctx.comparing.add(pair)
    const bSchema = deref(ctx.before, b.schema)
    const aSchema = deref(ctx.after, a.schema)
    const union = (s: Json) => Array.isArray(s.anyOf) || Array.isArray(s.oneOf)
    if (union(bSchema) || union(aSchema)) compareSchema(ctx, at, direction, bSchema, aSchema)
    else compareAlternative(ctx, at, direction, bSchema, aSchema)
  }
  if (direction === "input") return
  for (const a of aAlternatives) {
    if (bAlternatives.some((b) => counterpart(b, aAlternatives, direction, bAlternatives) === a)) continue
    // A new named variant (an error class, say) is what a careful client has a default for; a
    // new null or a new primitive type is not.
    const severity: Severity = a.key.startsWith("ref ") ? "warning" : "breaking"
    report(ctx, severity, at, `may now answer ${a.key}`)
  }
}

interface Parameter {
  readonly name: string
  readonly in: string
  readonly required: boolean
  readonly deprecated: boolean
  readonly schema: unknown
}

const parameterOf = (json: Json): Parameter => ({
  name: String(json.name),
  in: String(json.in),
  required: json.required === true,
  deprecated: json.deprecated === true,
  schema: json.schema
})

const parametersOf = (doc: Document, operation: Json): Map<string, Parameter> =>
  new Map(
    (Array.isArray(operation.parameters) ? operation.parameters : [])
      .map((p) => parameterOf(deref(doc, p)))
      .map((p) => [`${p.in} ${p.in === "header" ? p.name.toLowerCase() : p.name}`, p])
  )

const contentOf = (doc: Document, holder: unknown): Record<string, { schema?: unknown }> => {
  const resolved = deref(doc, holder)
  return isObject(resolved.content) ? resolved.content as Record<string, { schema?: unknown }> : {}
}

const compareOperation = (ctx: Context, at: string, before: Json, after: Json) => {
  if (after.deprecated === true && before.deprecated !== true) report(ctx, "info", at, "deprecated")
  const bParams = parametersOf(ctx.before, before)
  const aParams = parametersOf(ctx.after, after)
  for (const [key, b] of bParams) {
    const a = aParams.get(key)
    if (a === undefined) {
      report(ctx, "breaking", `${at} ${key}`, "parameter removed")
      continue
    }
    if (a.required && !b.required) report(ctx, "breaking", `${at} ${key}`, "parameter now required")
    if (a.deprecated && !b.deprecated) report(ctx, "info", `${at} ${key}`, "deprecated")
    compareSchema(ctx, `${at} ${key}`, "input", b.schema, a.schema)
  }
  for (const [key, a] of aParams) {
    if (bParams.has(key)) continue
    const required = a.required
    report(ctx, required ? "breaking" : "info", `${at} ${key}`, required ? "new required parameter" : "new parameter")
  }

  const bBody = before.requestBody
  const aBody = after.requestBody
  if (aBody !== undefined) {
    const aRequired = deref(ctx.after, aBody).required === true
    const bRequired = bBody !== undefined && deref(ctx.before, bBody).required === true
    if (aRequired && !bRequired) report(ctx, "breaking", `${at} body`, "a request body is now required")
    const bContent = contentOf(ctx.before, bBody)
    const aContent = contentOf(ctx.after, aBody)
    for (const [type, media] of Object.entries(bContent)) {
      if (!(type in aContent)) report(ctx, "breaking", `${at} body`, `${type} no longer accepted`)
      else compareSchema(ctx, `${at} body`, "input", media.schema, aContent[type]!.schema)
    }
  } else if (bBody !== undefined) {
    report(ctx, "breaking", `${at} body`, "the request body is no longer read")
  }

  const bResponses = isObject(before.responses) ? before.responses : {}
  const aResponses = isObject(after.responses) ? after.responses : {}
  for (const [status, b] of Object.entries(bResponses)) {
    if (!(status in aResponses)) {
      report(ctx, "breaking", `${at} ${status}`, "status no longer answered")
      continue
    }
    const bContent = contentOf(ctx.before, b)
    const aContent = contentOf(ctx.after, aResponses[status])
    for (const [type, media] of Object.entries(bContent)) {
      if (!(type in aContent)) report(ctx, "breaking", `${at} ${status}`, `${type} no longer answered`)
      else compareSchema(ctx, `${at} ${status}`, "output", media.schema, aContent[type]!.schema)
    }
  }
  for (const status of Object.keys(aResponses)) {
    if (!(status in bResponses)) report(ctx, "warning", `${at} ${status}`, "new status")
  }
}

/** Every change from `before` (what a release promised) to `after`, in document order. */
export const diff = (before: Document, after: Document): ReadonlyArray<Change> => {
  const ctx: Context = { before, after, changes: [], comparing: new Set() }
  const bPaths = before.paths ?? {}
  const aPaths = after.paths ?? {}
  for (const [path, bItem] of Object.entries(bPaths)) {
    for (const method of METHODS) {
      const b = bItem[method]
      if (!isObject(b)) continue
      const at = `${method.toUpperCase()} ${path}`
      const a = aPaths[path]?.[method]
      if (!isObject(a)) report(ctx, "breaking", at, "operation removed")
      else compareOperation(ctx, at, b, a)
    }
  }
  for (const [path, aItem] of Object.entries(aPaths)) {
    for (const method of METHODS) {
      if (isObject(aItem[method]) && !isObject(bPaths[path]?.[method])) {
        report(ctx, "info", `${method.toUpperCase()} ${path}`, "new operation")
      }
    }
  }
  return ctx.changes
}

/** The breaking changes of a diff. */
export const breaking = (changes: ReadonlyArray<Change>): ReadonlyArray<Change> =>
  changes.filter((c) => c.severity === "breaking")

/** A change as one line of a report. */
export const format = (change: Change): string => `${change.severity.padEnd(8)} ${change.at}: ${change.what}`
