/**
 * What holds across a tenant's rows whatever writes it: every guardrail that holds in a VPC, no
 * two blocks of one VPC overlapping each other or the peering block, no block of a VPC
 * overlapping one of a VPC an allow rule would peer it with, nor two peers of one VPC
 * overlapping (`Paths`), at most
 * `MAX_RULES_PER_VPC` rules in a VPC. `Pipeline` checks them on the state a decision leaves,
 * on exactly the VPCs its writes can move (`reachOf`), and commits only while what the check
 * read (`dependenciesOf`) is unchanged: a promise made on a state read before the decision,
 * or on part of what it depends on, cannot commit.
 *
 * Pure: states in, verdicts out.
 */
import { Either } from "effect"
import type { GuardrailRecord } from "../domain/Guardrail.js"
import type { VpcId } from "../domain/Ids.js"
import * as Net from "../domain/Net.js"
import * as Quota from "../domain/Quota.js"
import type { SecurityRuleRecord } from "../domain/SecurityRule.js"
import { GuardrailViolation, MAX_RULES_PER_VPC } from "../domain/SecurityRule.js"
import { Conflict, GuardrailViolated } from "../Errors.js"
import type { Write } from "../kinds/Change.js"
import * as Change from "../kinds/Change.js"
import * as Kind from "../kinds/Kind.js"
import { connectionsOf, vpcContextOf } from "../readmodel/Derived.js"
import type { TenantState } from "../readmodel/TenantState.js"
import * as GuardrailCheck from "../rules/GuardrailCheck.js"
import * as Paths from "../rules/Paths.js"
import * as RuleSet from "../rules/RuleSet.js"

/** What a change can move: the VPCs whose verdicts, blocks or rule counts it changes. */
export interface Reach {
  /** VPCs whose verdicts can move (their guardrails are checked). */
  readonly vpcs: ReadonlySet<VpcId>
  /** VPCs whose blocks change (overlaps are checked). */
  readonly blocks: ReadonlySet<VpcId>
  /** VPCs whose rules change (the rule limit is checked). */
  readonly rules: ReadonlySet<VpcId>
  /**
   * True when the change adds or removes a VPC, writes a tenant-wide guardrail or an address set
   * (`Change.movesScope`): it is decided on the tenant's scope (`TenantState.scopeVersion`).
   */
  readonly tenant: boolean
}

const vpcOfRow = (record: object): VpcId | null => (record as { readonly vpc_id?: VpcId | null }).vpc_id ?? null

/** The VPC of a written row, in the state before (a removal, an update) or after (an insert). */
const vpcOf = (write: Write, before: TenantState, after: TenantState): VpcId | null => {
  if (write._tag === "Touch") return write.vpc_id
  if (Kind.KINDS[write.part].versioned) return (write._tag === "Remove" ? write.key : Change.keyOf(write)) as VpcId
  if (write._tag !== "Remove") return vpcOfRow(write.record)
  if (write.vpc_id !== undefined) return write.vpc_id
  const row = before.row(write.part, write.key) ?? after.row(write.part, write.key)
  return row === undefined ? null : vpcOfRow(row)
}

/** A write of one part's rows, as `reachOf` reads it. */
type WriteOf<P extends Kind.Part> = Extract<Write, { readonly part: P }> | Extract<Write, { readonly _tag: "Remove" }>

/** What a reach is being gathered into, with the states around the change. */
interface Reaching {
  readonly before: TenantState
  readonly after: TenantState
  readonly vpcs: Set<VpcId>
  readonly blocks: Set<VpcId>
  readonly rules: Set<VpcId>
  /** A VPC's blocks moved: so do the verdicts of every rule elsewhere that names it. */
  readonly blocksMoved: (vpc: VpcId) => void
}

/**
 * How each kind's writes can move verdicts, blocks and rule counts, given the written row's VPC
 * (null: none). A kind without an entry is a type error: a new kind says what it moves.
 */
const REACH: { readonly [P in Kind.Part]: (write: WriteOf<P>, vpc: VpcId | null, r: Reaching) => void } = {
  vpcs: (write, vpc, r) => {
    // A VPC's apply status moves no verdict; adding one, removing one or marking it deleted does.
    if (vpc === null) return
    if (write._tag !== "Update") {
      r.blocksMoved(vpc)
      r.rules.add(vpc)
    } else if (r.before.vpc(vpc)?.lifecycle !== write.record.lifecycle) r.blocksMoved(vpc)
  },
  subnets: (_, vpc, r) => {
    if (vpc !== null) r.blocksMoved(vpc)
  },
  rules: (_, vpc, r) => {
    if (vpc === null) return
    r.vpcs.add(vpc)
    r.rules.add(vpc)
  },
  pods: (write, vpc, r) => {
    // Pods are in their own VPC's context only: their presence, subnet or lifecycle.
    if (vpc === null) return
    const was = write._tag === "Update" ? r.before.pod(write.record.id) : undefined
    if (
      write._tag !== "Update" || was === undefined || was.subnet_id !== write.record.subnet_id ||
      was.lifecycle !== write.record.lifecycle
    ) r.vpcs.add(vpc)
  },
  // A tunnel publishes a pod: the cluster's and the edge's concern, no verdict's.
  tunnels: () => {},
  credentials: () => {},
  domains: () => {},
  guardrails: (_, vpc, r) => {
    if (vpc !== null) r.vpcs.add(vpc)
    else for (const v of r.after.vpcs) r.vpcs.add(v.id)
  },
  addressSets: (write, _, r) => {
    // A set's entries are the remote of every rule that names it, in whichever VPC.
    const key = write._tag === "Remove" ? write.key : Change.keyOf(write)
    for (const state of [r.before, r.after]) for (const rule of state.rulesUsing(key)) r.vpcs.add(rule.vpc_id)
  }
}

/** What `writes`, made on `before` to give `after`, can move. */
export const reachOf = (before: TenantState, after: TenantState, writes: ReadonlyArray<Write>): Reach => {
  const vpcs = new Set<VpcId>()
  const blocks = new Set<VpcId>()
  const rules = new Set<VpcId>()
  const reaching: Reaching = {
    before,
    after,
    vpcs,
    blocks,
    rules,
    blocksMoved: (vpc) => {
      blocks.add(vpc)
      vpcs.add(vpc)
      for (const state of [before, after]) for (const rule of state.rulesNaming(vpc)) vpcs.add(rule.vpc_id)
    }
  }
  for (const write of writes) {
    const vpc = vpcOf(write, before, after)
    if (write._tag === "Touch") vpcs.add(write.vpc_id)
    // The part's entry takes the part's writes; TypeScript cannot relate them through `write.part`.
    else (REACH[write.part] as (write: Write, vpc: VpcId | null, r: Reaching) => void)(write, vpc, reaching)
  }
  return { vpcs, blocks, rules, tenant: Change.movesScope(writes) }
}

/** Whether the VPC's peers or overlapping named VPCs differ between two states (`Paths.connectionKeyOf`). */
export const connectionsMoved = (before: TenantState, after: TenantState, vpc: VpcId): boolean =>
  Paths.connectionKeyOf(connectionsOf(before), vpc) !== Paths.connectionKeyOf(connectionsOf(after), vpc)

/**
 * The VPCs whose peerings the peering checks look at: those whose blocks the change moves, and
 * those whose rules it changes where that moves their connections. A rule that peers nothing
 * new (a CIDR rule, one naming a VPC already peered) can break no peering invariant.
 */
const peeringsMoved = (before: TenantState, after: TenantState, reach: Reach): ReadonlySet<VpcId> =>
  new Set([...reach.blocks, ...[...reach.rules].filter((vpc) => connectionsMoved(before, after, vpc))])

/**
 * What a check of `reach` read on `before`: the VPCs reached, the VPCs their rules name (whose
 * blocks the verdicts depend on), the VPCs of the rows removed, and the peers (and their peers)
 * of the VPCs whose blocks or rules change; each that `before` holds.
 */
export const dependenciesOf = (before: TenantState, after: TenantState, reach: Reach): ReadonlyArray<VpcId> => {
  const read = new Set<VpcId>()
  for (const vpc of reach.vpcs) {
    read.add(vpc)
    for (const rule of after.rulesOf(vpc)) if (rule.remote_vpc_id !== null) read.add(rule.remote_vpc_id)
  }
  for (const vpc of reach.blocks) read.add(vpc)
  for (const vpc of reach.rules) read.add(vpc)
  // The peering checks read the blocks of each changed VPC's peers, and of their peers (two
  // peers of one VPC may not overlap): a subnet added to one of them meanwhile must be seen.
  // They find something only where the change moves the VPC's blocks or its connections: a rule
  // that peers nothing new reads no peer's blocks (and so does not wait on its neighbours).
  const moved = peeringsMoved(before, after, reach)
  for (const state of [before, after]) {
    const peers = connectionsOf(state).peers
    for (const vpc of moved) {
      for (const peer of peers.get(vpc) ?? []) {
        read.add(peer)
        for (const next of peers.get(peer) ?? []) read.add(next)
      }
    }
  }
  return [...read].filter((vpc) => before.vpc(vpc) !== undefined)
}

/**
 * The VPCs a change moves for others without changing their contents: each VPC a written rule
 * names as its remote (before or after), and each VPC marked deleted or restored. Their
 * versions are stepped with the change, so a decision made on them before it (a subnet added
 * to a VPC a new rule names) is made again. (An address set's edit steps every VPC of the
 * tenant itself: `AddressSetStrategy`.)
 */
export const touchesOf = (
  before: TenantState,
  after: TenantState,
  writes: ReadonlyArray<Write>
): ReadonlyArray<VpcId> => {
  const touched = new Set<VpcId>()
  for (const write of writes) {
    if (write._tag === "Touch") continue
    if (write.part === "rules") {
      const key = write._tag === "Remove" ? write.key : write.record.id
      for (const state of [before, after]) {
        const rule = state.rule(key)
        if (rule !== undefined && rule.remote_vpc_id !== null && rule.remote_vpc_id !== rule.vpc_id) {
          touched.add(rule.remote_vpc_id)
        }
      }
    } else if (write.part === "vpcs" && write._tag === "Update") {
      if (before.vpc(write.record.id)?.lifecycle !== write.record.lifecycle) touched.add(write.record.id)
    }
  }
  return [...touched].filter((vpc) => before.vpc(vpc) !== undefined && after.vpc(vpc) !== undefined)
}

/** The violations of the guardrails that hold in `vpcId` by `rules` in `context`, as the API states them. */
export const violationsOf = (
  state: TenantState,
  vpcId: VpcId,
  rules: ReadonlyArray<SecurityRuleRecord>,
  context: RuleSet.VpcContext,
  guardrails: ReadonlyArray<GuardrailRecord> = state.guardrailsOf(vpcId)
): Array<GuardrailViolation> => {
  if (guardrails.length === 0) return []
  const found = GuardrailCheck.violations(guardrails, rules.map(RuleSet.fromRecord), context)
  if (found.length === 0) return []
  const names = new Map(rules.map((r) => [r.id as string, r.name]))
  return found.map(({ flow, guardrail, route, verdict }) =>
    GuardrailViolation.make({
      guardrail_id: guardrail.id,
      name: guardrail.name,
      vpc_id: vpcId,
      flow: {
        direction: flow.direction,
        protocol: flow.protocol,
        port: flow.port,
        remote_ip: flow.remote.kind === "ip" ? Net.formatIpv4(flow.remote.ip) : "",
        local: { pod_id: flow.local.pod_id ?? null, subnet_id: flow.local.subnet_id ?? null }
      },
      decided_by: verdict.decided_by.kind === "rule"
        ? { kind: "rule", rule_id: verdict.decided_by.rule_id, name: names.get(verdict.decided_by.rule_id) ?? "" }
        : verdict.decided_by,
      route
    })
  )
}

/**
 * The refusal of a change that breaks guardrails: each named once in `detail`, though a
 * tenant-wide one broken in several VPCs has a violation (a witness) in each.
 */
export const violated = (violations: ReadonlyArray<GuardrailViolation>) => {
  const names = [...new Set(violations.map((v) => v.name))]
  return new GuardrailViolated({
    detail: `the change would break ${names.map((name) => `guardrail '${name}'`).join(", ")}: no change was made`,
    violations
  })
}

/** The violations in `vpcId` on `state`, with its rules and context as the state holds them. */
export const violationsIn = (state: TenantState, vpcId: VpcId, peeringCidr: string | null) =>
  violationsOf(state, vpcId, state.rulesOf(vpcId), vpcContextOf(state, vpcId, peeringCidr))

/** What tells one violation from another: the guardrail and the witness flow. */
const violationKey = (v: GuardrailViolation) =>
  JSON.stringify([v.guardrail_id, v.flow.direction, v.flow.protocol, v.flow.port, v.flow.remote_ip, v.flow.local])

/**
 * The guardrail violations in `vpc` that the change from `before` to `after` brings: those
 * `after` holds and `before` did not (a violation already held is not this change's to answer
 * for). None in a VPC being deleted: it has left enforcement, nothing holds in it any more.
 */
export const violationsBrought = (
  before: TenantState,
  after: TenantState,
  vpc: VpcId,
  peeringCidr: string | null
): ReadonlyArray<GuardrailViolation> => {
  if (after.vpc(vpc)?.lifecycle !== "active") return []
  const found = violationsIn(after, vpc, peeringCidr)
  if (found.length === 0) return []
  const held = before.vpc(vpc) === undefined
    ? new Set<string>()
    : new Set(violationsIn(before, vpc, peeringCidr).map(violationKey))
  return found.filter((v) => !held.has(violationKey(v)))
}

/** The first two blocks of the VPC that overlap, or a block that overlaps the peering block. */
const overlapIn = (state: TenantState, vpcId: VpcId, peeringCidr: string | null): string | undefined => {
  const subnets = state.subnetsOf(vpcId).map((s) => ({ subnet: s, block: Net.cidrOf(s.cidr) }))
  const peering = peeringCidr === null ? null : Net.cidrOf(peeringCidr)
  for (const [i, a] of subnets.entries()) {
    if (peering !== null && Net.overlaps(a.block, peering)) {
      return `${a.subnet.cidr} overlaps the platform's peering subnet ${peeringCidr}`
    }
    for (const b of subnets.slice(i + 1)) {
      if (Net.overlaps(a.block, b.block)) {
        return `${b.subnet.cidr} overlaps subnet '${a.subnet.name}' (${a.subnet.cidr}) of VPC ${vpcId}`
      }
    }
  }
  return undefined
}

/**
 * The first pair of VPCs, one of them with blocks or rules the change writes, that an enabled
 * allow rule peers on `after` though their blocks overlap and did not on `before`: no route could
 * tell the two apart.
 */
const overlapPeered = (before: TenantState, after: TenantState, reach: Reach): string | undefined => {
  const changed = peeringsMoved(before, after, reach)
  const found = connectionsOf(after).overlaps
  const held = connectionsOf(before).overlaps
  for (const vpc of changed) {
    for (const [other, detail] of found.get(vpc) ?? []) {
      if (held.get(vpc)?.has(other)) continue
      return `cidr ${detail}: a rule naming another VPC peers the two, and peered VPCs must not overlap ` +
        "(no route could tell them apart)"
    }
  }
  return peersOverlapping(before, after, changed)
}

/**
 * Two peers of one VPC whose blocks overlap, one of them (or the VPC) among `changed`, where
 * `before` had no such pair: the VPC's router would hold two routes to one block.
 */
const peersOverlapping = (
  before: TenantState,
  after: TenantState,
  changed: ReadonlySet<VpcId>
): string | undefined => {
  const peersAfter = connectionsOf(after).peers
  const peersBefore = connectionsOf(before).peers
  const blocksOf = (state: TenantState, vpc: VpcId) => state.subnetsOf(vpc).map((s) => s.cidr)
  const hubs = new Set([...changed].flatMap((v) => [v, ...(peersAfter.get(v) ?? [])]))
  for (const hub of hubs) {
    const peers = [...(peersAfter.get(hub) ?? [])]
    for (const [i, a] of peers.entries()) {
      for (const b of peers.slice(i + 1)) {
        if (!changed.has(hub) && !changed.has(a) && !changed.has(b)) continue
        const overlap = Paths.overlapOf(blocksOf(after, a), blocksOf(after, b))
        if (overlap === undefined) continue
        const was = peersBefore.get(hub)
        if (was?.has(a) && was.has(b) && Paths.overlapOf(blocksOf(before, a), blocksOf(before, b)) !== undefined) {
          continue
        }
        const name = (v: VpcId) => after.vpc(v)?.name ?? v
        return `cidr ${overlap[0]} of VPC '${name(a)}' overlaps ${overlap[1]} of VPC '${name(b)}', and both ` +
          `would be peered with VPC '${name(hub)}': its router could not tell them apart`
      }
    }
  }
  return undefined
}

/** What a tenant's quotas count, as `state` holds it. */
export const countsOf = (state: TenantState): Quota.Counts => ({
  vpcs: state.vpcs.length,
  subnets: state.subnets.length,
  pods: state.pods.length
})

/**
 * The conflict the change from `before` to `after` leaves in what it reaches, if any: blocks
 * that overlap, peered VPCs that overlap, more rules than a VPC may hold, or, given the tenant's
 * `limits` (for a change that adds what they count), more than a quota allows. What `check`
 * refuses but the guardrails, which a preview answers as part of its impact instead.
 */
export const conflictOf = (
  before: TenantState,
  after: TenantState,
  reach: Reach,
  peeringCidr: string | null,
  limits?: Quota.Limits
): Conflict | undefined => {
  if (limits !== undefined) {
    const passed = Quota.passed(limits, countsOf(before), countsOf(after))
    if (passed !== undefined) return new Conflict({ detail: passed })
  }
  for (const vpc of reach.blocks) {
    if (after.vpc(vpc) === undefined) continue
    const overlap = overlapIn(after, vpc, peeringCidr)
    if (overlap !== undefined && overlapIn(before, vpc, peeringCidr) === undefined) {
      return new Conflict({ detail: `cidr ${overlap}` })
    }
  }
  const peerOverlap = overlapPeered(before, after, reach)
  if (peerOverlap !== undefined) return new Conflict({ detail: peerOverlap })
  for (const vpc of reach.rules) {
    const count = after.rulesOf(vpc).length
    if (count > MAX_RULES_PER_VPC && count > before.rulesOf(vpc).length) {
      return new Conflict({ detail: `VPC ${vpc} would hold ${count} rules; it may have at most ${MAX_RULES_PER_VPC}` })
    }
  }
  return undefined
}

/**
 * The change from `before` to `after` refused when it leaves a conflict (`conflictOf`) or, in
 * what it reaches, guardrail violations it brought (a violation `before` already held is not
 * this change's to answer for).
 */
export const check = (
  before: TenantState,
  after: TenantState,
  reach: Reach,
  peeringCidr: string | null,
  limits?: Quota.Limits
): Either.Either<void, Conflict | GuardrailViolated> => {
  const conflict = conflictOf(before, after, reach, peeringCidr, limits)
  if (conflict !== undefined) return Either.left(conflict)
  const violations = [...reach.vpcs].flatMap((vpc) => violationsBrought(before, after, vpc, peeringCidr))
  return violations.length === 0 ? Either.void : Either.left(violated(violations))
}
