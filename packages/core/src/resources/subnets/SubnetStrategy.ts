/**
 * What a subnet's create is, decided on the tenant's state: refused when its VPC is gone or
 * its block is not one the VPC can take (`Subnet.checkBlock`: a private block, the gateway
 * inside it, no overlap with the VPC's other subnets or the peering block). Decided on the
 * VPC, so two overlapping subnets created at once cannot both commit.
 */
import { Either } from "effect"
import type { Decision } from "../../changes/Pipeline.js"
import { creating } from "../../changes/Pipeline.js"
import type { SubnetRecord } from "../../domain/Subnet.js"
import { checkBlock } from "../../domain/Subnet.js"
import { Conflict, InvalidInput, NotFound } from "../../Errors.js"
import type { TenantState } from "../../readmodel/TenantState.js"

export const create =
  (subnet: SubnetRecord, peeringCidr: string | null) =>
  (state: TenantState): Either.Either<Decision<SubnetRecord>, NotFound | InvalidInput | Conflict> => {
    if (state.vpc(subnet.vpc_id) === undefined) {
      return Either.left(new NotFound({ detail: `VPC ${subnet.vpc_id} not found` }))
    }
    return checkBlock(subnet.cidr, subnet.gateway_ip, state.subnetsOf(subnet.vpc_id), peeringCidr).pipe(
      Either.mapLeft(({ field, kind, message }) =>
        kind === "invalid" ? InvalidInput.field(field, message) : new Conflict({ detail: `${field} ${message}` })
      ),
      Either.map(() => ({ ...creating({ part: "subnets", record: subnet }), decidedOn: [subnet.vpc_id] }))
    )
  }
