/**
 * The console: sign-in, then the tenant's views (topology, a VPC's rules, reachability, flow
 * checks, change previews, address sets and their edits' impact) or the admin's (tenants, domains, provider, service tunnels, logs).
 * Views are addressed by the URL's hash (`#/vpcs/{id}`), so a reload or a link lands on them.
 */
import type { Ids } from "@tenet/core"
import { useEffect, useMemo, useState } from "preact/hooks"
import { AddressSetPage, AddressSetsPage } from "./AddressSetPage.js"
import { AdminPage } from "./AdminPage.js"
import { type Client, clientOf, forget, restore, type Session, SESSION_ENDED, signOut } from "./Session.js"
import { SignIn } from "./SignIn.js"
import { TopologyPage } from "./TopologyPage.js"
import { VpcPage } from "./VpcPage.js"

const useHash = () => {
  const [hash, setHash] = useState(window.location.hash)
  useEffect(() => {
    const changed = () => setHash(window.location.hash)
    window.addEventListener("hashchange", changed)
    return () => window.removeEventListener("hashchange", changed)
  }, [])
  return hash.replace(/^#/, "")
}

const TenantViews = ({ client, route, tenantId }: { client: Client; route: string; tenantId: Ids.TenantId }) => {
  const vpc = /^\/vpcs\/([^/]+)$/.exec(route)
  const set = /^\/address-sets\/([^/]+)$/.exec(route)
  return vpc !== null
    ? <VpcPage client={client} tenantId={tenantId} vpcId={vpc[1] as Ids.VpcId} />
    : set !== null
    ? <AddressSetPage client={client} tenantId={tenantId} setId={set[1] as Ids.AddressSetId} />
    : route === "/address-sets"
    ? <AddressSetsPage client={client} />
    : <TopologyPage client={client} tenantId={tenantId} />
}

export const App = () => {
  const [session, setSession] = useState<Session | null>(restore)
  const [notice, setNotice] = useState<string | null>(null)
  const client = useMemo(() => (session === null ? null : clientOf(session)), [session])
  const route = useHash()
  useEffect(() => {
    if (session === null) return
    const ended = () => {
      forget()
      setNotice("Your session has ended (its token was rotated or revoked). Sign in again.")
      setSession(null)
    }
    window.addEventListener(SESSION_ENDED, ended)
    return () => window.removeEventListener(SESSION_ENDED, ended)
  }, [session])

  if (session === null || client === null) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          setNotice(null)
          setSession(s)
        }}
      />
    )
  }
  const leave = () => {
    void signOut(session, client)
    window.location.hash = ""
    setSession(null)
  }
  return (
    <div class="shell">
      <header class="bar">
        <a class="brand" href="#/">Tenet</a>
        <nav aria-label="Main">
          {session.kind === "tenant"
            ? (
              <>
                <a href="#/">Topology</a> <a href="#/address-sets">Address sets</a>
              </>
            )
            : <a href="#/">Administration</a>}
        </nav>
        <span class="who">
          {session.kind === "tenant" ? `Tenant ${session.name}` : `Admin ${session.name}`}
        </span>
        <button type="button" onClick={leave}>Sign out</button>
      </header>
      <main>
        {session.kind === "tenant"
          ? <TenantViews client={client} route={route} tenantId={session.tenantId} />
          : <AdminPage client={client} />}
      </main>
    </div>
  )
}
