/**
 * Server processes in one test process: each its own use cases, read model and connections over
 * a store (two of them on one PostgreSQL database behave as two replicas), driven through the
 * use cases as a request's handler would drive them.
 */
import { SqlClient } from "@effect/sql"
import { MemoryPorts } from "@tenet/adapters-memory"
import { PgDatabase } from "@tenet/adapters-postgres"
import { Identity, ServerInfo, Tenant, Tenants, UseCases } from "@tenet/core"
import type { Principal, Store } from "@tenet/core"
import type { Either, Scope } from "effect"
import { Effect, Layer, ManagedRuntime, Schema } from "effect"

/** Another store in place of the memory one, or none (the memory one). */
export type Ports = Layer.Layer<Store.Store> | Layer.Layer<never>

/** What wraps a process's store (e.g. `CommitGate.decorator`). */
export type Decorator = Layer.Layer<Store.Store, never, Store.Store>

/** One server process's use cases, read model included, over `store` (wrapped by `decorate`). */
export const processOn = (store: Ports, decorate?: Decorator) => {
  const ports = Layer.mergeAll(MemoryPorts.layer({ scryptLogN: 10 }), store)
  return ManagedRuntime.make(
    UseCases.layer.pipe(
      Layer.provideMerge(decorate === undefined ? ports : decorate.pipe(Layer.provideMerge(ports))),
      Layer.provide(Layer.succeed(ServerInfo.ServerInfo, { publicUrl: "http://127.0.0.1:8080", version: "test" }))
    )
  )
}

export type Process = ReturnType<typeof processOn>

/** What a process's use cases need to run `body`. */
export type Services = ManagedRuntime.ManagedRuntime.Context<Process>

const ORIGIN = { source_address: null }

/** `body` on `process`, its outcome as an Either (a refusal is an answer, not a failure). */
export const on = <A, E>(process: Process, body: Effect.Effect<A, E, Services>) =>
  Effect.promise(() => process.runPromise(Effect.either(body)))

/** A new tenant, made and logged into through `process`: its id, token and body credentials. */
export const newTenant = (process: Process) =>
  Effect.gen(function*() {
    const name = `t${Math.random().toString(36).slice(2, 10)}`
    const input = Schema.decodeUnknownSync(Tenant.TenantCreate)({ name, password: "processes-pw" })
    yield* Effect.promise(() => process.runPromise(Effect.flatMap(Tenants.Tenants, (t) => t.create(input))))
    const session = yield* Effect.promise(() =>
      process.runPromise(
        Effect.flatMap(Identity.Identity, (i) => i.tenantLogin({ name, password: "processes-pw" }, ORIGIN))
      )
    )
    const token = session.api_token
    /** `body` run as the tenant, on `process`, with the request's read session. */
    const asTenant = <A, E>(
      on: Process,
      body: (caller: Principal.TenantPrincipal) => Effect.Effect<A, E, Services>
    ) =>
      Effect.promise(() =>
        on.runPromise(
          Effect.either(Effect.flatMap(Effect.flatMap(Identity.Identity, (i) => i.authenticateTenant(token)), body))
        )
      ).pipe(Effect.map((outcome) => outcome as Either.Either<A, unknown>))
    return { id: session.id, name, token, creds: { tenant_id: session.id, token }, asTenant }
  })

/**
 * A PostgreSQL database of its own on the server at `url` for the scope, and a store layer on
 * it per process (each its own pool).
 */
export const freshDatabase = (url: string, label: string): Effect.Effect<() => Ports, never, Scope.Scope> =>
  Effect.gen(function*() {
    const admin = yield* Layer.build(PgDatabase.layerClient({ url, maxConnections: 1 })).pipe(Effect.orDie)
    const sql = yield* Effect.provide(SqlClient.SqlClient, admin)
    const name = `tenet_test_${label}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
    yield* sql.unsafe(`CREATE DATABASE ${name}`).pipe(Effect.orDie)
    yield* Effect.addFinalizer(() => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.orDie))
    const target = new URL(url)
    target.pathname = `/${name}`
    return () => PgDatabase.layer({ url: target.toString(), maxConnections: 4 }).pipe(Layer.orDie)
  })

/** `run` for each of `inputs` on `count` new processes over `makeStore`, disposed after each. */
export const onFresh = <I, E>(
  inputs: ReadonlyArray<I>,
  count: number,
  makeStore: () => Ports,
  run: (processes: ReadonlyArray<Process>, input: I) => Effect.Effect<void, E>,
  decorate?: Decorator
) =>
  Effect.forEach(inputs, (input) => {
    const processes = Array.from({ length: count }, () => processOn(makeStore(), decorate))
    return run(processes, input).pipe(
      Effect.ensuring(Effect.promise(() => Promise.all(processes.map((p) => p.dispose()))))
    )
  }, { discard: true })

/** `run` for each of `inputs` on two processes (two replicas) over a database of its own on the server at `url`. */
export const onFreshDatabases = <I, E>(
  url: string,
  label: string,
  inputs: ReadonlyArray<I>,
  run: (processes: ReadonlyArray<Process>, input: I) => Effect.Effect<void, E>,
  decorate?: Decorator
) =>
  Effect.scoped(
    Effect.forEach(
      inputs,
      (input) => Effect.flatMap(freshDatabase(url, label), (store) => onFresh([input], 2, store, run, decorate)),
      { discard: true }
    )
  )
