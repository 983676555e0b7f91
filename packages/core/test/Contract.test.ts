import { HttpApi } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Api } from "@tenet/core"
import { Option } from "effect"

/** Each endpoint's body as the contract declares it, by `group.endpoint`. */
const declaredBodies = (): Map<string, unknown> => {
  const bodies = new Map<string, unknown>()
  HttpApi.reflect(Api.TenetApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group }) => {
      if (Option.isSome(endpoint.payloadSchema)) {
        bodies.set(`${group.identifier}.${endpoint.name}`, endpoint.payloadSchema.value)
      }
    }
  })
  return bodies
}

describe("the contract", () => {
  it("declares every request body from Payloads, under its endpoint's name, and no other", () => {
    const declared = declaredBodies()
    expect([...declared.keys()].sort()).toEqual(Object.keys(Api.Payloads).sort())
    for (const [key, schema] of declared) expect(schema).toBe(Api.Payloads[key as Api.PayloadKey])
  })
})
