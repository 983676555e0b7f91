/** Sign-in: a tenant with its name and password, or the admin with its username and password. */
import { useState } from "preact/hooks"
import { problem, type Session, signIn } from "./Session.js"

export const SignIn = ({ onSignedIn }: { onSignedIn: (session: Session) => void }) => {
  const [kind, setKind] = useState<Session["kind"]>("tenant")
  const [name, setName] = useState("")
  const [password, setPassword] = useState("")
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      onSignedIn(await signIn(kind, name, password))
    } catch (e) {
      setError(problem(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="signin">
      <h1>Tenet console</h1>
      <form onSubmit={submit} aria-label="Sign in">
        <fieldset>
          <legend>Sign in as</legend>
          <label>
            <input type="radio" name="kind" checked={kind === "tenant"} onChange={() => setKind("tenant")} /> Tenant
          </label>
          <label>
            <input type="radio" name="kind" checked={kind === "admin"} onChange={() => setKind("admin")} /> Admin
          </label>
        </fieldset>
        <label>
          {kind === "tenant" ? "Tenant name" : "Username"}
          <input
            name="name"
            autocomplete="username"
            required
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        {error !== null && <p role="alert" class="error">{error}</p>}
        <button type="submit" disabled={busy}>Sign in</button>
      </form>
    </main>
  )
}
