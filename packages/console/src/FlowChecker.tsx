/**
 * The flow checker: a half's question (one VPC's rules, one direction), answered as every
 * answer about traffic is: allowed (every flow), partial (some) or denied (none), with what
 * decides a flow of each side.
 */
import type { FlowReach, Ids } from "@tenet/core"
import { useState } from "preact/hooks"
import { Choice, Problem, useSubmit } from "./Forms.js"
import type { Choices } from "./RuleEditor.js"
import type { Client } from "./Session.js"

const decider = (d: FlowReach.DecidedFlow) =>
  d.decided_by.kind === "rule"
    ? `rule '${d.decided_by.name}'`
    : d.decided_by.kind === "path"
    ? `its path: ${d.decided_by.detail}`
    : d.decided_by.key

const flowText = (d: FlowReach.DecidedFlow) => `${d.flow.direction === "ingress" ? "from" : "to"} ${d.flow.remote_ip}`

export const FlowChecker = ({ choices, client, vpcId }: { client: Client; vpcId: Ids.VpcId; choices: Choices }) => {
  const [direction, setDirection] = useState<"ingress" | "egress">("ingress")
  const [protocol, setProtocol] = useState<"tcp" | "udp" | "icmp">("tcp")
  const [port, setPort] = useState("443")
  const [remote, setRemote] = useState("203.0.113.10")
  const [target, setTarget] = useState("")
  const [verdict, setVerdict] = useState<FlowReach.FlowVerdict | null>(null)
  const { error, submit } = useSubmit(() => {
    setVerdict(null)
    const remoteVpc = choices.vpcs.find((v) => v.id === remote)
    const [kind, id] = target.split(":")
    return client.securityRules.evaluate({
      payload: {
        vpc_id: vpcId,
        direction,
        protocol,
        ...(protocol === "icmp" ? {} : { port: Number(port) }),
        ...(remoteVpc === undefined ? { remote_ip: remote.trim() } : { remote_vpc_id: remoteVpc.id }),
        ...(kind === "subnet" ? { target_subnet_id: id as Ids.SubnetId } : {}),
        ...(kind === "pod" ? { target_pod_id: id as Ids.PodId } : {})
      }
    })
  }, setVerdict)
  return (
    <form class="inline checker" onSubmit={submit} aria-label="Flow checker">
      <Choice
        label="Direction"
        name="flow-direction"
        value={direction}
        options={[["ingress", "ingress"], ["egress", "egress"]]}
        onChange={setDirection}
      />
      <Choice
        label="Protocol"
        name="flow-protocol"
        value={protocol}
        options={[["tcp", "tcp"], ["udp", "udp"], ["icmp", "icmp"]]}
        onChange={setProtocol}
      />
      {protocol !== "icmp" && (
        <label>
          Port{" "}
          <input
            name="flow-port"
            type="number"
            min="1"
            max="65535"
            value={port}
            onInput={(e) => setPort(e.currentTarget.value)}
          />
        </label>
      )}
      <label>
        Remote address or VPC
        <input
          name="flow-remote"
          list="flow-remote-vpcs"
          value={remote}
          onInput={(e) => setRemote(e.currentTarget.value)}
        />
        <datalist id="flow-remote-vpcs">
          {choices.vpcs.map((v) => <option key={v.id} value={v.id}>{`VPC ${v.name}`}</option>)}
        </datalist>
      </label>
      <Choice
        label="Local end"
        name="flow-target"
        value={target}
        options={[
          ["", "anywhere in the VPC"],
          ...choices.subnets.map((s) => [`subnet:${s.id}`, `subnet ${s.name}`] as const),
          ...choices.pods.map((p) => [`pod:${p.id}`, `pod ${p.name}`] as const)
        ]}
        onChange={setTarget}
      />
      <button type="submit">Check flow</button>
      <Problem error={error} />
      {verdict !== null && (
        <p class={`verdict ${verdict.reach}`} role="status">
          {verdict.reach === "allowed"
            ? `Allowed by ${decider(verdict.allowed_flow!)}`
            : verdict.reach === "denied"
            ? verdict.denied_flow === null
              ? "Denied: no flow (nothing to send to)"
              : `Denied by ${decider(verdict.denied_flow)}`
            : `Partly: allowed by ${decider(verdict.allowed_flow!)} (e.g. ${
              flowText(verdict.allowed_flow!)
            }), denied by ${decider(verdict.denied_flow!)} (e.g. ${flowText(verdict.denied_flow!)})`}
        </p>
      )}
    </form>
  )
}
