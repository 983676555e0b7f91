import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { Api, Deprecation } from "../src/index.js"

const retired = { since: "2026-11-28", sunset: "2027-05-28", instead: "use GET /things/{id}/parts" }

class Things extends HttpApiGroup.make("things")
  .add(HttpApiEndpoint.get("list", "/things").addSuccess(Schema.Array(Schema.String)))
  .add(
    HttpApiEndpoint.get("parts", "/things/parts").addSuccess(Schema.Array(Schema.String)).pipe(
      Deprecation.deprecate(retired)
    )
  )
{}

class ThingsApi extends HttpApi.make("things").add(Things) {}

describe("Deprecation", () => {
  it("marks the endpoint in the OpenAPI document, saying what to use instead and until when", () => {
    const paths = OpenApi.fromApi(ThingsApi).paths
    expect(paths["/things/parts"]?.get).toMatchObject({
      deprecated: true,
      description: "Deprecated since 2026-11-28: use GET /things/{id}/parts. A release after 2027-05-28 may remove it."
    })
    expect(paths["/things"]?.get?.deprecated).toBeUndefined()
  })

  it("is read into the endpoint registry the server answers from", () => {
    expect(Api.endpointsOf(ThingsApi).map((e) => [e.endpoint, e.deprecation])).toEqual([
      ["things.list", undefined],
      ["things.parts", retired]
    ])
  })

  it("answers Deprecation (RFC 9745) and Sunset (RFC 8594)", () => {
    expect(Deprecation.headersOf(retired)).toEqual({
      deprecation: "@1795824000",
      sunset: "Fri, 28 May 2027 00:00:00 GMT"
    })
    expect(Deprecation.headersOf({ since: "2026-11-28", instead: "x" })).toEqual({ deprecation: "@1795824000" })
  })

  it("refuses a date that is not a day", () => {
    expect(() => HttpApiEndpoint.get("x", "/x").pipe(Deprecation.deprecate({ since: "28/11/2026", instead: "x" })))
      .toThrow(/YYYY-MM-DD/)
  })
})
