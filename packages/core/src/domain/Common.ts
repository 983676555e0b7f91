/** Small schema building blocks shared by the resource modules. */
import { Schema } from "effect"
import { TenantId } from "./Ids.js"

/** An instant, ISO 8601 in UTC on the wire. */
export const Timestamp = Schema.DateTimeUtc.annotations({
  identifier: "Timestamp",
  description: "ISO 8601 instant in UTC"
})

/** An optional field that is `null` when absent. */
export const nullable = <S extends Schema.Schema.Any>(schema: S) =>
  Schema.optionalWith(Schema.NullOr(schema), { default: () => null })

/** An integer within `[min, max]`, with a message that states the bounds. */
export const intBetween = (min: number, max: number) =>
  Schema.Int.pipe(
    Schema.filter((n) => (n >= min && n <= max) || `must be an integer from ${min} to ${max}`),
    Schema.annotations({
      // What a parameter's text that is no number at all must be (`InputProblems.fromParameters`).
      description: `an integer from ${min} to ${max}`,
      jsonSchema: { type: "integer", minimum: min, maximum: max },
      arbitrary: () => (fc) => fc.integer({ min, max })
    })
  )

/** A string of bounded length, with a message that states the bounds. */
export const stringBetween = (min: number, max: number) =>
  Schema.String.pipe(
    Schema.filter((s) =>
      (s.length >= min && s.length <= max) ||
      (min === 0 ? `must be at most ${max} characters` : `must be ${min} to ${max} characters`)
    ),
    Schema.annotations({
      jsonSchema: { type: "string", minLength: min, maxLength: max },
      arbitrary: () => (fc) => fc.string({ minLength: min, maxLength: Math.min(max, Math.max(min, 64)) })
    })
  )

/** A TCP/UDP port number. */
export const Port = intBetween(1, 65535).annotations({ identifier: "Port", description: "TCP/UDP port, 1-65535" })

/** A secret supplied by a caller: never logged, never returned. */
export const Secret = (max: number) =>
  stringBetween(1, max).annotations({ description: "Secret; stored hashed or encrypted, never returned" })

/**
 * A request body example for the OpenAPI document. It must be a valid, complete value of the
 * schema (defaults included): the document generator silently drops an example its schema
 * cannot encode, so ids are sample UUIDs and `{...}` strings mark secrets the caller supplies.
 * Typed loosely because a schema cannot name its own type inside its own definition.
 */
export const wireExample = (json: object): readonly [never] => [json as never]

/**
 * For views built from stored records, which were validated when written: constructing a
 * Schema class would validate every field again, the dominant cost of a list endpoint.
 */
export const TRUSTED = { disableValidation: true } as const

/**
 * `derive`, computed once per record object. Records are immutable, so what was derived from
 * one stays true of it: a store that hands out the same objects again (the memory store does)
 * pays for parsing and views once per change instead of once per request.
 */
export const oncePerRecord = <R extends object, A>(derive: (record: R) => A): (record: R) => A => {
  const derived = new WeakMap<R, A>()
  return (record) => {
    if (derived.has(record)) return derived.get(record)!
    const value = derive(record)
    derived.set(record, value)
    return value
  }
}

/*
 * The spec has tenant creates (VPCs, subnets, pods, topologies) repeat the caller's
 * credentials in the body; newcomers expect the header alone, so a missing one says so.
 */

/** The body's `tenant_id`: the caller's own tenant. */
export const BodyTenantId = Schema.propertySignature(TenantId).annotations({
  missingMessage: () =>
    "is missing: creates of VPCs, subnets and pods carry your tenant's id in the body (and `token`), " +
    "besides the X-Auth-Token header; the typed client fills both in"
})

/** The body's `token`: the same API token as the `X-Auth-Token` header. */
export const BodyToken = Schema.propertySignature(
  Schema.String.annotations({ description: "The tenant's API token; must name the same tenant as X-Auth-Token" })
).annotations({
  missingMessage: () => "is missing: tenant creates carry your API token in the body too, the same as X-Auth-Token"
})
