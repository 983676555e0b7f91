/**
 * How expensive requests share a process between tenants, as Kubernetes' API Priority and
 * Fairness shares an API server between flows: a few seats for the whole process, at most a
 * few of them for one tenant, a queue of bounded length per tenant, and a seat that frees up
 * goes to the waiting tenant served least recently (not to the tenant that queued the most).
 * One tenant flooding expensive requests waits behind itself; another tenant's request takes
 * the next seat that frees up. The decisions are pure: state in, state and verdict out.
 */

export interface Policy {
  /** Expensive requests running at once in the process. */
  readonly seats: number
  /** Of them, at most this many of one tenant. */
  readonly perTenant: number
  /** Requests of one tenant waiting for a seat; one more is refused (429). */
  readonly queue: number
}

export interface State {
  /** Seats taken, by tenant. */
  readonly running: ReadonlyMap<string, number>
  /** Each tenant's waiting requests, oldest first. */
  readonly waiting: ReadonlyMap<string, ReadonlyArray<number>>
  /** Tenants with waiting requests, in the order they began to wait. */
  readonly turns: ReadonlyArray<string>
  /** When each tenant with requests running or waiting last had one started (a count of starts). */
  readonly served: ReadonlyMap<string, number>
  readonly starts: number
}

export const empty: State = { running: new Map(), waiting: new Map(), turns: [], served: new Map(), starts: 0 }

const taken = (state: State) => [...state.running.values()].reduce((n, m) => n + m, 0)

const runningOf = (state: State, tenant: string) => state.running.get(tenant) ?? 0

const withRunning = (state: State, tenant: string, delta: number): State => {
  const running = new Map(state.running)
  const n = runningOf(state, tenant) + delta
  if (n === 0) running.delete(tenant)
  else running.set(tenant, n)
  return { ...state, running }
}

/** What becomes of an arriving request: it joins its tenant's queue (`dispatch` may start it at once), or is refused. */
export type Arrival =
  | { readonly _tag: "Queued"; readonly state: State }
  | { readonly _tag: "Refused"; readonly reason: string }

/** Request `id` of `tenant` arrives: it joins its tenant's queue when the queue has room. */
export const arrive = (policy: Policy, state: State, tenant: string, id: number): Arrival => {
  const queued = state.waiting.get(tenant) ?? []
  if (queued.length >= policy.queue) {
    return {
      _tag: "Refused",
      reason: `${runningOf(state, tenant)} of this tenant's expensive requests are running and ${queued.length} ` +
        `wait their turn (at most ${policy.perTenant} run and ${policy.queue} wait)`
    }
  }
  const waiting = new Map(state.waiting).set(tenant, [...queued, id])
  const turns = state.turns.includes(tenant) ? state.turns : [...state.turns, tenant]
  return { _tag: "Queued", state: { ...state, waiting, turns } }
}

/** A waiting request leaves its queue without running (its caller left, or it waited too long). */
export const leave = (state: State, tenant: string, id: number): State => {
  const queued = (state.waiting.get(tenant) ?? []).filter((w) => w !== id)
  const waiting = new Map(state.waiting)
  if (queued.length === 0) waiting.delete(tenant)
  else waiting.set(tenant, queued)
  return forgotten({
    ...state,
    waiting,
    turns: queued.length === 0 ? state.turns.filter((t) => t !== tenant) : state.turns
  }, tenant)
}

/** `tenant` forgotten when it has nothing running or waiting: a tenant back after that is new. */
const forgotten = (state: State, tenant: string): State => {
  if (state.running.has(tenant) || state.waiting.has(tenant)) return state
  const served = new Map(state.served)
  served.delete(tenant)
  return { ...state, served }
}

/** Whom a free seat goes to: of the waiting tenants with seats left, the one served least recently. */
const nextTenant = (policy: Policy, state: State): string | undefined => {
  let chosen: string | undefined
  for (const tenant of state.turns) {
    if (runningOf(state, tenant) >= policy.perTenant) continue
    if (chosen === undefined || (state.served.get(tenant) ?? -1) < (state.served.get(chosen) ?? -1)) chosen = tenant
  }
  return chosen
}

/**
 * The requests to start now, in order, and the state with them running: while a seat is free,
 * the waiting tenant served least recently that has seats left runs its oldest waiting request.
 */
export const dispatch = (
  policy: Policy,
  state: State
): { readonly state: State; readonly start: ReadonlyArray<number> } => {
  let current = state
  const start: Array<number> = []
  for (;;) {
    if (taken(current) >= policy.seats) break
    const tenant = nextTenant(policy, current)
    if (tenant === undefined) break
    const [id, ...rest] = current.waiting.get(tenant)!
    start.push(id!)
    const waiting = new Map(current.waiting)
    if (rest.length === 0) waiting.delete(tenant)
    else waiting.set(tenant, rest)
    current = withRunning(
      {
        ...current,
        waiting,
        turns: rest.length === 0 ? current.turns.filter((t) => t !== tenant) : current.turns,
        served: new Map(current.served).set(tenant, current.starts),
        starts: current.starts + 1
      },
      tenant,
      1
    )
  }
  return { state: current, start }
}

/** Requests running and waiting, every tenant's. */
export const occupancy = (state: State): number =>
  taken(state) + [...state.waiting.values()].reduce((n, queued) => n + queued.length, 0)

/** A running request of `tenant` ends: its seat is free (and a tenant with nothing left is forgotten). */
export const finish = (state: State, tenant: string): State => forgotten(withRunning(state, tenant, -1), tenant)
