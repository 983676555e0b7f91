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

export interface Paged<A> {
  /** The items of every page loaded so far, in the list's order. */
  readonly items: ReadonlyArray<A>
  readonly error: string | undefined
  /** Loads the next page after the ones shown; none when the last is shown (or while one loads). */
  readonly more: (() => void) | undefined
  /** Starts again from the first page. */
  readonly reload: () => void
}

/**
 * A long list a page at a time (the API's `limit` and `page_token`): the first page when the view
 * shows, the next one appended each time `more` is called, so a list of 10,000 tenants costs one
 * page to show.
 */
export const usePages = <A>(
  load: (
    pageToken: string | undefined
  ) => Promise<{ readonly items: ReadonlyArray<A>; readonly next_page_token: string | undefined }>,
  deps: ReadonlyArray<unknown>
): Paged<A> => {
  const [state, setState] = useState<
    { items: ReadonlyArray<A>; next: string | undefined; loading: boolean; error?: string }
  >({ items: [], next: undefined, loading: true })
  const [round, setRound] = useState(0)
  const reload = useCallback(() => setRound((r) => r + 1), [])
  const fetchPage = (token: string | undefined, shown: ReadonlyArray<A>, isCurrent: () => boolean) =>
    load(token).then(
      (page) =>
        isCurrent() && setState({ items: [...shown, ...page.items], next: page.next_page_token, loading: false }),
      (e: unknown) => {
        noticeRefusal(e)
        if (isCurrent()) setState({ items: shown, next: token, loading: false, error: problem(e) })
      }
    )
  useEffect(() => {
    let current = true
    setState({ items: [], next: undefined, loading: true })
    void fetchPage(undefined, [], () => current)
    return () => {
      current = false
    }
  }, [...deps, round])
  const more = state.loading || state.next === undefined ? undefined : () => {
    setState({ ...state, loading: true })
    void fetchPage(state.next, state.items, () => true)
  }
  return { items: state.items, error: state.error, more, reload }
}
