/**
 * Subnets (tenant): IPv4 blocks inside one of the caller's VPCs. Blocks of one VPC never
 * overlap each other or the platform's peering subnet; VPCs are isolated from each other, so
 * different VPCs may reuse the same blocks.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { Pipeline } from "../../changes/Pipeline.js"
import { randomUuid, SubnetId } from "../../domain/Ids.js"
import type { TenantPrincipal } from "../../domain/Principal.js"
import type { Subnet, SubnetCreate, SubnetRecord } from "../../domain/Subnet.js"
import { toSubnet } from "../../domain/Subnet.js"
import { Conflict } from "../../Errors.js"
import type {
  Forbidden,
  GuardrailViolated,
  IdempotencyKeyReused,
  InvalidInput,
  NotFound,
  ServiceUnavailable,
  Unauthorized
} from "../../Errors.js"
import { storeUnavailable } from "../../ports/Failures.js"
import { connectionsOf } from "../../readmodel/Derived.js"
import { ReadModel } from "../../readmodel/ReadModel.js"
import * as BodyCredentials from "../../usecases/BodyCredentials.js"
import { Identity } from "../../usecases/Identity.js"
import { NetworkApplier } from "../../usecases/NetworkApplier.js"
import { ProviderConfigs } from "../../usecases/ProviderConfigs.js"
import { Resources } from "../Resources.js"
import { Vpcs } from "../vpcs/Vpcs.js"
import * as SubnetStrategy from "./SubnetStrategy.js"

type Failure =
  | ServiceUnavailable
  | Unauthorized
  | Forbidden
  | NotFound
  | InvalidInput
  | Conflict
  | IdempotencyKeyReused
  | GuardrailViolated

export interface SubnetsShape {
  readonly create: (caller: TenantPrincipal, input: SubnetCreate) => Effect.Effect<Subnet, Failure>
  readonly list: (caller: TenantPrincipal) => Effect.Effect<ReadonlyArray<Subnet>, ServiceUnavailable>
}

export class Subnets extends Context.Tag("@tenet/core/Subnets")<Subnets, SubnetsShape>() {
  static readonly layer = Layer.effect(
    Subnets,
    Effect.gen(function*() {
      const identity = yield* Identity
      const vpcs = yield* Vpcs
      const applier = yield* NetworkApplier
      const resources = yield* Resources
      const configs = yield* ProviderConfigs
      const pipeline = yield* Pipeline
      const readModel = yield* ReadModel
      const stateOf = (caller: TenantPrincipal) => readModel.stateOf(caller.tenant_id).pipe(storeUnavailable)

      /** Saves a new subnet, with the request's idempotency key. */
      const insert = Effect.fn("Subnets.insert")(function*(caller: TenantPrincipal, input: SubnetCreate) {
        yield* vpcs.owned(caller, input.vpc_id)
        const config = yield* configs.current
        const peering = Option.match(config, { onNone: () => null, onSome: (c) => c.peering_subnet_cidr })
        const subnet: SubnetRecord = {
          id: SubnetId.make(randomUuid()),
          tenant_id: caller.tenant_id,
          vpc_id: input.vpc_id,
          name: input.name,
          cidr: input.cidr,
          gateway_ip: input.gateway_ip,
          created_at: yield* DateTime.now
        }
        // The VPC's context grows, and so do the remotes of the rules elsewhere that name it: the
        // pipeline checks the guardrails of both.
        yield* pipeline.create(
          caller.tenant_id,
          SubnetStrategy.create(subnet, peering),
          ["Conflict", "GuardrailViolated", "UniqueViolation"]
        ).pipe(
          Effect.catchTag(
            "UniqueViolation",
            () => new Conflict({ detail: `this VPC already has a subnet named '${input.name}'` })
          )
        )
        return subnet
      })

      const create = Effect.fn("Subnets.create")(function*(caller: TenantPrincipal, input: SubnetCreate) {
        yield* BodyCredentials.check(identity, caller, input)
        const earlier = yield* resources.replay(caller.tenant_id, "subnets")
        const subnet = Option.isSome(earlier) ? earlier.value : yield* insert(caller, input)
        // This VPC gains a block, and so do the rules elsewhere that name it as their remote and
        // the VPCs peered with it (their routes to its blocks).
        const state = yield* stateOf(caller)
        const referencing = state.rulesNaming(subnet.vpc_id)
        yield* Effect.forEach(
          new Set([
            subnet.vpc_id,
            ...referencing.map((r) => r.vpc_id),
            ...(connectionsOf(state).peers.get(subnet.vpc_id) ?? [])
          ]),
          (vpcId) => applier.apply(caller.tenant_id, vpcId),
          { concurrency: "unbounded", discard: true }
        )
        return toSubnet(subnet)
      })

      return Subnets.of({
        create,
        list: (caller) => Effect.map(resources.list(caller.tenant_id, "subnets"), (subnets) => subnets.map(toSubnet))
      })
    })
  )
}
