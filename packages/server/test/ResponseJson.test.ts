import type { HttpApiEndpoint } from "@effect/platform"
import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Api, SecurityRule, Topology, Vpc } from "@tenet/core"
import { Arbitrary, Effect, FastCheck, Schema } from "effect"
import * as RequestContext from "../src/RequestContext.js"
import * as ResponseJson from "../src/ResponseJson.js"

const endpoints = Object.values(Api.TenetApi.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({
    group: group.identifier,
    name: endpoint.name,
    endpoint: endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  }))
)

/** What a handler of `group.name` answers for `value`: a response, or the value left to the platform. */
const answering = (group: string, name: string, value: unknown) => ResponseJson.forEndpoint(`${group}.${name}`)(value)
const answer = (group: string, name: string, value: unknown) => Effect.runPromise(answering(group, name, value))

const text = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : undefined

describe("ResponseJson", () => {
  describe("answers every JSON success of the API with the text of the platform's own encoding", () => {
    for (const { endpoint, group, name } of endpoints) {
      if (HttpApiSchema.isVoid(endpoint.successSchema.ast)) continue
      // The change stream answers Server-Sent Events, not JSON (`handlers/WatchHandlers.ts`).
      if (HttpApiSchema.getEncoding(endpoint.successSchema.ast).kind !== "Json") continue
      const success = endpoint.successSchema as Schema.Schema<unknown, unknown>
      // A topology is thousands of values deep; fewer of those.
      const numRuns = group === "topology" ? 5 : 30
      it.effect.prop(`${group}.${name}`, [Arbitrary.make(success)], ([value]) =>
        Effect.gen(function*() {
          const expected = JSON.stringify(Schema.encodeSync(success)(value))
          // Twice: a view served again is written from what was kept of it.
          for (let i = 0; i < 2; i++) {
            const response = yield* answering(group, name, value)
            if (!HttpServerResponse.isServerResponse(response)) throw new Error("left to the platform")
            expect(text(response)).toBe(expected)
            expect(response.headers["content-type"] ?? response.body.contentType).toContain("application/json")
          }
        }), { fastCheck: { numRuns }, timeout: 60_000 })
    }
  })

  it("answers each endpoint with its documented status; bodiless successes stay with the platform", async () => {
    const status = async (group: string, name: string, schema: Schema.Schema.Any) => {
      const [value] = FastCheck.sample(Arbitrary.make(schema), 1)
      const response = await answer(group, name, value)
      return HttpServerResponse.isServerResponse(response) ? response.status : undefined
    }
    const success = (group: string, name: string) =>
      endpoints.find((e) => e.group === group && e.name === name)!.endpoint.successSchema
    expect(await status("tenants", "create", success("tenants", "create"))).toBe(201)
    // Two successes: each value is answered with its own status.
    expect(await status("securityRules", "create", SecurityRule.RuleMutation)).toBe(201)
    expect(await status("securityRules", "create", SecurityRule.RuleImpact)).toBe(200)
    expect(await status("vpcs", "list", success("vpcs", "list"))).toBe(200)
    expect(await answer("vpcs", "delete", undefined)).toBeUndefined()
  })

  it("a topology of many pods is written a slice at a time, and reads as the platform writes it", async () => {
    const [pod] = FastCheck.sample(Arbitrary.make(Topology.TopologyPod), 1)
    const [subnet] = FastCheck.sample(Arbitrary.make(Topology.TopologySubnet), 1)
    const [vpc] = FastCheck.sample(Arbitrary.make(Topology.TopologyVpc), 1)
    const pods = Array.from({ length: 300 }, (_, i) => Topology.TopologyPod.make({ ...pod!, name: `p${i}` as never }))
    const view = Topology.TopologyView.make({
      tenant_id: vpc!.tenant_id,
      vpcs: [Topology.TopologyVpc.make({ ...vpc!, subnets: [Topology.TopologySubnet.make({ ...subnet!, pods })] })]
    })
    const expected = JSON.stringify(Schema.encodeSync(Topology.TopologyView)(view))
    for (let i = 0; i < 2; i++) {
      const response = await answer("topology", "get", view)
      if (!HttpServerResponse.isServerResponse(response)) throw new Error("left to the platform")
      expect(text(response)).toBe(expected)
    }
  })

  it("an endpoint the contract does not have is a mistake, not an answer", () => {
    expect(() => ResponseJson.forEndpoint("vpcs.lsit")).toThrow("the contract has no endpoint vpcs.lsit")
  })

  it("a handler's answer is the endpoint the router matched; outside a matched request, the platform's", () => {
    const vpcs = Schema.Array(Vpc.Vpc)
    const value = FastCheck.sample(Arbitrary.make(vpcs), 1)[0]!
    const state = new RequestContext.RequestState("test")
    state.endpoint = Api.endpoints.find((e) => e.endpoint === "vpcs.list")
    const matched = Effect.runSync(
      Effect.locally(ResponseJson.answer(Effect.succeed(value)), RequestContext.Current, state)
    )
    if (!HttpServerResponse.isServerResponse(matched)) throw new Error("left to the platform")
    expect(text(matched)).toBe(JSON.stringify(Schema.encodeSync(vpcs)(value)))
    expect(Effect.runSync(ResponseJson.answer(Effect.succeed(value)))).toBe(value)
  })
})
