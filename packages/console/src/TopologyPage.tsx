/** The tenant's home: its topology as a graph, the VPCs listed, and a form for a new VPC. */
import type { Ids } from "@tenet/core"
import { useState } from "preact/hooks"
import { Problem, TextField, useSubmit } from "./Forms.js"
import { useLoad } from "./Load.js"
import type { Client } from "./Session.js"
import { referencesOf, TopologyGraph } from "./TopologyGraph.js"

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`

export const TopologyPage = ({ client, tenantId }: { client: Client; tenantId: Ids.TenantId }) => {
  const { data, error, reload } = useLoad(async () => {
    const topology = await client.topology.get({ path: { tenant_id: tenantId } })
    const rules = await Promise.all(
      topology.vpcs.map((v) =>
        client.securityRules.list({ urlParams: { vpc_id: v.id } }).then((l) => [v.id as string, l.rules] as const)
      )
    )
    return { topology, references: referencesOf(new Map(rules)) }
  }, [tenantId])
  return (
    <section aria-labelledby="topology-heading">
      <h1 id="topology-heading">Topology</h1>
      <Problem error={error} />
      {data === undefined ? <p>Loading…</p> : (
        <>
          <div class="graph">
            <TopologyGraph topology={data.topology} references={data.references} />
          </div>
          <h2>VPCs</h2>
          <ul class="vpc-list">
            {data.topology.vpcs.map((v) => (
              <li key={v.id}>
                <a href={`#/vpcs/${v.id}`}>{v.name}</a>{" "}
                <span class="muted">
                  {count(v.subnets.length, "subnet")}, {count(v.subnets.reduce((n, s) => n + s.pods.length, 0), "pod")}
                  {v.lifecycle === "deleting" ? ", being deleted" : ""}
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
      <NewVpc client={client} onCreated={reload} />
    </section>
  )
}

const NewVpc = ({ client, onCreated }: { client: Client; onCreated: () => void }) => {
  const [name, setName] = useState("")
  const [internet, setInternet] = useState(true)
  const { error, submit } = useSubmit(
    () => client.vpcs.create({ payload: { name, enable_internet: internet } }),
    () => {
      setName("")
      onCreated()
    }
  )
  return (
    <form class="inline" onSubmit={submit} aria-label="New VPC">
      <h2>New VPC</h2>
      <TextField label="Name" name="vpc-name" required value={name} onInput={setName} />
      <label>
        <input type="checkbox" checked={internet} onChange={(e) => setInternet(e.currentTarget.checked)} />{" "}
        Internet access
      </label>
      <button type="submit">Create VPC</button>
      <Problem error={error} />
    </form>
  )
}
