/**
 * The read model never drifts from the store: for random sequences of writes (VPCs, subnets,
 * rules created, patched, reordered and deleted, pods created, scaled and deleted with their
 * tunnels, tunnels, registry credentials, VPCs deleted with what they hold), after each
 * one, the state every process's read model serves (to a request, and off one) equals a fresh
 * load of the store at the same revision. On PostgreSQL two processes write (each its own use
 * cases, read model and connections, on one database) and each is checked; on memory and
 * embedded, one.
 */
import { describe, expect, it } from "@effect/vitest"
import { PgEmbedded } from "@tenet/adapters-postgres"
import {
  Domains,
  Net,
  Pod,
  Pods,
  ReadModel,
  RegistryCredential,
  RegistryCredentials,
  SecurityRule,
  SecurityRules,
  Store,
  Subnet,
  Subnets,
  Tenants,
  TenantState,
  Tunnel,
  Tunnels,
  Vpc,
  Vpcs
} from "@tenet/core"
import type { Ids } from "@tenet/core"
import { Effect, Either, FastCheck, Layer, Option, Schema } from "effect"
import * as CommitGate from "./CommitGate.js"
import type { Process } from "./Processes.js"
import { newTenant, onFresh, onFreshDatabases } from "./Processes.js"

const url = process.env.TENET_TEST_DATABASE_URL

/** What a step does, picked by number: the same sequence is replayed on every store. */
const runSteps = (together: number) => (processes: ReadonlyArray<Process>, picks: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const [first] = processes
    const { asTenant, creds, id, name } = yield* newTenant(first!)
    // The tenant's own domain, for its tunnels.
    const domain = `${name}.example.com`
    yield* Effect.promise(() =>
      first!.runPromise(
        Effect.flatMap(Domains.Domains, (d) => d.assign(id, Schema.decodeUnknownSync(Net.DomainName)(domain)))
      )
    )
    let block = 0
    let written = 0
    const write = (process: Process, step: number, pick: number) =>
      asTenant(process, (caller) =>
        Effect.gen(function*() {
          const store = yield* Store.Store
          const state = Option.getOrThrow(yield* store.snapshots.tenant(caller.tenant_id))
          const vpc = state.rows.vpcs[pick % Math.max(1, state.rows.vpcs.length)]
          const rules = vpc === undefined ? [] : state.rows.rules.filter((r) => r.vpc_id === vpc.id)
          const rule = rules[pick % Math.max(1, rules.length)]
          const subnet = vpc === undefined ? undefined : state.rows.subnets.find((s) => s.vpc_id === vpc.id)
          const pod = state.rows.pods[pick % Math.max(1, state.rows.pods.length)]
          switch (vpc === undefined ? 0 : pick % 12) {
            case 0:
              return yield* Effect.flatMap(Vpcs.Vpcs, (v) =>
                v.create(
                  caller,
                  Schema.decodeUnknownSync(Vpc.VpcCreate)({ ...creds, name: `v${step}`, enable_internet: false })
                ))
            case 1: {
              if (vpc === undefined) return
              block++
              return yield* Effect.flatMap(Subnets.Subnets, (s) =>
                s.create(
                  caller,
                  Schema.decodeUnknownSync(Subnet.SubnetCreate)({
                    ...creds,
                    vpc_id: vpc.id,
                    name: `s${step}`,
                    cidr: `10.${block}.0.0/24`,
                    gateway_ip: `10.${block}.0.1`
                  })
                ))
            }
            case 2:
            case 3:
              if (vpc === undefined) return
              return yield* Effect.flatMap(SecurityRules.SecurityRules, (s) =>
                s.create(
                  caller,
                  Schema.decodeUnknownSync(SecurityRule.SecurityRuleCreate)({
                    vpc_id: vpc.id,
                    name: `r${step}`,
                    direction: pick % 2 === 0 ? "ingress" : "egress",
                    action: "allow",
                    priority: 1 + pick,
                    protocol: "tcp",
                    ports: String(1 + pick),
                    remote_type: "cidr",
                    remote_cidr: "10.0.0.0/8"
                  })
                ))
            case 4:
              if (rule === undefined) return
              return yield* Effect.flatMap(
                SecurityRules.SecurityRules,
                (s) => s.update(caller, rule.id, { priority: 1 + (pick * 7) % 1000 })
              )
            case 5:
              if (rule === undefined) return
              return yield* Effect.flatMap(SecurityRules.SecurityRules, (s) => s.delete(caller, rule.id))
            case 6:
              if (vpc === undefined) return
              return yield* Effect.flatMap(
                SecurityRules.SecurityRules,
                (s) => s.reorder(caller, vpc.id, [...rules].reverse().map((r) => r.id))
              )
            case 7:
              if (vpc === undefined || state.rows.vpcs.length < 3) return
              return yield* Effect.flatMap(Vpcs.Vpcs, (v) => v.delete(caller, vpc.id))
            case 8:
              if (vpc === undefined || subnet === undefined) return
              return yield* Effect.flatMap(Pods.Pods, (p) =>
                p.create(
                  caller,
                  Schema.decodeUnknownSync(Pod.PodCreate)({
                    ...creds,
                    vpc_id: vpc.id,
                    subnet_id: subnet.id,
                    name: `p${step}`,
                    container_image: "nginx:1.27"
                  })
                ))
            case 9:
              if (pod === undefined) return
              return yield* Effect.flatMap(Tunnels.Tunnels, (t) =>
                t.createForPod(
                  caller,
                  pod.id,
                  Schema.decodeUnknownSync(Tunnel.TunnelCreate)({
                    tunnel_name: `t${step}`,
                    subdomain: `t${step}`,
                    protocol_type: "http",
                    domain
                  })
                ))
            case 10:
              if (pod === undefined) return
              return yield* Effect.flatMap(
                Pods.Pods,
                (p): Effect.Effect<unknown, unknown> =>
                  pick % 2 === 0 ? p.addReplica(caller, pod.id) : p.delete(caller, pod.id).pipe(Effect.as("deleted"))
              )
            case 11:
              return yield* Effect.flatMap(RegistryCredentials.RegistryCredentials, (r) =>
                r.create(
                  caller,
                  caller.tenant_id,
                  Schema.decodeUnknownSync(RegistryCredential.RegistryCredentialCreate)({
                    name: `c${step}`,
                    server: "ghcr.io",
                    username: "u",
                    password: "p"
                  })
                ))
          }
        }))
    for (let step = 0; step < picks.length; step += together) {
      const process = processes[(step / together) % processes.length]!
      const writes = picks.slice(step, step + together).map((pick, k) => write(process, step + k, pick))
      // Together: the first's commit held until the others have queued behind it, so they are
      // committed as one batch.
      const outcomes = writes.length === 1
        ? [yield* writes[0]!]
        : yield* CommitGate.behindAHeldCommit(id, writes[0]!, writes.slice(1), Effect.sleep("100 millis"))
      for (const outcome of outcomes) if (Either.isRight(outcome) && outcome.right !== undefined) written++
      // Every process's read model serves the store's state, as a fresh load reads it.
      for (const [index, reader] of processes.entries()) {
        const compared = yield* asTenant(reader, (caller) =>
          Effect.gen(function*() {
            const served = yield* Effect.flatMap(ReadModel.ReadModel, (model) => model.stateOf(caller.tenant_id))
            const store = yield* Store.Store
            const loaded = Option.getOrThrow(yield* store.snapshots.tenant(caller.tenant_id))
            return {
              served: served.toSnapshot(),
              fresh: TenantState.TenantState.fromSnapshot(caller.tenant_id as Ids.TenantId, loaded).toSnapshot()
            }
          }))
        const { fresh, served } = Either.getOrThrowWith(compared, (e) => new Error(`the check failed: ${String(e)}`))
        expect(served, `process ${index} after step ${step} of ${JSON.stringify(picks)}`).toEqual(fresh)
        // Off a request too (as a convergence reads), where a sole writer serves the view its
        // own commits made without reading the revision.
        const offRequest = yield* Effect.promise(() =>
          reader.runPromise(Effect.flatMap(ReadModel.ReadModel, (model) => model.stateOf(id)))
        )
        expect(offRequest.toSnapshot(), `process ${index}, off a request, after step ${step}`).toEqual(fresh)
      }
    }
    // Most steps write (a step may find nothing to act on, or be refused as a user's would be).
    expect(written, JSON.stringify(picks)).toBeGreaterThan(picks.length / 3)
    // The tenant deleted: no process serves what it owned, off a request either.
    yield* Effect.promise(() => first!.runPromise(Effect.flatMap(Tenants.Tenants, (t) => t.delete(id))))
    for (const reader of processes) {
      const offRequest = yield* Effect.promise(() =>
        reader.runPromise(Effect.flatMap(ReadModel.ReadModel, (model) => model.stateOf(id)))
      )
      expect(offRequest.vpcs).toEqual([])
    }
  })

/**
 * Sequences of steps, the same for every store. Each begins with three VPCs, two with a subnet
 * (steps 0, 1, 12, 13, 24), so the random steps after find something to act on: a sequence
 * that drew no create could otherwise write too little to pass the "most steps write" check.
 */
const SEQUENCES = FastCheck.sample(FastCheck.array(FastCheck.nat(799), { minLength: 10, maxLength: 30 }), 6)
  .map((picks) => [0, 1, 12, 13, 24, ...picks])

describe("the write path", () => {
  it.live(
    "memory: the read model serves what a fresh load of the store reads, after every write",
    () => onFresh(SEQUENCES, 1, () => Layer.empty, runSteps(1)),
    120_000
  )

  it.live(
    "embedded: the read model serves what a fresh load of the store reads, after every write",
    () => onFresh(SEQUENCES, 1, () => PgEmbedded.layer().pipe(Layer.orDie), runSteps(1)),
    180_000
  )

  it.live.skipIf(url === undefined)(
    "PostgreSQL, two processes: each read model serves what a fresh load of the store reads, after every write",
    // A database of its own per sequence; each process its own pool on it.
    () => onFreshDatabases(url!, "write_path", SEQUENCES, runSteps(1)),
    300_000
  )

  // Writes four at a time through one process, committed as one batch (ARCHITECTURE.md, "Writes in batches").
  it.live(
    "memory: after each batch of writes, the read model serves what a fresh load of the store reads",
    () => onFresh(SEQUENCES.slice(0, 2), 1, () => Layer.empty, runSteps(4), CommitGate.decorator),
    120_000
  )

  it.live(
    "embedded: after each batch of writes, the read model serves what a fresh load of the store reads",
    () =>
      onFresh(SEQUENCES.slice(0, 2), 1, () => PgEmbedded.layer().pipe(Layer.orDie), runSteps(4), CommitGate.decorator),
    180_000
  )

  it.live.skipIf(url === undefined)(
    "PostgreSQL, two processes: after each batch of writes through either, each read model serves what a fresh load reads",
    () => onFreshDatabases(url!, "write_batches", SEQUENCES.slice(0, 2), runSteps(4), CommitGate.decorator),
    300_000
  )
})
