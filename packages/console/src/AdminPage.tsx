/**
 * The admin's view: tenants (and a form for a new one), each tenant's domains, the provider
 * configuration (its token only as set or not: the API never returns it), the platform's
 * service tunnels, the operations log and the audit trail.
 */
import { Errors } from "@tenet/client"
import type { Ids } from "@tenet/core"
import { useState } from "preact/hooks"
import { PasswordField, Problem, Table, TextField, useSubmit } from "./Forms.js"
import { useLoad, usePages } from "./Load.js"
import type { Client } from "./Session.js"

/** Tenants shown at once: more come a page at a time, so 10,000 tenants cost one page to show. */
const TENANTS_PER_PAGE = 50

/** An instant as people scan a log: `2026-11-24 06:23:59` (UTC). */
const when = (at: Date) => at.toISOString().replace("T", " ").slice(0, 19)

export const AdminPage = ({ client }: { client: Client }) => {
  const tenants = usePages(
    (page_token) => client.pages.page("tenants.list", undefined, { limit: TENANTS_PER_PAGE, page_token }),
    []
  )
  const { data, error, reload } = useLoad(async () => {
    const [provider, serviceTunnels, operations, audit] = await Promise.all([
      client.providerConfig.get().catch((e: unknown) => (e instanceof Errors.NotFound ? null : Promise.reject(e))),
      client.serviceTunnels.list(),
      client.operationsLog.list({ urlParams: { limit: 25 } }),
      client.auditLog.list({ urlParams: { limit: 25 } })
    ])
    return { provider, serviceTunnels, operations, audit }
  }, [])
  if (error !== undefined) return <Problem error={error} />
  if (data === undefined) return <p>Loading…</p>
  return (
    <section aria-labelledby="admin-heading">
      <h1 id="admin-heading">Administration</h1>
      <nav class="toc" aria-label="Sections">
        <a href="#tenants">Tenants</a> <a href="#provider">Provider</a> <a href="#service-tunnels">Service tunnels</a>
        {" "}
        <a href="#operations">Operations log</a> <a href="#audit">Audit trail</a>
      </nav>

      <h2 id="tenants" tabIndex={-1}>Tenants</h2>
      {tenants.error === undefined ? "" : <Problem error={tenants.error} />}
      <Table headers={["Name", "Description", "Created", "Domains"]}>
        {tenants.items.map((t) => (
          <tr key={t.id}>
            <td>{t.name}</td>
            <td>{t.description ?? ""}</td>
            <td>{when(t.created_at)}</td>
            <td>
              <Domains client={client} tenantId={t.id} />
            </td>
          </tr>
        ))}
      </Table>
      {tenants.more === undefined ? "" : (
        <button type="button" onClick={tenants.more}>
          Show more tenants
        </button>
      )}
      <NewTenant
        client={client}
        onCreated={() => {
          tenants.reload()
          reload()
        }}
      />

      <h2 id="provider" tabIndex={-1}>Provider configuration</h2>
      {data.provider === null ? <p>Not configured yet.</p> : (
        <dl class="facts">
          <dt>External subnet</dt>
          <dd>
            <code>{data.provider.external_subnet_cidr}</code> via <code>{data.provider.external_subnet_gateway}</code>
          </dd>
          <dt>Peering subnet</dt>
          <dd>
            <code>{data.provider.peering_subnet_cidr}</code>
          </dd>
          <dt>Pod DNS</dt>
          <dd>{data.provider.pod_dns_nameservers.join(", ") || "cluster default"}</dd>
          <dt>Edge domain</dt>
          <dd>{data.provider.edge_domain ?? "none"}</dd>
          <dt>Edge account</dt>
          <dd>{data.provider.edge_account_id ?? "none"}</dd>
          <dt>Edge API token</dt>
          <dd>{data.provider.edge_api_token_set ? "set (never shown)" : "not set"}</dd>
        </dl>
      )}

      <h2 id="service-tunnels" tabIndex={-1}>Service tunnels</h2>
      {data.serviceTunnels.length === 0 ? <p>None.</p> : (
        <Table headers={["Service", "URL", "Target", "Status"]}>
          {data.serviceTunnels.map((s) => (
            <tr key={s.id}>
              <td>{s.service}</td>
              <td>{s.url}</td>
              <td>
                <code>{s.target_url}</code>
              </td>
              <td>
                <span class={`status ${s.status}`}>{s.status}</span>
                {s.error === null ? "" : ` ${s.error}`}
              </td>
            </tr>
          ))}
        </Table>
      )}

      <h2 id="operations" tabIndex={-1}>Operations log</h2>
      <Table headers={["At", "Kind", "Outcome", "Principal", "From"]}>
        {data.operations.entries.map((e) => (
          <tr key={e.seq}>
            <td>{when(e.at)}</td>
            <td>{e.kind}</td>
            <td>{e.outcome}</td>
            <td>{e.principal}</td>
            <td>{e.source_address ?? ""}</td>
          </tr>
        ))}
      </Table>

      <h2 id="audit" tabIndex={-1}>Audit trail</h2>
      <Table headers={["At", "Actor", "Action", "Resource", "Outcome"]}>
        {data.audit.entries.map((e) => (
          <tr key={e.seq}>
            <td>{when(e.at)}</td>
            <td>{e.actor_type} {e.actor}</td>
            <td>
              <code>{e.action}</code>
            </td>
            <td>{e.resource_kind} {e.resource_id ?? ""}</td>
            <td>{e.outcome}</td>
          </tr>
        ))}
      </Table>
    </section>
  )
}

const Domains = ({ client, tenantId }: { client: Client; tenantId: Ids.TenantId }) => {
  const { data } = useLoad(() => client.domains.list({ path: { tenant_id: tenantId } }), [tenantId])
  return <>{data === undefined ? "…" : data.length === 0 ? "none" : data.map((d) => d.domain).join(", ")}</>
}

const NewTenant = ({ client, onCreated }: { client: Client; onCreated: () => void }) => {
  const [name, setName] = useState("")
  const [password, setPassword] = useState("")
  const { error, submit } = useSubmit(() => client.tenants.create({ payload: { name, password } }), () => {
    setName("")
    setPassword("")
    onCreated()
  })
  return (
    <form class="inline" onSubmit={submit} aria-label="New tenant">
      <h3>New tenant</h3>
      <TextField label="Name" name="tenant-name" required value={name} onInput={setName} />
      <PasswordField
        label="Password"
        name="tenant-password"
        purpose="new-password"
        value={password}
        onInput={setPassword}
      />
      <button type="submit">Create tenant</button>
      <Problem error={error} />
    </form>
  )
}
