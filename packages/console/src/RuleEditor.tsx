/**
 * A rule's form, for a new rule or an edit. "Preview impact" sends the change as a dry run and
 * shows what it would open and close; "Save" makes it. Both are the API's own answers.
 */
import type { Ids, SecurityRule } from "@tenet/core"
import { useState } from "preact/hooks"
import { ImpactView } from "./ImpactView.js"
import type { Names } from "./Names.js"
import { type Client, problem } from "./Session.js"

export interface Choices {
  readonly vpcs: ReadonlyArray<{ readonly id: Ids.VpcId; readonly name: string }>
  readonly subnets: ReadonlyArray<{ readonly id: Ids.SubnetId; readonly name: string }>
  readonly pods: ReadonlyArray<{ readonly id: Ids.PodId; readonly name: string }>
}

interface Draft {
  name: string
  direction: "ingress" | "egress"
  action: "allow" | "deny"
  priority: string
  protocol: "tcp" | "udp" | "icmp" | "all"
  ports: string
  remote_type: "cidr" | "vpc"
  remote_cidr: string
  remote_vpc_id: string
  target_type: "vpc" | "subnet" | "pods"
  target_subnet_id: string
  target_pod_ids: Array<string>
  enabled: boolean
}

const draftOf = (rule: SecurityRule.SecurityRule | null, choices: Choices): Draft => ({
  name: rule?.name ?? "",
  direction: rule?.direction ?? "ingress",
  action: rule?.action ?? "allow",
  priority: String(rule?.priority ?? 1000),
  protocol: rule?.protocol ?? "tcp",
  ports: rule?.ports ?? "",
  remote_type: rule?.remote_type ?? "cidr",
  remote_cidr: rule?.remote_cidr ?? "0.0.0.0/0",
  remote_vpc_id: rule?.remote_vpc_id ?? choices.vpcs[0]?.id ?? "",
  target_type: rule?.target_type ?? "vpc",
  target_subnet_id: rule?.target_subnet_id ?? choices.subnets[0]?.id ?? "",
  target_pod_ids: [...(rule?.target_pod_ids ?? [])],
  enabled: rule?.enabled ?? true
})

/** The draft as the API's fields: what the form does not apply to is null. */
const fieldsOf = (d: Draft) => ({
  name: d.name,
  direction: d.direction,
  action: d.action,
  priority: Number(d.priority),
  protocol: d.protocol,
  ports: d.protocol === "tcp" || d.protocol === "udp" ? (d.ports.trim() === "" ? null : d.ports.trim()) : null,
  remote_type: d.remote_type,
  remote_cidr: d.remote_type === "cidr" ? d.remote_cidr.trim() : null,
  remote_vpc_id: d.remote_type === "vpc" ? (d.remote_vpc_id as Ids.VpcId) : null,
  target_type: d.target_type,
  target_subnet_id: d.target_type === "subnet" ? (d.target_subnet_id as Ids.SubnetId) : null,
  target_pod_ids: d.target_type === "pods" ? (d.target_pod_ids as Array<Ids.PodId>) : null,
  enabled: d.enabled
})

export const RuleEditor = ({ choices, client, names, onDone, rule, vpcId }: {
  client: Client
  vpcId: Ids.VpcId
  rule: SecurityRule.SecurityRule | null
  choices: Choices
  names: Names
  onDone: (saved: boolean) => void
}) => {
  const [draft, setDraft] = useState<Draft>(() => draftOf(rule, choices))
  const [impact, setImpact] = useState<SecurityRule.RuleImpact | null>(null)
  const [error, setError] = useState<string | null>(null)
  const set = <K extends keyof Draft>(key: K) => (value: Draft[K]) => {
    setDraft((d) => ({ ...d, [key]: value }))
    setImpact(null)
  }
  const preview = async () => {
    setError(null)
    const fields = fieldsOf(draft)
    const urlParams = { dry_run: true } as const
    try {
      setImpact(
        rule === null
          ? await client.securityRules.create({ payload: { ...fields, vpc_id: vpcId }, urlParams })
          : await client.securityRules.update({ path: { rule_id: rule.id }, payload: fields, urlParams })
      )
    } catch (e) {
      setError(problem(e))
    }
  }
  const save = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const fields = fieldsOf(draft)
    try {
      await (rule === null
        ? client.securityRules.create({ payload: { ...fields, vpc_id: vpcId } })
        : client.securityRules.update({ path: { rule_id: rule.id }, payload: fields }))
      onDone(true)
    } catch (e) {
      setError(problem(e))
    }
  }
  const ported = draft.protocol === "tcp" || draft.protocol === "udp"
  return (
    <form class="editor" onSubmit={save} aria-label={rule === null ? "New rule" : `Edit rule ${rule.name}`}>
      <h3>{rule === null ? "New rule" : `Edit rule '${rule.name}'`}</h3>
      <div class="fields">
        <label>
          Name{" "}
          <input name="rule-name" required value={draft.name} onInput={(e) => set("name")(e.currentTarget.value)} />
        </label>
        <label>
          Direction
          <select
            name="direction"
            value={draft.direction}
            onChange={(e) => set("direction")(e.currentTarget.value as Draft["direction"])}
          >
            <option value="ingress">ingress</option>
            <option value="egress">egress</option>
          </select>
        </label>
        <label>
          Action
          <select
            name="action"
            value={draft.action}
            onChange={(e) => set("action")(e.currentTarget.value as Draft["action"])}
          >
            <option value="allow">allow</option>
            <option value="deny">deny</option>
          </select>
        </label>
        <label>
          Priority
          <input
            name="priority"
            type="number"
            min="1"
            max="4096"
            required
            value={draft.priority}
            onInput={(e) => set("priority")(e.currentTarget.value)}
          />
        </label>
        <label>
          Protocol
          <select
            name="protocol"
            value={draft.protocol}
            onChange={(e) => set("protocol")(e.currentTarget.value as Draft["protocol"])}
          >
            <option value="tcp">tcp</option>
            <option value="udp">udp</option>
            <option value="icmp">icmp</option>
            <option value="all">all</option>
          </select>
        </label>
        {ported && (
          <label>
            Ports{" "}
            <input
              name="ports"
              placeholder="all; or 80,443,8000-8080"
              value={draft.ports}
              onInput={(e) => set("ports")(e.currentTarget.value)}
            />
          </label>
        )}
        <label>
          Remote
          <select
            name="remote-type"
            value={draft.remote_type}
            onChange={(e) => set("remote_type")(e.currentTarget.value as Draft["remote_type"])}
          >
            <option value="cidr">address block</option>
            <option value="vpc">VPC</option>
          </select>
        </label>
        {draft.remote_type === "cidr"
          ? (
            <label>
              Block{" "}
              <input
                name="remote-cidr"
                required
                value={draft.remote_cidr}
                onInput={(e) => set("remote_cidr")(e.currentTarget.value)}
              />
            </label>
          )
          : (
            <label>
              Remote VPC
              <select
                name="remote-vpc"
                value={draft.remote_vpc_id}
                onChange={(e) => set("remote_vpc_id")(e.currentTarget.value)}
              >
                {choices.vpcs.map((v) => <option key={v.id} value={v.id}>{v.name}</option>)}
              </select>
            </label>
          )}
        <label>
          Target
          <select
            name="target-type"
            value={draft.target_type}
            onChange={(e) => set("target_type")(e.currentTarget.value as Draft["target_type"])}
          >
            <option value="vpc">whole VPC</option>
            <option value="subnet">a subnet</option>
            <option value="pods">pods</option>
          </select>
        </label>
        {draft.target_type === "subnet" && (
          <label>
            Subnet
            <select
              name="target-subnet"
              value={draft.target_subnet_id}
              onChange={(e) => set("target_subnet_id")(e.currentTarget.value)}
            >
              {choices.subnets.map((s) => <option key={s.id} value={s.id}>{s.name}</option>)}
            </select>
          </label>
        )}
        {draft.target_type === "pods" && (
          <fieldset>
            <legend>Pods</legend>
            {choices.pods.map((p) => (
              <label key={p.id}>
                <input
                  type="checkbox"
                  checked={draft.target_pod_ids.includes(p.id)}
                  onChange={(e) =>
                    set("target_pod_ids")(
                      e.currentTarget.checked
                        ? [...draft.target_pod_ids, p.id]
                        : draft.target_pod_ids.filter((id) => id !== p.id)
                    )}
                />{" "}
                {p.name}
              </label>
            ))}
          </fieldset>
        )}
        <label>
          <input type="checkbox" checked={draft.enabled} onChange={(e) => set("enabled")(e.currentTarget.checked)} />
          {" "}
          Enabled
        </label>
      </div>
      {error !== null && <p role="alert" class="error">{error}</p>}
      {impact !== null && <ImpactView impact={impact} names={names} />}
      <div class="actions">
        <button type="button" onClick={preview}>Preview impact</button>
        <button type="submit" class="primary">Save rule</button>
        <button type="button" onClick={() => onDone(false)}>Cancel</button>
      </div>
    </form>
  )
}
