/**
 * Who the console acts as: a tenant (name and password) or the admin, through a sign-in
 * session (`session: true` at login): a token of its own, never the API token automation uses,
 * which Sign out ends on the server (a shared browser keeps nothing that still works) and which
 * expires by itself. It is kept in this tab's `sessionStorage`, so a reload keeps the session;
 * every call goes through `@tenet/client`, like any other client of the API.
 */
import { createTenetClient, Errors, type PromiseClient as Promised } from "@tenet/client"
import type { Ids } from "@tenet/core"

/** The Promise client of `@tenet/client`, as the console uses it. */
export type Client = Promised.PromiseClient

export type Session =
  | { readonly kind: "tenant"; readonly name: string; readonly tenantId: Ids.TenantId; readonly token: string }
  | { readonly kind: "admin"; readonly name: string; readonly token: string }

const KEY = "tenet.console.session"

const baseUrl = () => window.location.origin

export const restore = (): Session | null => {
  const saved = window.sessionStorage.getItem(KEY)
  return saved === null ? null : (JSON.parse(saved) as Session)
}

/** Forgets the session in this tab, without telling the server. */
export const forget = () => window.sessionStorage.removeItem(KEY)

/** The client acting as the session's principal. */
export const clientOf = (session: Session): Client =>
  session.kind === "tenant"
    ? createTenetClient({ baseUrl: baseUrl(), tenantToken: session.token, tenantId: session.tenantId })
    : createTenetClient({ baseUrl: baseUrl(), adminToken: session.token })

/** Signs in; a wrong name or password rejects with the API's error. */
export const signIn = async (kind: Session["kind"], name: string, password: string): Promise<Session> => {
  const anonymous = createTenetClient({ baseUrl: baseUrl(), retry: false })
  try {
    const session: Session = kind === "tenant"
      ? await anonymous.tenantIdentity.login({ payload: { name, password, session: true } }).then((s) => ({
        kind: "tenant" as const,
        name,
        tenantId: s.id,
        token: s.api_token
      }))
      : await anonymous.adminIdentity.login({ payload: { username: name, password, session: true } }).then((s) => ({
        kind: "admin" as const,
        name,
        token: s.api_token
      }))
    window.sessionStorage.setItem(KEY, JSON.stringify(session))
    return session
  } finally {
    await anonymous.close()
  }
}

/** Ends the session: in this tab, and on the server, where its token stops working. */
export const signOut = async (session: Session, client: Client) => {
  forget()
  await (session.kind === "tenant" ? client.tenantIdentity.logout() : client.adminIdentity.logout())
    .catch(() => undefined)
  await client.close()
}

/** What a failed call says, for a person: the API's `detail`, or the error's message. */
export const problem = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const { detail, message } = error as { detail?: unknown; message?: unknown }
    if (typeof detail === "string") return detail
    if (typeof message === "string" && message !== "") return message
  }
  return String(error)
}

/** Dispatched on the window when the API no longer accepts the session's token. */
export const SESSION_ENDED = "tenet:session-ended"

/**
 * Says so when a call failed because the token is no longer accepted (rotated elsewhere, or
 * the tenant deleted): the app then returns to the sign-in page instead of failing every call.
 */
export const noticeRefusal = (error: unknown) => {
  if (error instanceof Errors.Unauthorized) window.dispatchEvent(new Event(SESSION_ENDED))
}
