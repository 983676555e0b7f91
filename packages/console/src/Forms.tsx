/** What the console's forms and tables share: submitting a call, showing its error, fields, tables. */
import type { ComponentChildren } from "preact"
import { useState } from "preact/hooks"
import { noticeRefusal, problem } from "./Session.js"

/**
 * A call made from the page: `call` runs it, keeps the API's error to show when it fails, and
 * hands the result on when it succeeds.
 */
export const useCall = <Args extends ReadonlyArray<unknown>, A>(
  run: (...args: Args) => Promise<A>,
  onDone: (result: A) => void
) => {
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const call = async (...args: Args) => {
    setError(null)
    setBusy(true)
    try {
      onDone(await run(...args))
    } catch (e) {
      noticeRefusal(e)
      setError(problem(e))
    } finally {
      setBusy(false)
    }
  }
  return { call, error, busy }
}

/** `useCall` for a form: its submission runs the call instead of loading a page. */
export function useSubmit<A>(run: () => Promise<A>, onDone: (result: A) => void) {
  const { busy, call, error } = useCall(run, onDone)
  const submit = (event: Event) => {
    event.preventDefault()
    void call()
  }
  return { submit, error, busy }
}

/** A failed call's reason, announced to screen readers. */
export const Problem = ({ error }: { error: string | null | undefined }) =>
  error === null || error === undefined ? null : <p role="alert" class="error">{error}</p>

/** A labelled text input. */
export const TextField = (props: {
  label: string
  name: string
  value: string
  onInput: (value: string) => void
  required?: boolean
  placeholder?: string
}) => (
  <label>
    {props.label}{" "}
    <input
      name={props.name}
      required={props.required ?? false}
      placeholder={props.placeholder}
      value={props.value}
      onInput={(e) => props.onInput(e.currentTarget.value)}
    />
  </label>
)

/** A labelled, required password input: a new one (a tenant's) or the current one (signing in). */
export const PasswordField = (props: {
  label: string
  name: string
  value: string
  onInput: (value: string) => void
  purpose: "new-password" | "current-password"
}) => (
  <label>
    {props.label}{" "}
    <input
      name={props.name}
      type="password"
      autocomplete={props.purpose}
      required
      value={props.value}
      onInput={(e) => props.onInput(e.currentTarget.value)}
    />
  </label>
)

/** A labelled choice among fixed options. */
export const Choice = <V extends string>({ label, name, onChange, options, value }: {
  label: string
  name: string
  value: V
  options: ReadonlyArray<readonly [V, string]>
  onChange: (value: V) => void
}) => (
  <label>
    {label}
    <select name={name} value={value} onChange={(e) => onChange(e.currentTarget.value as V)}>
      {options.map(([v, text]) => <option key={v} value={v}>{text}</option>)}
    </select>
  </label>
)

/** A table with a header row. */
export const Table = ({ children, className = "list", headers }: {
  headers: ReadonlyArray<ComponentChildren>
  children: ComponentChildren
  className?: string
}) => (
  <table class={className}>
    <thead>
      <tr>{headers.map((h, i) => <th scope="col" key={i}>{h}</th>)}</tr>
    </thead>
    <tbody>{children}</tbody>
  </table>
)
