/**
 * The tenant's topology as a picture: each VPC a column holding its subnets, each subnet its
 * pods (coloured by phase) with their tunnels' hostnames; arcs above the columns are the rules
 * that name another VPC as their remote, pointing the way the traffic they decide goes.
 */
import type { Rule, TopologyPod, TopologySubnet, TopologyView, TopologyVpc } from "./Views.js"
const COLUMN = 300
const GAP = 48
const TOP = 110
const VPC_HEAD = 46
const SUBNET_HEAD = 30
const POD = 34
const TUNNEL = 16
const PAD = 10

/** A pod's phase as a colour class; the phase is also written out. */
export const phaseClass = (phase: string) =>
  phase === "running"
    ? "ok"
    : phase === "pending" || phase === "degraded" || phase === "deleting"
    ? "warn"
    : phase === "stopped" || phase === "unknown"
    ? "idle"
    : "bad"

const podHeight = (pod: TopologyPod) => POD + pod.tunnels.length * TUNNEL
const subnetHeight = (subnet: TopologySubnet) =>
  SUBNET_HEAD + subnet.pods.reduce((h, p) => h + podHeight(p) + 6, 0) + PAD
const vpcHeight = (vpc: TopologyVpc) => VPC_HEAD + vpc.subnets.reduce((h, s) => h + subnetHeight(s) + PAD, 0) + PAD

/** Rules of one VPC that name another: the traffic goes from `from` to `to`. */
export interface Reference {
  readonly from: string
  readonly to: string
  readonly rules: ReadonlyArray<Rule>
}

/** The VPC-to-VPC references of the tenant's rules, one per ordered pair of VPCs. */
export const referencesOf = (rulesByVpc: ReadonlyMap<string, ReadonlyArray<Rule>>) => {
  const pairs = new Map<string, Reference>()
  for (const [vpcId, rules] of rulesByVpc) {
    for (const rule of rules) {
      if (rule.remote_type !== "vpc" || rule.remote_vpc_id === null || rule.remote_vpc_id === vpcId) continue
      const [from, to] = rule.direction === "ingress" ? [rule.remote_vpc_id, vpcId] : [vpcId, rule.remote_vpc_id]
      const key = `${from}>${to}`
      const known = pairs.get(key)
      pairs.set(key, { from, to, rules: [...(known?.rules ?? []), rule] })
    }
  }
  return [...pairs.values()]
}

const truncate = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

const describeRule = (r: Rule) =>
  `${r.name}: ${r.action} ${r.protocol}${r.ports === null ? "" : ` ${r.ports}`}${r.enabled ? "" : " (disabled)"}`

export const TopologyGraph = (
  { references, topology }: { topology: TopologyView; references: ReadonlyArray<Reference> }
) => {
  const column = new Map(topology.vpcs.map((v, i) => [v.id as string, i]))
  const width = Math.max(1, topology.vpcs.length) * (COLUMN + GAP)
  const height = TOP + Math.max(120, ...topology.vpcs.map(vpcHeight)) + 20
  const centre = (i: number) => i * (COLUMN + GAP) + COLUMN / 2
  return (
    <svg
      class="topology"
      viewBox={`0 0 ${width} ${height}`}
      width={width}
      height={height}
      role="group"
      aria-labelledby="topology-title"
    >
      <title id="topology-title">
        {`Topology: ${topology.vpcs.length} VPCs, ${references.length} VPC-to-VPC rule references`}
      </title>
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">
          <path d="M0,0 L10,5 L0,10 z" class="arrowhead" />
        </marker>
      </defs>
      {references.map((ref, n) => {
        const a = column.get(ref.from)
        const b = column.get(ref.to)
        if (a === undefined || b === undefined) return null
        const x1 = centre(a) + (a < b ? 30 : -30)
        const x2 = centre(b) + (a < b ? -30 : 30)
        const lift = 30 + (n % 3) * 18 + Math.abs(b - a) * 8
        const actions = new Set(ref.rules.map((r) => r.action))
        const kind = actions.size > 1 ? "mixed" : actions.has("allow") ? "allow" : "deny"
        const label = ref.rules.length === 1 ? describeRule(ref.rules[0]!) : `${ref.rules.length} rules`
        return (
          <g class={`reference ${kind}`} key={`${ref.from}>${ref.to}`}>
            <title>{ref.rules.map(describeRule).join("\n")}</title>
            <path
              d={`M${x1},${TOP} C${x1},${TOP - lift} ${x2},${TOP - lift} ${x2},${TOP}`}
              marker-end="url(#arrow)"
            />
            <text x={(x1 + x2) / 2} y={TOP - lift * 0.75 - 4} text-anchor="middle">{truncate(label, 40)}</text>
          </g>
        )
      })}
      {topology.vpcs.map((vpc, i) => {
        const x = i * (COLUMN + GAP)
        let y = TOP + VPC_HEAD
        return (
          <g class="vpc" key={vpc.id}>
            <rect x={x} y={TOP} width={COLUMN} height={vpcHeight(vpc)} rx="10" />
            <a href={`#/vpcs/${vpc.id}`} aria-label={`VPC ${vpc.name}`}>
              <text x={x + 14} y={TOP + 26} class="vpc-name">{truncate(vpc.name, 24)}</text>
            </a>
            <text
              x={x + COLUMN - 12}
              y={TOP + 26}
              text-anchor="end"
              class={vpc.applied && vpc.lifecycle === "active" ? "state ok" : "state bad"}
            >
              {vpc.lifecycle === "deleting" ? "being deleted" : vpc.applied ? "applied" : "not applied"}
              {vpc.enable_internet ? " · internet" : ""}
            </text>
            {vpc.subnets.map((subnet) => {
              const top = y
              y += subnetHeight(subnet) + PAD
              let podY = top + SUBNET_HEAD
              return (
                <g class="subnet" key={subnet.id}>
                  <rect x={x + PAD} y={top} width={COLUMN - 2 * PAD} height={subnetHeight(subnet)} rx="6" />
                  <text x={x + 2 * PAD} y={top + 20}>
                    <tspan class="subnet-name">{truncate(subnet.name, 18)}</tspan>
                    <tspan dx="8" class="muted">{subnet.cidr}</tspan>
                  </text>
                  {subnet.pods.map((pod) => {
                    const py = podY
                    podY += podHeight(pod) + 6
                    const phase = pod.status.phase
                    return (
                      <g class={`pod ${phaseClass(phase)}`} key={pod.id}>
                        <rect x={x + 2 * PAD} y={py} width={COLUMN - 4 * PAD} height={podHeight(pod)} rx="5" />
                        <circle cx={x + 3 * PAD + 2} cy={py + 17} r="5" class="dot" />
                        <text x={x + 4 * PAD + 2} y={py + 21}>
                          {truncate(pod.name, 18)}
                          <tspan dx="8" class="muted">
                            {`${phase} ${pod.status.ready_replicas}/${pod.status.desired_replicas}`}
                          </tspan>
                        </text>
                        {pod.tunnels.map((t, k) => (
                          // A hostname is as long as its tenant made it (up to 253 characters): laid
                          // out by the browser, it ends in an ellipsis at the pod's edge, its status
                          // kept in view and the whole of it in the tooltip. Counting characters
                          // cannot know how wide they are drawn.
                          <foreignObject
                            key={t.id}
                            x={x + 4 * PAD + 2}
                            y={py + POD + k * TUNNEL - 10}
                            width={COLUMN - 6 * PAD - 10}
                            height={TUNNEL}
                          >
                            <div class={`tunnel ${t.status}`} title={`${t.hostname} (${t.status})`}>
                              <span class="hostname">⇄ {t.hostname}</span>
                              <span class="tunnel-status">({t.status})</span>
                            </div>
                          </foreignObject>
                        ))}
                      </g>
                    )
                  })}
                </g>
              )
            })}
          </g>
        )
      })}
    </svg>
  )
}
