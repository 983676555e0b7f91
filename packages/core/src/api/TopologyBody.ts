/**
 * A topology's body read item by item, so that one answer names every problem of it: the
 * server decodes it here rather than refusing it at its first bad item, and hands the deploy
 * what decodes with what does not (`Topology.Decoded`). Each item is read exactly as the
 * whole body would read it (strict, guarded), so the problems are the same words.
 */
import { Either, Schema } from "effect"
import { Payloads, strict } from "../contract/Payloads.js"
import { fromParseError, type Problem } from "../domain/InputProblems.js"
import { PodTopologyItem } from "../domain/Pod.js"
import type { Decoded } from "../domain/Topology.js"
import { decodedOf, TopologySubnetItem, TopologyVpcItem } from "../domain/Topology.js"

const decodeWhole = Schema.decodeUnknownEither(Payloads["topology.deploy"])

const items = {
  vpcs: Schema.decodeUnknownEither(strict(TopologyVpcItem)),
  subnets: Schema.decodeUnknownEither(strict(TopologySubnetItem)),
  pods: Schema.decodeUnknownEither(strict(PodTopologyItem))
}

const decodedItems = <A>(list: unknown, decode: (item: unknown) => Either.Either<A, unknown>) =>
  Array.isArray(list)
    ? list.flatMap((item, i) => {
      const decoded = decode(item)
      return Either.isRight(decoded) ? [[i, decoded.right] as const] : []
    })
    : []

/**
 * The body as far as it decodes: the items that do, and every schema problem of the body. Left
 * (its problems) when it is not an object at all: then there is no item to judge.
 */
export const decode = (body: unknown): Either.Either<Decoded, ReadonlyArray<Problem>> => {
  const whole = decodeWhole(body)
  if (Either.isRight(whole)) return Either.right(decodedOf(whole.right))
  const problems = fromParseError(whole.left)
  if (typeof body !== "object" || body === null || Array.isArray(body)) return Either.left(problems)
  const fields = body as Record<string, unknown>
  return Either.right({
    token: typeof fields.token === "string" ? fields.token : undefined,
    vpcs: decodedItems(fields.vpcs, items.vpcs),
    subnets: decodedItems(fields.subnets, items.subnets),
    pods: decodedItems(fields.pods, items.pods),
    problems
  })
}
