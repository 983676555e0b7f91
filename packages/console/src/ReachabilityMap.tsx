/**
 * The reachability matrix as a heat map: a row per source, a column per destination, each
 * cell as dark as the share of the port space every flow gets through on, and saying which
 * ports; what only some flows get through on is marked `some`.
 */
import type { ReachabilityMatrix } from "@tenet/core"

type Endpoint = ReachabilityMatrix.ReachabilityEndpoint
type Pair = ReachabilityMatrix.ReachabilityPair

const keyOf = (e: Endpoint) =>
  e.kind === "subnet" ? e.subnet_id : e.kind === "pod" ? e.pod_id : e.kind === "vpc" ? e.vpc_id : "internet"

const labelOf = (e: Endpoint) =>
  e.kind === "internet"
    ? "internet"
    : e.kind === "vpc"
    ? `VPC ${e.name}`
    : e.kind === "pod"
    ? `pod ${e.name}`
    : `subnet ${e.name}`

/** How many ports a range list (`22,80-443`) holds. */
const portCount = (ranges: string) =>
  ranges === ""
    ? 0
    : ranges.split(",").reduce((n, r) => {
      const [from, to] = r.split("-").map(Number)
      return n + (to ?? from!) - from! + 1
    }, 0)

/** The share of tcp, udp and icmp every flow gets through on, 0..1, as one of five shades. */
export const shadeOf = (pair: Pair) => {
  const share = (portCount(pair.tcp.allowed) / 65535 + portCount(pair.udp.allowed) / 65535 +
    (pair.icmp.reach === "allowed" ? 1 : 0)) /
    3
  return share === 0 ? 0 : share >= 0.999 ? 4 : share > 0.5 ? 3 : share > 0.05 ? 2 : 1
}

const ports = (name: string, p: ReachabilityMatrix.PortsReach) => [
  ...(p.allowed === "" ? [] : [p.allowed === "1-65535" ? name : `${name} ${p.allowed}`]),
  ...(p.partial === "" ? [] : [`${name} ${p.partial} (some)`])
]

const summary = (pair: Pair) => {
  const partial = pair.tcp.partial !== "" || pair.udp.partial !== "" || pair.icmp.reach === "partial"
  if (shadeOf(pair) === 4 && !partial) return "all"
  const parts = [
    ...ports("tcp", pair.tcp),
    ...ports("udp", pair.udp),
    ...(pair.icmp.reach === "allowed" ? ["icmp"] : pair.icmp.reach === "partial" ? ["icmp (some)"] : [])
  ]
  return parts.length === 0 ? "none" : parts.join("; ")
}

export const ReachabilityMap = ({ matrix }: { matrix: { readonly pairs: ReadonlyArray<Pair> } }) => {
  const endpoints = new Map<string, Endpoint>()
  for (const p of matrix.pairs) {
    endpoints.set(keyOf(p.from), p.from)
    endpoints.set(keyOf(p.to), p.to)
  }
  const order = [...endpoints.values()].sort((a, b) => rank(a) - rank(b))
  const pairs = new Map(matrix.pairs.map((p) => [`${keyOf(p.from)}>${keyOf(p.to)}`, p]))
  return (
    <div class="heatmap-wrap">
      <table class="heatmap">
        <caption>Allowed end to end, from a row to a column (darker: more of tcp, udp and icmp)</caption>
        <thead>
          <tr>
            <th scope="col">from \ to</th>
            {order.map((e) => <th scope="col" key={keyOf(e)}>{labelOf(e)}</th>)}
          </tr>
        </thead>
        <tbody>
          {order.map((from) => (
            <tr key={keyOf(from)}>
              <th scope="row">{labelOf(from)}</th>
              {order.map((to) => {
                const pair = pairs.get(`${keyOf(from)}>${keyOf(to)}`)
                if (pair === undefined) return <td key={keyOf(to)} class="na">–</td>
                return (
                  <td
                    key={keyOf(to)}
                    class={`shade-${shadeOf(pair)}`}
                    title={`${labelOf(from)} → ${labelOf(to)}: ${summary(pair)}`}
                  >
                    {summary(pair)}
                  </td>
                )
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

const rank = (e: Endpoint) => (e.kind === "subnet" ? 0 : e.kind === "pod" ? 1 : e.kind === "vpc" ? 2 : 3)
