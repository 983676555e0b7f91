/**
 * Bringing an owner (a VPC, a pod) into force as committed, off the request. A request commits,
 * then asks for a convergence of its owner and waits, up to a bound (`wait`), for one that began
 * after its commit. Convergences run on this replica's work queue: one at a time per owner, a few
 * owners at once, so changes to one owner that arrive together are brought into force together
 * (a burst of writes is one apply, not one per write), and an answer never waits behind an apply
 * of a state older than its change.
 *
 * A convergence applies (`apply`: read the committed owner, ask the cluster) and then records the
 * outcome on the owner (`record`). One that outlasts the bound its first request waits is said on
 * the owner as still being applied (`markStillApplying`), as that request's answer says, before the
 * outcome replaces it.
 *
 * Each replica's queue is its own, so two replicas may converge one owner at once, each from the
 * state it read, and the older may land last. So after applying, a convergence asks whether what
 * it applied is still what is committed (`superseded`); if not, the owner is said to be still
 * applying (in the store, so any replica's reconciler finds it should this one stop) and converged
 * again, and the outcome is not recorded as in force. The last apply to end is thus of the latest
 * state, or followed by one that is. Left open: the other replica may record its outcome (applied)
 * after that mark, between the stale apply and its repair; only a fence the cluster keeps (a
 * version the orchestrator refuses to move backwards) would close that.
 */
import type { Exit, Scope, Tracer } from "effect"
import { Deferred, Duration, Effect, Fiber, Option, Runtime } from "effect"
import * as Workqueue from "./Workqueue.js"

export interface Convergence<Owner, Ask, A, E> {
  /**
   * A request's convergence of the owner, begun after this call: its outcome when it ends within
   * the bound; past it, none (the convergence goes on and records its outcome), answered once the
   * owner says it is still being applied, or, while the convergence waits for a worker, at once:
   * the caller answers it still applying.
   */
  readonly request: (owner: Owner, ask: Ask) => Effect.Effect<Option.Option<A>, E>
  /** The same, waiting however long the convergence takes: for the controller and the reconciler. */
  readonly converge: (owner: Owner, ask: Ask) => Effect.Effect<A, E>
}

export interface Options<Owner, Ask, Applied, A, E> {
  /** The spans' prefix: `<name>.converge` (a convergence), `<name>.wait` (a request waiting). */
  readonly name: string
  readonly key: (owner: Owner) => string
  /** What the spans say of the owner. */
  readonly attributes: (owner: Owner) => Record<string, string>
  /** Owners converged at once. */
  readonly workers: number
  /** How long a request waits for its convergence. */
  readonly wait: Duration.Duration
  /** Brings the owner, as committed now, into force; `asks`: what each request waiting on it asked. */
  readonly apply: (owner: Owner, asks: ReadonlyArray<Ask>) => Effect.Effect<Applied, E>
  /**
   * Whether what was applied is no longer what is committed: a change came after the apply read
   * the owner, whose own convergence may have ended first (on another replica too).
   */
  readonly superseded: (owner: Owner, applied: Applied) => Effect.Effect<boolean, E>
  /**
   * Records the outcome on the owner. `asked`: a convergence was asked for since this one began,
   * or what it applied was superseded, so a change committed meanwhile is not in force yet.
   */
  readonly record: (owner: Owner, applied: Applied, asked: boolean) => Effect.Effect<A, E>
  /** Makes the waiting request read what the convergence recorded (it read the owner before). */
  readonly caughtUp: (owner: Owner) => Effect.Effect<void>
  /** Says on the owner that it is still being applied (a failure is left to the outcome). */
  readonly markStillApplying: (owner: Owner) => Effect.Effect<void, unknown>
}

/**
 * Whether a timer can wait `millis`: Node fires one set past 2^31 - 1 ms (about 24.8 days) at
 * once, so a longer bound is no bound (as Effect's own clock treats it).
 */
const timerCan = (millis: number) => millis <= 2 ** 31 - 1

/**
 * A convergence's outcome as its waiters see it: settled once, awaited by a request within a bound
 * on a timer, not on fibers racing (a `Deferred` with `timeoutOption` forks two per request).
 * The timers, as the still-applying mark's, are the host's: a `TestClock` does not move them.
 */
class Outcome<A, E> {
  private exit: Exit.Exit<A, E> | undefined
  private readonly listeners = new Set<(exit: Exit.Exit<A, E>) => void>()

  settle(exit: Exit.Exit<A, E>): void {
    if (this.exit !== undefined) return
    this.exit = exit
    for (const listener of this.listeners) listener(exit)
    this.listeners.clear()
  }

  /** The outcome if settled. */
  poll(): Option.Option<Exit.Exit<A, E>> {
    return Option.fromNullable(this.exit)
  }

  /** The outcome once settled. */
  await(): Effect.Effect<A, E> {
    return Effect.async<A, E>((resume) => Effect.sync(this.listen(resume)))
  }

  /** The outcome once settled, or none once `millis` have passed first. */
  within(millis: number): Effect.Effect<Option.Option<A>, E> {
    if (!timerCan(millis)) return Effect.asSome(this.await())
    return Effect.async<Option.Option<A>, E>((resume) => {
      const timer = setTimeout(() => {
        stop()
        resume(Effect.succeedNone)
      }, millis)
      const stop = this.listen((exit) => {
        clearTimeout(timer)
        resume(Effect.asSome(exit))
      })
      return Effect.sync(() => {
        clearTimeout(timer)
        stop()
      })
    })
  }

  /** Calls the listener with the outcome once settled (at once if it is); answers how to stop. */
  private listen(listener: (exit: Exit.Exit<A, E>) => void): () => void {
    if (this.exit !== undefined) {
      listener(this.exit)
      return () => undefined
    }
    this.listeners.add(listener)
    return () => void this.listeners.delete(listener)
  }
}

interface Waiter<Owner, Ask, A, E> {
  readonly owner: Owner
  readonly ask: Ask
  readonly outcome: Outcome<A, E>
  readonly asked: number
  /** Asked by a request that waits up to the bound (not the controller's or reconciler's own). */
  readonly bounded: boolean
  /** The asking request's span: the convergence links to each (it is no request's child). */
  readonly span: Option.Option<Tracer.AnySpan>
}

/** A convergence of owners on a work queue of this replica, running until the scope closes. */
export const make = <Owner, Ask, Applied, A, E>(
  options: Options<Owner, Ask, Applied, A, E>
): Effect.Effect<Convergence<Owner, Ask, A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { wait } = options
    /** Who waits for an owner's next convergence: each is answered by the first begun after it asked. */
    const waiters = new Map<string, Array<Waiter<Owner, Ask, A, E>>>()
    /** Each running convergence's `said`: done once the owner says how it stands. */
    const running = new Map<string, Deferred.Deferred<void>>()
    /** Owners to converge again, with no request waiting: what they applied was superseded. */
    const again = new Map<string, Owner>()

    const converging = (
      key: string,
      owner: Owner,
      waiting: ReadonlyArray<Waiter<Owner, Ask, A, E>>,
      said: Deferred.Deferred<void>
    ): Effect.Effect<A, E> =>
      Effect.gen(function*() {
        // Marked when the first of its requests is answered still applying; one no request waits
        // for (the controller's, the reconciler's) is not: what it repairs says so already.
        // The mark's fiber is forked by a timer, only once the bound has passed: a convergence
        // within it (nearly all) starts none.
        const bounded = waiting.filter((w) => w.bounded)
        const deadline = Math.min(...bounded.map((w) => w.asked)) + Duration.toMillis(wait)
        // The convergence's own runtime: the mark is traced and logged within it.
        const runtime = yield* Effect.runtime<never>()
        let marker: Fiber.RuntimeFiber<void> | undefined
        const timer = bounded.length === 0 || !timerCan(deadline - Date.now()) ? undefined : setTimeout(() => {
          marker = Runtime.runFork(runtime)(
            options.markStillApplying(owner).pipe(
              Effect.ignore,
              Effect.zipRight(Deferred.succeed(said, undefined)),
              Effect.asVoid
            )
          )
        }, Math.max(0, deadline - Date.now()))
        // The mark, if it was begun, is recorded before the outcome, which replaces it; a failure
        // ends it too: it must not land after a later outcome.
        const unmark = Effect.suspend(() => {
          clearTimeout(timer)
          return marker === undefined ? Effect.void : Fiber.interrupt(marker)
        })
        const applied = yield* options.apply(owner, waiting.map((w) => w.ask)).pipe(Effect.ensuring(unmark))
        const superseded = yield* options.superseded(owner, applied)
        if (superseded) {
          // Said on the owner, so that were this replica to stop before converging it again,
          // any replica's reconciler would find it not applied.
          yield* Effect.ignore(options.markStillApplying(owner))
          again.set(key, owner)
          yield* queue.add(key)
        }
        return yield* options.record(owner, applied, superseded || waiters.has(key))
      })

    const queue: Workqueue.Workqueue<string> = yield* Workqueue.make<string, never>({
      workers: options.workers,
      // A convergence never fails the queue: its outcome is recorded, and retried by the
      // reconciler and the controller, not here.
      baseDelay: Duration.zero,
      maxDelay: Duration.zero,
      process: (key) =>
        Effect.gen(function*() {
          const waiting = waiters.get(key) ?? []
          const owner = waiting[0]?.owner ?? again.get(key)
          waiters.delete(key)
          again.delete(key)
          if (owner === undefined) return
          const said = yield* Deferred.make<void>()
          running.set(key, said)
          const links = waiting.flatMap((w): Array<Tracer.SpanLink> =>
            Option.isSome(w.span) ? [{ _tag: "SpanLink", span: w.span.value, attributes: {} }] : []
          )
          yield* Effect.exit(
            converging(key, owner, waiting, said).pipe(
              Effect.withSpan(`${options.name}.converge`, {
                links,
                attributes: { ...options.attributes(owner), "tenet.requests": waiting.length }
              })
            )
          ).pipe(
            // Settled before the convergence stops running: a request whose bound passes in
            // between finds the outcome, not "still applying".
            Effect.tap((exit) => Effect.sync(() => waiting.forEach((w) => w.outcome.settle(exit)))),
            Effect.ensuring(Effect.zipRight(Deferred.succeed(said, undefined), Effect.sync(() => running.delete(key))))
          )
        }),
      onFailure: () => Effect.void
    })

    /** Asks for the owner's next convergence; the `Outcome` answered is its outcome. */
    const ask = (owner: Owner, what: Ask, bounded: boolean) =>
      Effect.gen(function*() {
        const outcome = new Outcome<A, E>()
        const span = yield* Effect.option(Effect.currentSpan)
        const key = options.key(owner)
        const waiter = { owner, ask: what, outcome, asked: Date.now(), bounded, span }
        waiters.set(key, [...(waiters.get(key) ?? []), waiter])
        yield* queue.add(key)
        return outcome
      })

    const request = (owner: Owner, what: Ask) =>
      Effect.flatMap(ask(owner, what, true), (outcome) =>
        outcome.within(Duration.toMillis(wait)).pipe(
          Effect.flatMap(Option.match({
            onSome: (a) => Effect.succeed(Option.some(a)),
            onNone: () =>
              Effect.gen(function*() {
                // Answered once the owner says so too (its convergence marks it at the same bound),
                // or with the outcome if it came meanwhile. A convergence still queued behind busy
                // workers marks the owner when it begins: the caller says it is still applying.
                const said = running.get(options.key(owner))
                if (said !== undefined) yield* Effect.timeoutOption(Deferred.await(said), wait)
                const done = outcome.poll()
                return Option.isSome(done) ? Option.some(yield* done.value) : Option.none<A>()
              })
          }))
        )).pipe(
          Effect.ensuring(options.caughtUp(owner)),
          Effect.withSpan(`${options.name}.wait`, { attributes: options.attributes(owner) })
        )

    const converge = (owner: Owner, what: Ask) => Effect.flatMap(ask(owner, what, false), (outcome) => outcome.await())

    return { request, converge }
  })

/** What a request past the bound is told: the owner is still being applied. */
export const stillApplying = (wait: Duration.Duration, what: string) =>
  `still being applied to the cluster after ${Duration.format(wait)}; the ${what}'s applied says when it is in force`
