/** The flow checker: one flow's verdict, and the rule (or implied default) that decides it. */
import type { Ids, SecurityRule } from "@tenet/core"
import { useState } from "preact/hooks"
import type { Choices } from "./RuleEditor.js"
import { type Client, problem } from "./Session.js"

export const FlowChecker = ({ choices, client, vpcId }: { client: Client; vpcId: Ids.VpcId; choices: Choices }) => {
  const [direction, setDirection] = useState<"ingress" | "egress">("ingress")
  const [protocol, setProtocol] = useState<"tcp" | "udp" | "icmp">("tcp")
  const [port, setPort] = useState("443")
  const [remote, setRemote] = useState("203.0.113.10")
  const [target, setTarget] = useState("")
  const [verdict, setVerdict] = useState<SecurityRule.FlowVerdict | null>(null)
  const [error, setError] = useState<string | null>(null)
  const check = async (event: Event) => {
    event.preventDefault()
    setError(null)
    setVerdict(null)
    const remoteVpc = choices.vpcs.find((v) => v.id === remote)
    const [kind, id] = target.split(":")
    try {
      setVerdict(
        await client.securityRules.evaluate({
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
      )
    } catch (e) {
      setError(problem(e))
    }
  }
  return (
    <form class="inline checker" onSubmit={check} aria-label="Flow checker">
      <label>
        Direction
        <select
          name="flow-direction"
          value={direction}
          onChange={(e) => setDirection(e.currentTarget.value as "ingress")}
        >
          <option value="ingress">ingress</option>
          <option value="egress">egress</option>
        </select>
      </label>
      <label>
        Protocol
        <select name="flow-protocol" value={protocol} onChange={(e) => setProtocol(e.currentTarget.value as "tcp")}>
          <option value="tcp">tcp</option>
          <option value="udp">udp</option>
          <option value="icmp">icmp</option>
        </select>
      </label>
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
      <label>
        Local end
        <select name="flow-target" value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
          <option value="">anywhere in the VPC</option>
          {choices.subnets.map((s) => <option key={s.id} value={`subnet:${s.id}`}>{`subnet ${s.name}`}</option>)}
          {choices.pods.map((p) => <option key={p.id} value={`pod:${p.id}`}>{`pod ${p.name}`}</option>)}
        </select>
      </label>
      <button type="submit">Check flow</button>
      {error !== null && <p role="alert" class="error">{error}</p>}
      {verdict !== null && (
        <p class={`verdict ${verdict.allowed ? "allowed" : "denied"}`} role="status">
          {verdict.allowed ? "Allowed" : "Denied"} by{" "}
          {verdict.decided_by.kind === "rule" ? `rule '${verdict.decided_by.name}'` : verdict.decided_by.key}
        </p>
      )}
    </form>
  )
}
