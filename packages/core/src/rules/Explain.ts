/**
 * One side of a flow between two endpoints, explained exactly: an endpoint is a set of local
 * endpoints (atoms, as in `Analysis`) and addresses, so a side's verdict is the worst over
 * every flow between them. The direction's partition (`Impact.partition`) is walked for the
 * parts the pair's flows fall in: the first that denies decides (with a flow of it as the
 * witness), else the first that allows, the core network (a gateway in a subnet's block) only
 * when nothing else does. Pure.
 */
import type { Direction, FlowProtocol } from "../domain/SecurityRule.js"
import * as Analysis from "./Analysis.js"
import type { Verdict } from "./Evaluate.js"
import { INFRASTRUCTURE } from "./Evaluate.js"
import * as Impact from "./Impact.js"
import type { Flow, Rule, VpcContext } from "./RuleSet.js"

export type Interval = readonly [number, number]

/** An end of a flow: the local endpoints it stands for (in its VPC) and its addresses. */
export interface Side {
  readonly atoms: ReadonlySet<string>
  readonly addresses: ReadonlyArray<Interval>
}

export interface Decided {
  readonly verdict: Verdict
  readonly flow: Flow
}

/**
 * The verdict in `context` of the flows of `protocol`/`port` between `local` (this VPC's end)
 * and the `remote` addresses; null when they hold no flow (an empty side).
 */
export const side = (
  rules: ReadonlyArray<Rule>,
  context: VpcContext,
  direction: Direction,
  protocol: FlowProtocol,
  port: number | null,
  local: Side,
  remote: ReadonlyArray<Interval>
): Decided | null => {
  const ports = protocol === "icmp" ? Analysis.NO_PORT : [port!, port!] as const
  const boxes = remote.map((r) => ({ protocol, ports, remote: r, locals: local.atoms }))
  let allowed: Decided | null = null
  let infrastructure: Decided | null = null
  for (const part of Impact.partition(rules, context, direction)) {
    for (const box of boxes) {
      const hit = Impact.intersection(part.box, box)
      if (hit === null) continue
      const decided = { verdict: part.verdict, flow: Analysis.witness(hit, direction) }
      if (part.verdict.action === "deny") return decided
      if (part.verdict === INFRASTRUCTURE) infrastructure ??= decided
      else allowed ??= decided
    }
  }
  return allowed ?? infrastructure
}
