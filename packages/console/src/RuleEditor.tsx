/**
 * A rule's form, for a new rule or an edit. "Preview impact" sends the change as a dry run and
 * shows what it would open and close; "Save" makes it, unless the preview showed a guardrail it
 * would break (until the rule is changed again). Both are the API's own answers.
 */
import type { Ids, SecurityRule } from "@tenet/core"
import { useState } from "preact/hooks"
import { Choice, Problem, TextField, useCall, useSubmit } from "./Forms.js"
import { ImpactView } from "./ImpactView.js"
import type { Names } from "./Names.js"
import type { Client } from "./Session.js"
import type { Rule } from "./Views.js"

export interface Choices {
  readonly vpcs: ReadonlyArray<{ readonly id: Ids.VpcId; readonly name: string }>
  readonly subnets: ReadonlyArray<{ readonly id: Ids.SubnetId; readonly name: string }>
  readonly pods: ReadonlyArray<{ readonly id: Ids.PodId; readonly name: string }>
  readonly addressSets: ReadonlyArray<{ readonly id: Ids.AddressSetId; readonly name: string }>
}

interface Draft {
  name: string
  direction: "ingress" | "egress"
  action: "allow" | "deny"
  priority: string
  protocol: "tcp" | "udp" | "icmp" | "all"
  ports: string
  remote_type: "cidr" | "vpc" | "address_set"
  remote_cidr: string
  remote_vpc_id: string
  remote_address_set_id: string
  target_type: "vpc" | "subnet" | "pods"
  target_subnet_id: string
  target_pod_ids: Array<string>
  enabled: boolean
}

const draftOf = (rule: Rule | null, choices: Choices): Draft => ({
  name: rule?.name ?? "",
  direction: rule?.direction ?? "ingress",
  action: rule?.action ?? "allow",
  priority: String(rule?.priority ?? 1000),
  protocol: rule?.protocol ?? "tcp",
  ports: rule?.ports ?? "",
  remote_type: rule?.remote_type ?? "cidr",
  remote_cidr: rule?.remote_cidr ?? "0.0.0.0/0",
  remote_vpc_id: rule?.remote_vpc_id ?? choices.vpcs[0]?.id ?? "",
  remote_address_set_id: rule?.remote_address_set_id ?? choices.addressSets[0]?.id ?? "",
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
  remote_address_set_id: d.remote_type === "address_set" ? (d.remote_address_set_id as Ids.AddressSetId) : null,
  target_type: d.target_type,
  target_subnet_id: d.target_type === "subnet" ? (d.target_subnet_id as Ids.SubnetId) : null,
  target_pod_ids: d.target_type === "pods" ? (d.target_pod_ids as Array<Ids.PodId>) : null,
  enabled: d.enabled
})

const DIRECTIONS = [["ingress", "ingress"], ["egress", "egress"]] as const
const ACTIONS = [["allow", "allow"], ["deny", "deny"]] as const
const PROTOCOLS = [["tcp", "tcp"], ["udp", "udp"], ["icmp", "icmp"], ["all", "all"]] as const
const REMOTES = [["cidr", "address block"], ["vpc", "VPC"], ["address_set", "address set"]] as const
const TARGETS = [["vpc", "whole VPC"], ["subnet", "a subnet"], ["pods", "pods"]] as const

export const RuleEditor = ({ choices, client, names, onDone, rule, vpcId }: {
  client: Client
  vpcId: Ids.VpcId
  rule: Rule | null
  choices: Choices
  names: Names
  onDone: (saved: boolean) => void
}) => {
  const [draft, setDraft] = useState<Draft>(() => draftOf(rule, choices))
  const [impact, setImpact] = useState<SecurityRule.RuleImpact | null>(null)
  const set = <K extends keyof Draft>(key: K) => (value: Draft[K]) => {
    setDraft((d) => ({ ...d, [key]: value }))
    setImpact(null)
  }
  const dryRun = { dry_run: true } as const
  const preview = useCall(
    () =>
      rule === null
        ? client.securityRules.create({ payload: { ...fieldsOf(draft), vpc_id: vpcId }, urlParams: dryRun })
        : client.securityRules.update({ path: { rule_id: rule.id }, payload: fieldsOf(draft), urlParams: dryRun }),
    setImpact
  )
  const { error, submit } = useSubmit(
    () =>
      rule === null
        ? client.securityRules.create({ payload: { ...fieldsOf(draft), vpc_id: vpcId } })
        : client.securityRules.update({ path: { rule_id: rule.id }, payload: fieldsOf(draft) }),
    () => onDone(true)
  )
  const ported = draft.protocol === "tcp" || draft.protocol === "udp"
  // The change previewed would break a guardrail: the API would refuse it, so it is not offered.
  const refused = impact !== null && impact.violations.length > 0
  return (
    <form class="editor" onSubmit={submit} aria-label={rule === null ? "New rule" : `Edit rule ${rule.name}`}>
      <h3>{rule === null ? "New rule" : `Edit rule '${rule.name}'`}</h3>
      <div class="fields">
        <TextField label="Name" name="rule-name" required value={draft.name} onInput={set("name")} />
        <Choice
          label="Direction"
          name="direction"
          value={draft.direction}
          options={DIRECTIONS}
          onChange={set("direction")}
        />
        <Choice label="Action" name="action" value={draft.action} options={ACTIONS} onChange={set("action")} />
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
        <Choice
          label="Protocol"
          name="protocol"
          value={draft.protocol}
          options={PROTOCOLS}
          onChange={set("protocol")}
        />
        {ported && (
          <TextField
            label="Ports"
            name="ports"
            placeholder="all; or 80,443,8000-8080"
            value={draft.ports}
            onInput={set("ports")}
          />
        )}
        <Choice
          label="Remote"
          name="remote-type"
          value={draft.remote_type}
          options={REMOTES}
          onChange={set("remote_type")}
        />
        {draft.remote_type === "cidr"
          ? (
            <TextField
              label="Block"
              name="remote-cidr"
              required
              value={draft.remote_cidr}
              onInput={set("remote_cidr")}
            />
          )
          : draft.remote_type === "vpc"
          ? (
            <Choice
              label="Remote VPC"
              name="remote-vpc"
              value={draft.remote_vpc_id}
              options={choices.vpcs.map((v) => [v.id, v.name] as const)}
              onChange={set("remote_vpc_id")}
            />
          )
          : (
            <Choice
              label="Address set"
              name="remote-address-set"
              value={draft.remote_address_set_id}
              options={choices.addressSets.map((s) => [s.id, s.name] as const)}
              onChange={set("remote_address_set_id")}
            />
          )}
        <Choice
          label="Target"
          name="target-type"
          value={draft.target_type}
          options={TARGETS}
          onChange={set("target_type")}
        />
        {draft.target_type === "subnet" && (
          <Choice
            label="Subnet"
            name="target-subnet"
            value={draft.target_subnet_id}
            options={choices.subnets.map((s) => [s.id, s.name] as const)}
            onChange={set("target_subnet_id")}
          />
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
      <Problem error={preview.error ?? error} />
      {impact !== null && <ImpactView impact={impact} names={names} />}
      <div class="actions">
        <button type="button" onClick={() => preview.call()}>Preview impact</button>
        <button type="submit" class="primary" disabled={refused}>Save rule</button>
        <button type="button" onClick={() => onDone(false)}>Cancel</button>
      </div>
    </form>
  )
}
