/**
 * One VPC: its apply state and subnets; its rules in evaluation order, then the implied rules,
 * each row with its status and the analysis' findings; edits previewed before they are saved;
 * the reachability heat map; and the flow checker.
 */
import type { Ids, ReachabilityMatrix, SecurityRule } from "@tenet/core"
import { useState } from "preact/hooks"
import { FlowChecker } from "./FlowChecker.js"
import { Problem, Table, TextField, useCall, useSubmit } from "./Forms.js"
import { ImpactView } from "./ImpactView.js"
import { useLoad } from "./Load.js"
import { type Names, namesOf } from "./Names.js"
import { ReachabilityMap } from "./ReachabilityMap.js"
import { type Choices, RuleEditor } from "./RuleEditor.js"
import type { Client } from "./Session.js"
import { phaseClass } from "./TopologyGraph.js"
import type { Rule, RuleList } from "./Views.js"

/** The most pods whose reachability the map shows one by one. */
const MAP_PODS = 24

/** The most pairs the map reads (four pages of 500): a VPC of hundreds of subnets is not read whole. */
const MAP_PAIRS = 2_000

const STATUS_TEXT: Record<SecurityRule.RuleStatus, string> = {
  active: "active",
  disabled: "disabled",
  remote_vpc_missing: "remote VPC missing",
  target_missing: "target missing",
  remote_vpc_overlaps: "remote VPC overlaps this one: never matches",
  remote_vpc_unreachable: "remote VPC not peered: none of its packets arrive"
}

export const VpcPage = ({ client, tenantId, vpcId }: { client: Client; tenantId: Ids.TenantId; vpcId: Ids.VpcId }) => {
  const { data, error, reload } = useLoad(async () => {
    const [topology, rules, analysis, guardrails, addressSets] = await Promise.all([
      client.topology.get({ path: { tenant_id: tenantId } }),
      client.securityRules.list({ urlParams: { vpc_id: vpcId } }),
      client.securityRules.analysis({ urlParams: { vpc_id: vpcId } }),
      client.guardrails.list({ path: { vpc_id: vpcId } }),
      client.addressSets.list({ urlParams: {} })
    ])
    // A map of every pod is readable up to a few dozen of them; beyond, the subnets' summary.
    const pods = (topology.vpcs.find((v) => v.id === vpcId)?.subnets ?? []).reduce((n, s) => n + s.pods.length, 0)
    const detail = pods <= MAP_PODS ? "pods" as const : "subnets" as const
    const pairs: Array<ReachabilityMatrix.ReachabilityPair> = []
    // Pages of 500 (the most the server answers), so four requests at most.
    for await (
      const pair of client.pages.all(
        "vpcs.reachability",
        { path: { vpc_id: vpcId }, urlParams: { detail } },
        { limit: 500 }
      )
    ) {
      pairs.push(pair)
      if (pairs.length === MAP_PAIRS) break
    }
    const partial = pairs.length === MAP_PAIRS
    const reachability = { vpc_id: vpcId, detail, pairs, pods, partial }
    return { topology, rules, analysis, reachability, guardrails, addressSets }
  }, [vpcId])
  const [editing, setEditing] = useState<Rule | "new" | null>(null)

  if (error !== undefined) return <Problem error={error} />
  if (data === undefined) return <p>Loading…</p>
  const vpc = data.topology.vpcs.find((v) => v.id === vpcId)
  if (vpc === undefined) return <Problem error={`VPC ${vpcId} not found`} />
  const names = namesOf(data.topology, data.addressSets)
  const choices: Choices = {
    vpcs: data.topology.vpcs,
    subnets: vpc.subnets,
    pods: vpc.subnets.flatMap((s) => s.pods),
    addressSets: data.addressSets
  }

  const done = (saved: boolean) => {
    setEditing(null)
    if (saved) reload()
  }
  return (
    <section aria-labelledby="vpc-heading">
      <p>
        <a href="#/">← Topology</a>
      </p>
      <h1 id="vpc-heading">VPC {vpc.name}</h1>
      <p class={data.rules.applied ? "state ok" : "state bad"} role="status">
        {data.rules.applied
          ? "Applied: the rules below are in force."
          : `Not applied yet: ${data.rules.apply_error ?? ""}`}
      </p>

      <h2>Subnets</h2>
      <Table headers={["Name", "Block", "Gateway", "Pods"]}>
        {vpc.subnets.map((s) => (
          <tr key={s.id}>
            <td>{s.name}</td>
            <td>
              <code>{s.cidr}</code>
            </td>
            <td>
              <code>{s.gateway_ip}</code>
            </td>
            <td>
              {s.pods.map((p) => (
                <span key={p.id} class={`chip ${phaseClass(p.status.phase)}`}>{p.name} ({p.status.phase})</span>
              ))}
            </td>
          </tr>
        ))}
      </Table>
      <NewSubnet client={client} vpcId={vpcId} onCreated={reload} />

      <h2>Security rules</h2>
      <p class="muted">In evaluation order: the first rule that matches a flow decides it.</p>
      <RuleTable
        rules={data.rules}
        findings={data.analysis.findings}
        names={names}
        onEdit={(rule) => setEditing(rule)}
        client={client}
        onChanged={reload}
      />
      {editing === null
        ? <button type="button" class="primary" onClick={() => setEditing("new")}>Add rule</button>
        : (
          <RuleEditor
            key={editing === "new" ? "new" : editing.id}
            client={client}
            vpcId={vpcId}
            rule={editing === "new" ? null : editing}
            choices={choices}
            names={names}
            onDone={done}
          />
        )}

      <h2>Guardrails</h2>
      <p class="muted">Verdicts no change may move: a change that would is refused, and its preview says why.</p>
      {data.guardrails.length === 0 ?
        <p>No guardrails.</p> :
        (
          <Table headers={["Name", "Requires", "Flows", "Local end", "Set by"]}>
            {data.guardrails.map((g) => (
              <tr key={g.id}>
                <td>{g.name}</td>
                <td>
                  <span class={`badge ${g.require}`}>{g.require}</span>
                </td>
                <td>
                  {g.direction} {g.protocol}
                  {g.ports === null ? "" : ` ${g.ports}`} {g.direction === "ingress" ? "from" : "to"}{" "}
                  <code>{g.remote_cidr}</code>
                </td>
                <td>
                  {g.local === null
                    ? "whole VPC"
                    : [
                      ...g.local.subnet_ids.map((s) => `subnet ${names.subnet(s)}`),
                      ...g.local.pod_ids.map((p) => `pod ${names.pod(p)}`)
                    ]
                      .join(", ")}
                </td>
                <td>{g.scope === "tenant" ? "administrator (every VPC)" : "this VPC"}</td>
              </tr>
            ))}
          </Table>
        )}

      <h2>Reachability</h2>
      {data.reachability.detail === "subnets" && (
        <p>
          This VPC runs {data.reachability.pods}{" "}
          pods: the map shows its subnets, each standing for every endpoint in it. <code>tenet reach --pods</code>{" "}
          lists every pod.
        </p>
      )}
      {data.reachability.partial && (
        <p>
          The map shows the first {MAP_PAIRS} pairs. <code>tenet reach</code> lists them all.
        </p>
      )}
      <ReachabilityMap matrix={data.reachability} />

      <h2>Flow checker</h2>
      <FlowChecker client={client} vpcId={vpcId} choices={choices} />
    </section>
  )
}

const target = (rule: Rule, names: Names) =>
  rule.target_type === "vpc"
    ? "whole VPC"
    : rule.target_type === "subnet"
    ? `subnet ${names.subnet(rule.target_subnet_id)}`
    : `pods ${(rule.target_pod_ids ?? []).map(names.pod).join(", ")}`

const remote = (rule: Rule, names: Names) =>
  rule.remote_type === "cidr"
    ? rule.remote_cidr ?? ""
    : rule.remote_type === "vpc"
    ? `VPC ${names.vpc(rule.remote_vpc_id)}`
    : `address set ${names.addressSet(rule.remote_address_set_id)}`

const IMPLIED_TEXT: Record<SecurityRule.ImpliedRule["key"], string> = {
  "implied-allow-infrastructure":
    "the core network (DNS, gateways, tunnels, load balancers), both ways; before any rule",
  "implied-allow-egress": "all other outbound traffic",
  "implied-deny-ingress": "all other inbound traffic"
}

const ImpliedRow = ({ rule }: { rule: SecurityRule.ImpliedRule }) => (
  <tr class="implied">
    <td>–</td>
    <td>{rule.key}</td>
    <td>{rule.key === "implied-allow-infrastructure" ? "both" : rule.direction}</td>
    <td>
      <span class={`badge ${rule.action}`}>{rule.action}</span>
    </td>
    <td colSpan={3}>{IMPLIED_TEXT[rule.key]}</td>
    <td>–</td>
    <td>implied</td>
    <td />
    <td />
  </tr>
)

const RuleTable = ({ client, findings, names, onChanged, onEdit, rules }: {
  rules: RuleList
  findings: ReadonlyArray<SecurityRule.RuleFinding>
  names: Names
  client: Client
  onEdit: (rule: Rule) => void
  onChanged: () => void
}) => {
  const [removing, setRemoving] = useState<{ rule: Rule; impact: SecurityRule.RuleImpact } | null>(
    null
  )
  const preview = useCall(
    (rule: Rule) =>
      client.securityRules.delete({ path: { rule_id: rule.id }, urlParams: { dry_run: true } })
        .then((impact) => ({ rule, impact })),
    setRemoving
  )
  const remove = useCall(
    (rule: Rule) => client.securityRules.delete({ path: { rule_id: rule.id } }),
    () => {
      setRemoving(null)
      onChanged()
    }
  )
  return (
    <>
      <Table
        className="rules"
        headers={[
          "#",
          "Name",
          "Direction",
          "Action",
          "Traffic",
          "Remote",
          "Target",
          "Priority",
          "Status",
          "Findings",
          <span class="visually-hidden">Actions</span>
        ]}
      >
        {rules.implied.filter((r) => r.key === "implied-allow-infrastructure").map((rule) => (
          <ImpliedRow key={rule.key} rule={rule} />
        ))}
        {rules.rules.map((rule, i) => {
          const own = findings.filter((f) => f.rule_id === rule.id)
          return (
            <tr key={rule.id} class={own.length > 0 ? `flagged ${own.map((f) => f.kind).join(" ")}` : ""}>
              <td>{i + 1}</td>
              <td>{rule.name}</td>
              <td>{rule.direction}</td>
              <td>
                <span class={`badge ${rule.action}`}>{rule.action}</span>
              </td>
              <td>{rule.protocol}{rule.ports === null ? "" : ` ${rule.ports}`}</td>
              <td>{remote(rule, names)}</td>
              <td>{target(rule, names)}</td>
              <td>{rule.priority}</td>
              <td>
                <span class={`status ${rule.status}`}>{STATUS_TEXT[rule.status]}</span>
              </td>
              <td>
                {own.map((f) => (
                  <div key={f.kind} class="finding">
                    <span class={`badge ${f.kind}`}>{f.kind}</span> <span class="muted">{f.message}</span>
                  </div>
                ))}
              </td>
              <td class="row-actions">
                <button type="button" onClick={() => onEdit(rule)} aria-label={`Edit ${rule.name}`}>Edit</button>
                <button type="button" onClick={() => preview.call(rule)} aria-label={`Delete ${rule.name}`}>
                  Delete
                </button>
              </td>
            </tr>
          )
        })}
        {rules.implied.filter((r) => r.key !== "implied-allow-infrastructure").map((rule) => (
          <ImpliedRow key={rule.key} rule={rule} />
        ))}
      </Table>
      <Problem error={preview.error ?? remove.error} />
      {removing !== null && (
        <div class="editor" role="region" aria-label={`Delete rule ${removing.rule.name}`}>
          <h3>Delete rule '{removing.rule.name}'?</h3>
          <ImpactView impact={removing.impact} names={names} />
          <div class="actions">
            <button type="button" class="danger" onClick={() => remove.call(removing.rule)}>Delete rule</button>
            <button type="button" onClick={() => setRemoving(null)}>Keep it</button>
          </div>
        </div>
      )}
    </>
  )
}

const NewSubnet = ({ client, onCreated, vpcId }: { client: Client; vpcId: Ids.VpcId; onCreated: () => void }) => {
  const [name, setName] = useState("")
  const [cidr, setCidr] = useState("")
  const [gateway, setGateway] = useState("")
  const { error, submit } = useSubmit(
    () => client.subnets.create({ payload: { vpc_id: vpcId, name, cidr, gateway_ip: gateway } }),
    () => {
      setName("")
      setCidr("")
      setGateway("")
      onCreated()
    }
  )
  return (
    <form class="inline" onSubmit={submit} aria-label="New subnet">
      <TextField label="Name" name="subnet-name" required value={name} onInput={setName} />
      <TextField label="Block" name="subnet-cidr" required placeholder="10.0.1.0/24" value={cidr} onInput={setCidr} />
      <TextField
        label="Gateway"
        name="subnet-gateway"
        required
        placeholder="10.0.1.1"
        value={gateway}
        onInput={setGateway}
      />
      <button type="submit">Add subnet</button>
      <Problem error={error} />
    </form>
  )
}
