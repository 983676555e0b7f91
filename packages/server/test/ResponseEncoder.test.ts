import type { HttpApiEndpoint } from "@effect/platform"
import { HttpApiSchema } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Api, SecurityRule } from "@tenet/core"
import { Arbitrary, DateTime, FastCheck, Schema } from "effect"
import * as ResponseEncoder from "../src/ResponseEncoder.js"

const endpoints = Object.values(Api.TenetApi.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({
    name: `${group.identifier}.${endpoint.name}`,
    endpoint: endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  }))
)

/**
 * Encodes like `Schema.encodeSync`, and writes the very text `JSON.stringify` gives of that, for
 * any value of the schema's type; twice, as a record served again is written from its cache.
 */
const agrees = <A, I>(schema: Schema.Schema<A, I>, runs = 100) => {
  const encode = ResponseEncoder.compile(schema)
  const json = ResponseEncoder.compileJson(schema)
  it.prop(`encodes ${String(schema.ast).slice(0, 70)} as Schema.encode does`, [Arbitrary.make(schema)], ([value]) => {
    const expected = Schema.encodeSync(schema)(value)
    expect(encode(value)).toStrictEqual(expected)
    expect(json(value)).toBe(JSON.stringify(expected))
    expect(json(value)).toBe(JSON.stringify(expected))
  }, { fastCheck: { numRuns: runs }, timeout: 60_000 })
}

describe("ResponseEncoder", () => {
  describe("every JSON success of the API", () => {
    for (const { endpoint, name } of endpoints) {
      if (HttpApiSchema.isVoid(endpoint.successSchema.ast)) continue
      describe(name, () => {
        // A topology is thousands of values deep; fewer of those.
        agrees(endpoint.successSchema as Schema.Schema<unknown, unknown>, name.startsWith("topology.") ? 5 : 30)
      })
    }
  })

  describe("shapes it does not compile fall back to Schema.encode", () => {
    agrees(Schema.Record({ key: Schema.String, value: Schema.DateTimeUtc }))
    agrees(Schema.Option(Schema.DateTimeUtc))
    agrees(Schema.Struct({ at: Schema.optionalWith(Schema.DateTimeUtc, { default: () => DateTime.unsafeMake(0) }) }))
    agrees(Schema.Union(Schema.DateTimeUtc, Schema.Struct({ n: Schema.NumberFromString })))
    agrees(Schema.Tuple(Schema.String, Schema.DateTimeUtc))
  })

  describe("the shapes it compiles", () => {
    agrees(Schema.Struct({ a: Schema.optional(Schema.NumberFromString), b: Schema.NullOr(Schema.DateTimeUtc) }))
    agrees(Schema.Array(Schema.Struct({ n: Schema.compose(Schema.NumberFromString, Schema.Int) })))
    class Item extends Schema.Class<Item>("Item")({ at: Schema.DateTimeUtc, note: Schema.optional(Schema.String) }) {}
    agrees(Schema.Struct({ items: Schema.Array(Item), first: Schema.NullOr(Item), n: Schema.optional(Schema.Number) }))
  })

  it("answers each endpoint with its documented status; bodiless endpoints stay with the platform", () => {
    const find = (name: string) => endpoints.find((e) => e.name === name)!.endpoint
    const status = (name: string, success: Schema.Schema.Any = find(name).successSchema) => {
      const [value] = FastCheck.sample(Arbitrary.make(success), 1)
      return ResponseEncoder.responder(find(name))!(value).status
    }
    expect(status("tenants.create")).toBe(201)
    // Two successes: each value is answered with its own status.
    expect(status("securityRules.create", SecurityRule.RuleMutation)).toBe(201)
    expect(status("securityRules.create", SecurityRule.RuleImpact)).toBe(200)
    expect(status("vpcs.list")).toBe(200)
    expect(ResponseEncoder.responder(find("vpcs.delete"))).toBeNull()
  })
})
