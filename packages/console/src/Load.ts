/** Data from the API for a view: loaded when the view shows, reloaded when asked. */
import { useCallback, useEffect, useState } from "preact/hooks"
import { noticeRefusal, problem } from "./Session.js"

export interface Loaded<A> {
  readonly data: A | undefined
  readonly error: string | undefined
  readonly reload: () => void
}

export const useLoad = <A>(load: () => Promise<A>, deps: ReadonlyArray<unknown>): Loaded<A> => {
  const [state, setState] = useState<{ data?: A; error?: string }>({})
  const [round, setRound] = useState(0)
  const reload = useCallback(() => setRound((r) => r + 1), [])
  useEffect(() => {
    let current = true
    load().then(
      (data) => current && setState({ data }),
      (e: unknown) => {
        noticeRefusal(e)
        if (current) setState({ error: problem(e) })
      }
    )
    return () => {
      current = false
    }
  }, [...deps, round])
  return { data: state.data, error: state.error, reload }
}
