import { OpenApi } from "@effect/platform"
import { expect, it } from "@effect/vitest"
import { Api } from "@tenet/core"
import * as fc from "effect/FastCheck"
import { describe } from "vitest"
import * as OpenApiDiff from "../src/OpenApiDiff.js"

type Doc = Record<string, any>

const contract = (): Doc => JSON.parse(JSON.stringify(OpenApi.fromApi(Api.TenetApi)))

/** A document of one operation, `GET /things/{id}`, to change one thing at a time. */
const small = (): Doc => ({
  openapi: "3.1.0",
  paths: {
    "/things/{id}": {
      get: {
        parameters: [
          { name: "id", in: "path", required: true, schema: { type: "string" } },
          { name: "limit", in: "query", required: false, schema: { type: "integer", minimum: 1, maximum: 500 } }
        ],
        responses: {
          "200": { content: { "application/json": { schema: { $ref: "#/components/schemas/Thing" } } } },
          "404": { content: { "application/json": { schema: { $ref: "#/components/schemas/NotFound" } } } }
        }
      },
      patch: {
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        requestBody: {
          required: true,
          content: { "application/json": { schema: { $ref: "#/components/schemas/ThingPatch" } } }
        },
        responses: { "200": { content: { "application/json": { schema: { $ref: "#/components/schemas/Thing" } } } } }
      }
    }
  },
  components: {
    schemas: {
      Thing: {
        type: "object",
        required: ["id", "kind", "note"],
        properties: {
          id: { type: "string" },
          kind: { type: "string", enum: ["a", "b"] },
          note: { anyOf: [{ type: "string" }, { type: "null" }] },
          ports: { type: "array", items: { type: "integer" } }
        },
        additionalProperties: false
      },
      ThingPatch: {
        type: "object",
        required: [],
        properties: { kind: { type: "string", enum: ["a", "b"] }, name: { type: "string", maxLength: 63 } },
        additionalProperties: false
      },
      NotFound: { type: "object", required: ["detail"], properties: { detail: { type: "string" } } }
    }
  }
})

const severities = (before: Doc, after: Doc) => OpenApiDiff.diff(before, after).map((c) => c.severity)

const changed = (edit: (doc: Doc) => void): Doc => {
  const doc = small()
  edit(doc)
  return doc
}

describe("OpenApiDiff", () => {
  it("finds nothing between a document and itself, the whole contract included", () => {
    expect(OpenApiDiff.diff(small(), small())).toEqual([])
    expect(OpenApiDiff.diff(contract(), contract())).toEqual([])
  })

  it.each([
    ["an operation removed", (d: Doc) => delete d.paths["/things/{id}"].patch],
    ["a parameter removed", (d: Doc) => d.paths["/things/{id}"].get.parameters.pop()],
    ["a parameter made required", (d: Doc) => (d.paths["/things/{id}"].get.parameters[1].required = true)],
    [
      "a new required parameter",
      (d: Doc) =>
        d.paths["/things/{id}"].get.parameters.push({
          name: "q",
          in: "query",
          required: true,
          schema: { type: "string" }
        })
    ],
    ["a tighter maximum on an input", (d: Doc) => (d.paths["/things/{id}"].get.parameters[1].schema.maximum = 100)],
    ["an input's type changed", (d: Doc) => (d.paths["/things/{id}"].get.parameters[1].schema.type = "string")],
    ["a status no longer answered", (d: Doc) => delete d.paths["/things/{id}"].get.responses["404"]],
    ["a status changed", (d: Doc) => {
      const responses = d.paths["/things/{id}"].get.responses
      responses["400"] = responses["404"]
      delete responses["404"]
    }],
    ["an answer's field removed", (d: Doc) => delete d.components.schemas.Thing.properties.kind],
    ["an answer's field renamed", (d: Doc) => {
      const thing = d.components.schemas.Thing
      thing.properties.label = thing.properties.note
      delete thing.properties.note
      thing.required = ["id", "kind", "label"]
    }],
    ["an answer's field made optional", (d: Doc) => (d.components.schemas.Thing.required = ["id", "kind"])],
    [
      "an answer's field made nullable",
      (d: Doc) => (d.components.schemas.Thing.properties.id = { anyOf: [{ type: "string" }, { type: "null" }] })
    ],
    [
      "an answer's field of another type",
      (d: Doc) => (d.components.schemas.Thing.properties.ports.items = { type: "string" })
    ],
    ["an input enum value removed", (d: Doc) => (d.components.schemas.ThingPatch.properties.kind.enum = ["a"])],
    ["a new required input field", (d: Doc) => {
      d.components.schemas.ThingPatch.properties.owner = { type: "string" }
      d.components.schemas.ThingPatch.required = ["owner"]
    }],
    ["an input field removed", (d: Doc) => delete d.components.schemas.ThingPatch.properties.name],
    ["a shorter maxLength on an input", (d: Doc) => (d.components.schemas.ThingPatch.properties.name.maxLength = 10)]
  ])("%s is breaking", (_, edit) => {
    expect(severities(small(), changed(edit))).toContain("breaking")
  })

  it.each([
    ["a new operation", (d: Doc) => (d.paths["/others"] = { get: { responses: {} } })],
    [
      "a new optional parameter",
      (d: Doc) => d.paths["/things/{id}"].get.parameters.push({ name: "q", in: "query", schema: { type: "string" } })
    ],
    ["a wider maximum on an input", (d: Doc) => (d.paths["/things/{id}"].get.parameters[1].schema.maximum = 1000)],
    ["an answer's new field", (d: Doc) => (d.components.schemas.Thing.properties.etag = { type: "string" })],
    ["an input enum value added", (d: Doc) => (d.components.schemas.ThingPatch.properties.kind.enum = ["a", "b", "c"])],
    ["an answer's enum value added", (d: Doc) => (d.components.schemas.Thing.properties.kind.enum = ["a", "b", "c"])],
    [
      "a new status",
      (d: Doc) => (d.paths["/things/{id}"].get.responses["409"] = d.paths["/things/{id}"].get.responses["404"])
    ],
    ["an answer's field no longer null", (d: Doc) => (d.components.schemas.Thing.properties.note = { type: "string" })],
    ["an operation deprecated", (d: Doc) => (d.paths["/things/{id}"].get.deprecated = true)],
    ["a schema renamed", (d: Doc) => {
      d.components.schemas.Widget = d.components.schemas.Thing
      delete d.components.schemas.Thing
      d.paths["/things/{id}"].get.responses["200"].content["application/json"].schema.$ref =
        "#/components/schemas/Widget"
      d.paths["/things/{id}"].patch.responses["200"].content["application/json"].schema.$ref =
        "#/components/schemas/Widget"
    }]
  ])("%s is not breaking", (_, edit) => {
    const changes = OpenApiDiff.diff(small(), changed(edit))
    expect(OpenApiDiff.breaking(changes)).toEqual([])
  })

  it("says where and what", () => {
    const after = changed((d) => delete d.components.schemas.Thing.properties.kind)
    expect(OpenApiDiff.diff(small(), after).map(OpenApiDiff.format)).toContain(
      "breaking GET /things/{id} 200.kind: field removed"
    )
  })

  const whole = contract()
  const operations = Object.entries(whole.paths as Record<string, Doc>).flatMap(([path, item]) =>
    Object.keys(item).map((method) => [path, method] as const)
  )
  const fields = Object.entries(whole.components.schemas as Record<string, Doc>).flatMap(([name, schema]) =>
    Object.keys(schema.properties ?? {}).map((field) => [name, field] as const)
  )

  it.prop(
    "every operation of the contract, removed, is a breaking change",
    [fc.constantFrom(...operations)],
    ([[path, method]]) => {
      const after = contract()
      delete after.paths[path][method]
      expect(OpenApiDiff.breaking(OpenApiDiff.diff(whole, after)).map((c) => c.at)).toContain(
        `${method.toUpperCase()} ${path}`
      )
    }
  )

  it.prop(
    "every field of the contract's schemas, removed, is a breaking change wherever it is used",
    [fc.constantFrom(...fields)],
    ([[name, field]]) => {
      const after = contract()
      delete after.components.schemas[name].properties[field]
      const used = JSON.stringify(whole.paths).includes(`"#/components/schemas/${name}"`) ||
        JSON.stringify(whole.components.schemas).includes(`"#/components/schemas/${name}"`)
      const breaking = OpenApiDiff.breaking(OpenApiDiff.diff(whole, after))
      if (used) expect(breaking.some((c) => c.at.endsWith(`.${field}`))).toBe(true)
    },
    { fastCheck: { numRuns: 60 } }
  )
})
