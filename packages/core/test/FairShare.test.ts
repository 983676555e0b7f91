/**
 * How expensive requests share the seats: whatever arrives and ends in whatever order, no more
 * run than the seats, no tenant more than its share, no queue longer than its bound; a freed
 * seat goes to a tenant in turn, so one tenant's backlog never keeps another waiting.
 */
import { describe, expect, it } from "@effect/vitest"
import { FairShare } from "@tenet/core"
import { FastCheck as fc } from "effect"

const policy: FairShare.Policy = { seats: 3, perTenant: 1, queue: 4 }

type Step = { readonly kind: "arrive"; readonly tenant: string } | { readonly kind: "finish"; readonly pick: number }

const steps = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant("arrive" as const), tenant: fc.constantFrom("a", "b", "c", "d", "e") }),
    fc.record({ kind: fc.constant("finish" as const), pick: fc.nat() })
  ),
  { maxLength: 200 }
)

/** The steps played on the state, checking every state on the way; each request's fate. */
const play = (given: ReadonlyArray<Step>) => {
  let state = FairShare.empty
  const running: Array<{ id: number; tenant: string }> = []
  const tenantOf = new Map<number, string>()
  const refused: Array<string> = []
  const started: Array<number> = []
  const check = () => {
    const counts = [...state.running.values()]
    expect(counts.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(policy.seats)
    for (const n of counts) expect(n).toBeLessThanOrEqual(policy.perTenant)
    for (const queued of state.waiting.values()) expect(queued.length).toBeLessThanOrEqual(policy.queue)
    // Work-conserving: a seat is never free while a tenant with seats left waits.
    const free = counts.reduce((a, b) => a + b, 0) < policy.seats
    if (free) { for (const t of state.turns) expect(state.running.get(t) ?? 0).toBe(policy.perTenant) }
  }
  const start = () => {
    const next = FairShare.dispatch(policy, state)
    state = next.state
    for (const id of next.start) {
      running.push({ id, tenant: tenantOf.get(id)! })
      started.push(id)
    }
  }
  given.forEach((step, id) => {
    if (step.kind === "arrive") {
      tenantOf.set(id, step.tenant)
      const arrival = FairShare.arrive(policy, state, step.tenant, id)
      if (arrival._tag === "Refused") refused.push(step.tenant)
      else state = arrival.state
    } else if (running.length > 0) {
      const [done] = running.splice(step.pick % running.length, 1)
      state = FairShare.finish(state, done!.tenant)
    }
    start()
    check()
  })
  return { state, refused, started, tenantOf }
}

describe("FairShare", () => {
  it.prop("seats, shares and queues hold whatever arrives and ends", [steps], ([given]) => {
    play(given)
  })

  it.prop("a tenant is refused only when its own queue is full", [steps], ([given]) => {
    let state = FairShare.empty
    given.forEach((step, id) => {
      if (step.kind !== "arrive") return
      const queued = state.waiting.get(step.tenant)?.length ?? 0
      const arrival = FairShare.arrive(policy, state, step.tenant, id)
      expect(arrival._tag === "Refused").toBe(queued >= policy.queue)
      if (arrival._tag === "Queued") state = FairShare.dispatch(policy, arrival.state).state
    })
  })

  it("a tenant flooding the queue does not keep another waiting: the next free seat is the other's", () => {
    const one = { seats: 1, perTenant: 1, queue: 16 }
    let state = FairShare.empty
    const arrive = (tenant: string, id: number) => {
      const arrival = FairShare.arrive(one, state, tenant, id)
      if (arrival._tag !== "Queued") throw new Error("refused")
      const next = FairShare.dispatch(one, arrival.state)
      state = next.state
      return next.start
    }
    expect(arrive("noisy", 0)).toEqual([0])
    for (let i = 1; i <= 10; i++) expect(arrive("noisy", i)).toEqual([])
    expect(arrive("quiet", 100)).toEqual([])
    // The noisy tenant's seat frees: the quiet tenant, which waited less, goes before its nine others.
    const next = FairShare.dispatch(one, FairShare.finish(state, "noisy"))
    expect(next.start).toEqual([100])
  })

  it("a request that leaves the queue is never started", () => {
    const one = { seats: 1, perTenant: 1, queue: 4 }
    const first = FairShare.arrive(one, FairShare.empty, "a", 1)
    if (first._tag !== "Queued") throw new Error("refused")
    let state = FairShare.dispatch(one, first.state).state
    const second = FairShare.arrive(one, state, "a", 2)
    if (second._tag !== "Queued") throw new Error("refused")
    state = FairShare.leave(second.state, "a", 2)
    expect(FairShare.dispatch(one, FairShare.finish(state, "a")).start).toEqual([])
    expect(FairShare.occupancy(state)).toBe(1)
  })
})
