/** Sign-in: a tenant with its name and password, or the admin with its username and password. */
import { useState } from "preact/hooks"
import { PasswordField, Problem, useSubmit } from "./Forms.js"
import { type Session, signIn } from "./Session.js"

export const SignIn = ({ notice, onSignedIn }: { notice: string | null; onSignedIn: (session: Session) => void }) => {
  const [kind, setKind] = useState<Session["kind"]>("tenant")
  const [name, setName] = useState("")
  const [password, setPassword] = useState("")
  const { busy, error, submit } = useSubmit(() => signIn(kind, name, password), onSignedIn)
  return (
    <main class="signin">
      <h1>Tenet console</h1>
      {notice !== null && <p role="status" class="notice">{notice}</p>}
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
        <PasswordField
          label="Password"
          name="password"
          purpose="current-password"
          value={password}
          onInput={setPassword}
        />
        <Problem error={error} />
        <button type="submit" class="primary" disabled={busy}>Sign in</button>
      </form>
    </main>
  )
}
