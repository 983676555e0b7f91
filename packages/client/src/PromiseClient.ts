/**
 * The client for programs that do not use Effect: the same groups, endpoints and types, each
 * call a Promise. Answers are plain objects with instants as JavaScript `Date`s (the Effect
 * client's `DateTime`s converted). A failed call rejects with the contract's error itself
 * (`NotFound`, `Conflict`, `RuleValidation`, ...: `Error`s with a `_tag`), so `instanceof` and
 * `_tag` work.
 *
 *   const tenet = createTenetClient({ baseUrl, tenantToken, tenantId })
 *   const vpc = await tenet.vpcs.create({ payload: { name: "prod", enable_internet: true } })
 */
import { FetchHttpClient } from "@effect/platform"
import type { HttpClient } from "@effect/platform"
import { Api, type Pod } from "@tenet/core"
import type { Duration } from "effect"
import { Cause, DateTime, Effect, Exit, Fiber, ManagedRuntime, Stream } from "effect"
import * as TenetClient from "./TenetClient.js"

/** An answer as this client gives it: every `DateTime` a `Date`, objects plain. */
export type Dated<A> = A extends string | number | boolean | bigint | symbol | null | undefined ? A
  : A extends DateTime.DateTime ? Date
  : A extends ReadonlyArray<infer I> ? ReadonlyArray<Dated<I>>
  : A extends object ? { readonly [K in keyof A]: Dated<A[K]> }
  : A

const dated = (value: unknown): unknown => {
  if (DateTime.isDateTime(value)) return DateTime.toDateUtc(value)
  if (Array.isArray(value)) return value.map(dated)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, dated(item)]))
  }
  return value
}

/** A change that takes `dry_run`, typed by it as the Effect client's is. */
export interface DryRunnable<Request, A, I> {
  (request: Request & { readonly urlParams: { readonly dry_run: true } }): Promise<Dated<I>>
  (request: Request & { readonly urlParams?: { readonly dry_run?: false | undefined } }): Promise<Dated<A>>
}

type Promised<F> = F extends
  TenetClient.DryRunnable<infer Request, infer A, infer I extends { readonly dry_run: true }, infer _E, infer _R>
  ? DryRunnable<Request, A, I>
  : F extends (...args: infer Args) => Effect.Effect<infer A, infer _E, infer _R> ? (...args: Args) => Promise<Dated<A>>
  : never

export type PromiseClient =
  & {
    readonly [G in keyof TenetClient.Endpoints]: {
      readonly [E in keyof TenetClient.Endpoints[G]]: Promised<TenetClient.Endpoints[G][E]>
    }
  }
  & {
    /** Lists a page at a time, following the server's `Link: <...>; rel="next"`. */
    readonly pages: PromisePages
    /**
     * The change stream as an async iterator (`TenetClient.Watching.watch`): resumed across
     * dropped connections; `break` out of the loop to close it.
     */
    readonly watch: (options?: { readonly since?: string }) => WatchIterable
    /** `TenetClient.Watching.waitUntilApplied`, as a Promise. */
    readonly waitUntilApplied: (
      rule: { readonly vpc_id: string },
      options?: { readonly timeout?: Duration.DurationInput }
    ) => Promise<void>
    /** `TenetClient.Watching.waitUntilRunning`, as a Promise of the pod. */
    readonly waitUntilRunning: (
      pod: { readonly id: string },
      options?: { readonly timeout?: Duration.DurationInput }
    ) => Promise<Dated<Pod.Pod>>
    /** Releases the client's resources (its HTTP connections). */
    readonly close: () => Promise<void>
  }

/**
 * The change stream as an async iterator; `close` (or leaving a `for await` loop) ends it at
 * once, also while a `next` waits. A failure (`Errors.Gone`, ...) rejects the pending `next`.
 */
export interface WatchIterable extends AsyncIterable<TenetClient.WatchItem> {
  readonly close: () => Promise<void>
}

/** `TenetClient.Pages` as Promises and async iterators. */
export interface PromisePages {
  /**
   * One page: `limit` items (the server's 1000 when left out) from `page_token` (the first page
   * without it). The fields are named as the Effect client and the wire name them.
   */
  readonly page: <K extends TenetClient.ListKey>(
    list: K,
    request?: TenetClient.ListRequest<K>,
    page?: { readonly limit?: number; readonly page_token?: string | undefined }
  ) => Promise<
    { readonly items: ReadonlyArray<Dated<TenetClient.ListItem<K>>>; readonly next_page_token: string | undefined }
  >
  /**
   * Every item, fetched a page at a time (`limit`, 100 by default) as the loop reads them:
   * `for await (const vpc of tenet.pages.all("vpcs.list")) ...`.
   */
  readonly all: <K extends TenetClient.ListKey>(
    list: K,
    request?: TenetClient.ListRequest<K>,
    options?: { readonly limit?: number }
  ) => AsyncIterable<Dated<TenetClient.ListItem<K>>>
}

const settle = <A, E>(exit: Exit.Exit<A, E>): Promise<A> =>
  Exit.isSuccess(exit) ? Promise.resolve(exit.value) : Promise.reject(Cause.squash(exit.cause))

const settleDated = <A, E>(exit: Exit.Exit<A, E>): Promise<unknown> => settle(exit).then(dated)

/** Each endpoint of the contract, as a function that runs the Effect client's call on the runtime. */
const promised = (
  runtime: ManagedRuntime.ManagedRuntime<HttpClient.HttpClient, never>,
  client: Promise<TenetClient.Client>
): PromiseClient => {
  const call = (group: string, endpoint: string) => (...args: Array<unknown>) =>
    client.then((c) => {
      const calls: unknown = Reflect.get(c, group)
      const run: unknown = (calls as Record<string, unknown> | undefined)?.[endpoint]
      if (typeof run !== "function") return Promise.reject(new TypeError(`no endpoint ${group}.${endpoint}`))
      return runtime.runPromiseExit((run as (...a: Array<unknown>) => Effect.Effect<unknown, unknown>)(...args))
        .then(settleDated)
    })
  const groups = Object.fromEntries(
    Object.values(Api.TenetApi.groups).map((group) => [
      group.identifier,
      Object.fromEntries(Object.keys(group.endpoints).map((endpoint) => [endpoint, call(group.identifier, endpoint)]))
    ])
  )
  const page: PromisePages["page"] = (list, request, options = {}) =>
    client.then((c) =>
      runtime.runPromiseExit(
        c.pages.page(list, request, {
          ...(options.limit === undefined ? {} : { limit: options.limit }),
          page_token: options.page_token
        })
      ).then(settle)
    ).then((found) => ({ items: dated(found.items) as never, next_page_token: found.next_page_token }))
  const all = <K extends TenetClient.ListKey>(
    list: K,
    request?: TenetClient.ListRequest<K>,
    options: { readonly limit?: number } = {}
  ): AsyncIterable<Dated<TenetClient.ListItem<K>>> => ({
    async *[Symbol.asyncIterator]() {
      let page_token: string | undefined = undefined
      do {
        const found: {
          readonly items: ReadonlyArray<Dated<TenetClient.ListItem<K>>>
          readonly next_page_token: string | undefined
        } = await page(list, request, { limit: options.limit ?? 100, page_token })
        yield* found.items
        page_token = found.next_page_token
      } while (page_token !== undefined)
    }
  })
  const pages: PromisePages = { page, all }
  const watch = (options?: { readonly since?: string }): WatchIterable => {
    const buffered: Array<TenetClient.WatchItem> = []
    const waiting: Array<(result: IteratorResult<TenetClient.WatchItem>) => void> = []
    let failure: { readonly error: unknown } | undefined
    let closed = false
    const deliver = () => {
      while (waiting.length > 0 && (buffered.length > 0 || closed || failure !== undefined)) {
        const resolve = waiting.shift()!
        if (buffered.length > 0) resolve({ done: false, value: buffered.shift()! })
        else resolve({ done: true, value: undefined })
      }
    }
    const fiber = client.then((c) =>
      runtime.runFork(
        Stream.runForEach(c.watch(options), (item) =>
          Effect.sync(() => {
            buffered.push(item)
            deliver()
          }))
      )
    )
    void fiber.then((f) => runtime.runPromise(Fiber.await(f))).then((exit) => {
      if (Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) failure = { error: Cause.squash(exit.cause) }
      closed = true
      deliver()
    })
    const close = async () => {
      closed = true
      deliver()
      await runtime.runPromise(Fiber.interrupt(await fiber))
    }
    return {
      close,
      [Symbol.asyncIterator]: () => ({
        next: () => {
          if (buffered.length > 0) return Promise.resolve({ done: false, value: buffered.shift()! })
          if (failure !== undefined) return Promise.reject(failure.error)
          if (closed) return Promise.resolve({ done: true, value: undefined })
          return new Promise((resolve) => waiting.push(resolve))
        },
        return: () => close().then(() => ({ done: true, value: undefined }))
      })
    }
  }
  const waitUntilApplied = (
    rule: { readonly vpc_id: string },
    options?: { readonly timeout?: Duration.DurationInput }
  ) => client.then((c) => runtime.runPromiseExit(c.waitUntilApplied(rule, options)).then(settle))
  const waitUntilRunning = (pod: { readonly id: string }, options?: { readonly timeout?: Duration.DurationInput }) =>
    client.then((c) => runtime.runPromiseExit(c.waitUntilRunning(pod, options)).then(settleDated))
  // Built group by group from the contract: its type is the mapped type `PromiseClient`,
  // which no Object.fromEntries can produce.
  // eslint-disable-next-line no-restricted-syntax -- see above
  return {
    ...groups,
    pages,
    watch,
    waitUntilApplied,
    waitUntilRunning,
    close: () => runtime.dispose()
  } as unknown as PromiseClient
}

/** A Promise client: the Effect client on fetch, run for each call. */
export const createTenetClient = (options: TenetClient.Options): PromiseClient => {
  const runtime = ManagedRuntime.make(FetchHttpClient.layer)
  return promised(runtime, runtime.runPromise(TenetClient.make(options)))
}

/** Runs a login on a runtime of its own; the client it answers keeps that runtime. */
const afterLogin = async (login: Effect.Effect<TenetClient.Client, unknown, HttpClient.HttpClient>) => {
  const runtime = ManagedRuntime.make(FetchHttpClient.layer)
  try {
    const client = await runtime.runPromiseExit(login).then(settle)
    return promised(runtime, Promise.resolve(client))
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}

/** Logs in as a tenant and answers a Promise client acting as it. */
export const loginTenant = (options: Parameters<typeof TenetClient.loginTenant>[0]): Promise<PromiseClient> =>
  afterLogin(TenetClient.loginTenant(options))

/** Logs in as the admin and answers a Promise client acting as the admin. */
export const loginAdmin = (options: Parameters<typeof TenetClient.loginAdmin>[0]): Promise<PromiseClient> =>
  afterLogin(TenetClient.loginAdmin(options))
