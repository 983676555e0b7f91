/**
 * The tenant's address sets: each listed with how many rules use it, and a form for a new one;
 * one set's entries, every rule that names it (by VPC), and an edit of its description and
 * entries previewed before it is saved: the dry run's impact in each VPC using the set,
 * guardrails it would break included (it is not saved then). Both are the API's own answers.
 */
import type { Ids } from "@tenet/core"
import { useState } from "preact/hooks"
import { Problem, Table, TextField, useCall, useSubmit } from "./Forms.js"
import { ImpactView } from "./ImpactView.js"
import { useLoad } from "./Load.js"
import { namesOf } from "./Names.js"
import type { Client } from "./Session.js"
import type { AddressSetPlan, AddressSetView } from "./Views.js"

/** Entries as the form writes them: one a line, the network then an optional note. */
const entriesOf = (text: string) =>
  text.split("\n").map((line) => line.trim()).filter((line) => line !== "").map((line) => {
    const [cidr = "", ...note] = line.split(/\s+/)
    return { cidr, description: note.length === 0 ? null : note.join(" ") }
  })

/** A description as the form writes it: none when left empty. */
const descriptionOf = (text: string) => (text.trim() === "" ? null : text.trim())

const textOf = (set: AddressSetView) =>
  set.entries.map((e) => e.description === null ? e.cidr : `${e.cidr} ${e.description}`).join("\n")

export const AddressSetsPage = ({ client }: { client: Client }) => {
  const { data, error, reload } = useLoad(async () => {
    const sets = await client.addressSets.list({ urlParams: {} })
    const usage = await Promise.all(sets.map((s) => client.addressSets.usage({ path: { address_set_id: s.id } })))
    return sets.map((set, i) => ({ set, rules: usage[i]!.rules.length }))
  }, [])
  return (
    <section aria-labelledby="sets-heading">
      <h1 id="sets-heading">Address sets</h1>
      <Problem error={error} />
      {data === undefined ? <p>Loading…</p> : (
        <Table headers={["Name", "Entries", "Used by", "Description"]}>
          {data.map(({ rules, set }) => (
            <tr key={set.id}>
              <td>
                <a href={`#/address-sets/${set.id}`}>{set.name}</a>
              </td>
              <td>{set.entries.length}</td>
              <td>{rules === 1 ? "1 rule" : `${rules} rules`}</td>
              <td>{set.description ?? ""}</td>
            </tr>
          ))}
        </Table>
      )}
      <NewSet client={client} onCreated={reload} />
    </section>
  )
}

const NewSet = ({ client, onCreated }: { client: Client; onCreated: () => void }) => {
  const [name, setName] = useState("")
  const [description, setDescription] = useState("")
  const [entries, setEntries] = useState("")
  const { error, submit } = useSubmit(
    () =>
      client.addressSets.create({
        payload: { name, description: descriptionOf(description), entries: entriesOf(entries) }
      }),
    () => {
      setName("")
      setDescription("")
      setEntries("")
      onCreated()
    }
  )
  return (
    <form class="editor" onSubmit={submit} aria-label="New address set">
      <h2>New address set</h2>
      <TextField label="Name" name="set-name" required value={name} onInput={setName} />
      <TextField label="Description" name="set-description" value={description} onInput={setDescription} />
      <label>
        Entries, one a line (a network, then an optional note)
        <textarea name="set-entries" rows={4} value={entries} onInput={(e) => setEntries(e.currentTarget.value)} />
      </label>
      <button type="submit">Create set</button>
      <Problem error={error} />
    </form>
  )
}

export const AddressSetPage = (
  { client, setId, tenantId }: { client: Client; tenantId: Ids.TenantId; setId: Ids.AddressSetId }
) => {
  const { data, error, reload } = useLoad(async () => {
    const [set, usage, topology, sets] = await Promise.all([
      client.addressSets.get({ path: { address_set_id: setId } }),
      client.addressSets.usage({ path: { address_set_id: setId } }),
      client.topology.get({ path: { tenant_id: tenantId } }),
      client.addressSets.list({ urlParams: {} })
    ])
    return { set, usage, names: namesOf(topology, sets) }
  }, [setId])
  if (error !== undefined) return <Problem error={error} />
  if (data === undefined) return <p>Loading…</p>
  const { names, set, usage } = data
  return (
    <section aria-labelledby="set-heading">
      <p>
        <a href="#/address-sets">← Address sets</a>
      </p>
      <h1 id="set-heading">Address set {set.name}</h1>
      {set.description !== null && <p>{set.description}</p>}
      <h2>Entries</h2>
      <Table headers={["Network", "Note"]}>
        {set.entries.map((e) => (
          <tr key={e.cidr}>
            <td>
              <code>{e.cidr}</code>
            </td>
            <td>{e.description ?? ""}</td>
          </tr>
        ))}
      </Table>
      <h2>Used by</h2>
      {usage.rules.length === 0 ?
        <p>No rule names this set: an edit moves no verdict.</p> :
        (
          <Table headers={["Rule", "VPC"]}>
            {usage.rules.map((r) => (
              <tr key={r.rule_id}>
                <td>{r.name}</td>
                <td>
                  <a href={`#/vpcs/${r.vpc_id}`}>{names.vpc(r.vpc_id)}</a>
                </td>
              </tr>
            ))}
          </Table>
        )}
      <SetEditor key={set.etag} client={client} set={set} names={names} onSaved={reload} />
    </section>
  )
}

const SetEditor = ({ client, names, onSaved, set }: {
  client: Client
  set: AddressSetView
  names: ReturnType<typeof namesOf>
  onSaved: () => void
}) => {
  const [description, setDescription] = useState(set.description ?? "")
  const [entries, setEntries] = useState(() => textOf(set))
  const [plan, setPlan] = useState<AddressSetPlan | null>(null)
  const edit = { path: { address_set_id: set.id }, headers: { "if-match": set.etag } }
  const payload = () => ({ description: descriptionOf(description), entries: entriesOf(entries) })
  // The edit previewed would break a guardrail: the API would refuse it, so it is not offered.
  const refused = plan !== null && plan.vpcs.some((impact) => impact.violations.length > 0)
  const preview = useCall(
    () =>
      client.addressSets.update({ ...edit, payload: payload(), urlParams: { dry_run: true } }) as Promise<
        AddressSetPlan
      >,
    setPlan
  )
  const { error, submit } = useSubmit(
    () => client.addressSets.update({ ...edit, payload: payload(), urlParams: {} }),
    onSaved
  )
  return (
    <form class="editor" onSubmit={submit} aria-label={`Edit address set ${set.name}`}>
      <h2>Edit the set</h2>
      <TextField
        label="Description"
        name="set-description"
        value={description}
        onInput={(value) => {
          setDescription(value)
          setPlan(null)
        }}
      />
      <label>
        Entries, one a line (a network, then an optional note)
        <textarea
          name="set-entries"
          rows={Math.max(4, set.entries.length + 1)}
          value={entries}
          onInput={(e) => {
            setEntries(e.currentTarget.value)
            setPlan(null)
          }}
        />
      </label>
      <div class="actions">
        <button type="button" onClick={() => void preview.call()}>Preview impact</button>
        <button type="submit" disabled={refused}>Save</button>
      </div>
      <Problem error={preview.error ?? error} />
      {plan !== null && (
        <section aria-label="Impact in each VPC">
          {plan.vpcs.length === 0 && <p>No VPC uses this set: the edit moves no verdict.</p>}
          {plan.vpcs.map((impact) => (
            <div key={impact.vpc_id}>
              <h3>In VPC {names.vpc(impact.vpc_id)}</h3>
              <ImpactView impact={impact} names={names} />
            </div>
          ))}
        </section>
      )}
    </form>
  )
}
