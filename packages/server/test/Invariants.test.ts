/**
 * What Tenet promises across rows holds under any interleaving of the writes that can move it:
 * random rounds of two verdict-moving writes fired at once (rules created, patched, deleted and
 * declared; VPCs and subnets created and deleted; topology posts; pods created and deleted;
 * guardrails, a VPC's and tenant-wide; an address set edited, rules naming it), and after every round a fresh read of the store holds
 * every guardrail, no two overlapping blocks in a VPC, at most 200 rules a VPC, no rule naming
 * an address set that is gone, and no delete left half done. On PostgreSQL the two writes of a round go through two processes on one
 * database (two replicas); on memory and embedded, through one.
 */
import { describe, expect, it } from "@effect/vitest"
import { PgEmbedded } from "@tenet/adapters-postgres"
import {
  AddressSet,
  AddressSets,
  AddressSetStrategy,
  Guardrail,
  Guardrails,
  Invariants,
  Net,
  Pipeline,
  Pod,
  Pods,
  SecurityRule,
  SecurityRules,
  SecurityRuleStrategy,
  Store,
  Subnet,
  Subnets,
  TenantState,
  Topologies,
  Topology,
  Vpc,
  Vpcs
} from "@tenet/core"
import type { Ids, Principal } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import type { Either } from "effect"
import { DateTime, Deferred, Effect, FastCheck as fc, Layer, Option, Schema } from "effect"
import * as CommitGate from "./CommitGate.js"
import type { Process, Services } from "./Processes.js"
import { newTenant, on, onFresh, onFreshDatabases } from "./Processes.js"

const url = process.env.TENET_TEST_DATABASE_URL

/** Blocks that overlap one another in every way: nested, equal, apart. */
const BLOCKS = ["10.0.1.0/24", "10.0.0.0/16", "10.0.2.0/24", "10.1.0.0/16", "10.0.1.0/25"]

const gatewayOf = (cidr: string) => cidr.replace(/\.0\/\d+$/, ".1")

/** Guardrails the writes below can break: SSH from the VPCs' own space denied, HTTPS from it allowed. */
const GUARDRAILS = [
  { require: "deny", ports: "22", name: "no ssh from private space" },
  { require: "allow", ports: "443", name: "https from private space" }
].map((g) =>
  Schema.decodeUnknownSync(Guardrail.GuardrailCreate)({
    ...g,
    description: null,
    direction: "ingress",
    protocol: "tcp",
    remote_cidr: "10.0.0.0/8",
    local: null
  })
)

type Tenant = Effect.Effect.Success<ReturnType<typeof newTenant>>

/** One verdict-moving write, chosen and shaped by `pick`, on the tenant's state as the store holds it. */
const write =
  (tenant: Tenant, pick: number, round: number) =>
  (caller: Principal.TenantPrincipal): Effect.Effect<unknown, unknown, Services> =>
    Effect.gen(function*() {
      const store = yield* Store.Store
      const state = Option.getOrThrow(yield* store.snapshots.tenant(caller.tenant_id))
      const vpcs = state.rows.vpcs.filter((v) => v.lifecycle === "active")
      const vpc = vpcs[pick % Math.max(1, vpcs.length)]
      const other = vpcs[(pick + 1) % Math.max(1, vpcs.length)]
      const rules = vpc === undefined ? [] : state.rows.rules.filter((r) => r.vpc_id === vpc.id)
      const rule = rules[Math.floor(pick / 7) % Math.max(1, rules.length)]
      const block = BLOCKS[Math.floor(pick / 3) % BLOCKS.length]!
      const subnet = state.rows.subnets.find((s) => s.vpc_id === vpc?.id)
      const pod = state.rows.pods[pick % Math.max(1, state.rows.pods.length)]
      const ruleOf = (port: string) => ({
        name: `r${round}-${pick}`,
        direction: "ingress",
        action: pick % 2 === 0 ? "allow" : "deny",
        priority: 1 + (pick % 50),
        protocol: "tcp",
        ports: port,
        ...(pick % 3 === 0
          ? { remote_type: "vpc", remote_vpc_id: other?.id }
          : { remote_type: "cidr", remote_cidr: pick % 3 === 1 ? "10.0.0.0/8" : "0.0.0.0/0" })
      })
      const port = pick % 4 === 0 ? "443" : "22"
      const name = `w${round}x${pick}`
      const set = state.rows.addressSets[0]
      switch (vpc === undefined ? 4 : pick % 15) {
        case 0:
        case 1:
          return yield* Effect.flatMap(SecurityRules.SecurityRules, (s) =>
            s.create(
              caller,
              Schema.decodeUnknownSync(SecurityRule.SecurityRuleCreate)({ vpc_id: vpc!.id, ...ruleOf(port) })
            ))
        case 2:
          if (rule === undefined) return
          return yield* Effect.flatMap(SecurityRules.SecurityRules, (s) =>
            s.update(
              caller,
              rule.id,
              Schema.decodeUnknownSync(SecurityRule.SecurityRulePatch)({
                action: rule.action === "allow" ? "deny" : "allow",
                ...(rule.remote_type === "vpc" ? {} : { remote_cidr: pick % 2 === 0 ? "10.0.0.0/8" : "0.0.0.0/0" })
              })
            ))
        case 3:
          if (rule === undefined) return
          return yield* Effect.flatMap(SecurityRules.SecurityRules, (s) => s.delete(caller, rule.id))
        case 4:
          return yield* Effect.flatMap(Vpcs.Vpcs, (v) =>
            v.create(
              caller,
              Schema.decodeUnknownSync(Vpc.VpcCreate)({ ...tenant.creds, name, enable_internet: false })
            ))
        case 5:
          if (vpcs.length < 3) return
          return yield* Effect.flatMap(Vpcs.Vpcs, (v) => v.delete(caller, vpc!.id))
        case 6:
          return yield* Effect.flatMap(Subnets.Subnets, (s) =>
            s.create(
              caller,
              Schema.decodeUnknownSync(Subnet.SubnetCreate)({
                ...tenant.creds,
                vpc_id: vpc!.id,
                name,
                cidr: block,
                gateway_ip: gatewayOf(block)
              })
            ))
        case 7:
          return yield* Effect.flatMap(Topologies.Topologies, (t) =>
            t.deploy(
              caller,
              caller.tenant_id,
              Schema.decodeUnknownSync(Topology.TopologyRequest)({
                token: tenant.token,
                vpcs: pick % 2 === 0 ? [{ name, enable_internet: false }] : [],
                subnets: [{
                  name,
                  vpc_name: pick % 2 === 0 ? name : vpc!.name,
                  cidr: block,
                  gateway_ip: gatewayOf(block)
                }]
              })
            ))
        case 8:
          if (subnet === undefined) return
          return yield* Effect.flatMap(Pods.Pods, (p) =>
            p.create(
              caller,
              Schema.decodeUnknownSync(Pod.PodCreate)({
                ...tenant.creds,
                vpc_id: vpc!.id,
                subnet_id: subnet.id,
                name,
                container_image: "nginx:1.27"
              })
            ))
        case 9:
          if (pod === undefined) return
          return yield* Effect.flatMap(Pods.Pods, (p) => p.delete(caller, pod.id))
        case 10:
          return yield* Effect.flatMap(Guardrails.Guardrails, (g) =>
            g.create(caller, vpc!.id, { ...GUARDRAILS[pick % 2]!, name: `${GUARDRAILS[pick % 2]!.name} ${name}` }))
        case 11:
          return yield* Effect.flatMap(
            Guardrails.Guardrails,
            (g) =>
              g.createForTenant(caller.tenant_id, {
                ...GUARDRAILS[pick % 2]!,
                name: `${GUARDRAILS[pick % 2]!.name} ${name}`
              })
          )
        case 12:
          if (set === undefined) {
            return yield* Effect.flatMap(AddressSets.AddressSets, (a) =>
              a.create(
                caller,
                Schema.decodeUnknownSync(AddressSet.AddressSetCreate)({ name, entries: [{ cidr: "10.0.0.0/8" }] })
              ))
          }
          // Refused while a rule names it (409), as a user's would be.
          if (pick % 5 === 0) {
            return yield* Effect.flatMap(AddressSets.AddressSets, (a) =>
              a.delete(caller, set.id))
          }
          return yield* Effect.flatMap(AddressSets.AddressSets, (a) =>
            a.update(
              caller,
              set.id,
              Schema.decodeUnknownSync(AddressSet.AddressSetPatch)({
                entries: [{ cidr: pick % 2 === 0 ? "10.0.0.0/8" : "198.51.100.0/24" }]
              })
            ))
        case 13:
          if (set === undefined) {
            return
          }
          return yield* Effect.flatMap(SecurityRules.SecurityRules, (s) =>
            s.create(
              caller,
              Schema.decodeUnknownSync(SecurityRule.SecurityRuleCreate)({
                vpc_id: vpc!.id,
                ...ruleOf(port),
                remote_type: "address_set",
                remote_cidr: null,
                remote_vpc_id: null,
                remote_address_set_id: set.id
              })
            ))
        default:
          return yield* Effect.flatMap(SecurityRules.SecurityRules, (s) =>
            s.replace(
              caller,
              vpc!.id,
              [Schema.decodeUnknownSync(SecurityRule.RuleDeclaration)(ruleOf(port))],
              {}
            ))
      }
    })

/** Every promise, on a fresh read of the store. */
const holds = (process: Process, tenantId: Ids.TenantId, context: string) =>
  Effect.gen(function*() {
    const loaded = yield* on(process, Effect.flatMap(Store.Store, (store) => store.snapshots.tenant(tenantId)))
    const snapshot = Option.getOrThrow(loaded._tag === "Right" ? loaded.right : Option.none())
    const state = TenantState.TenantState.fromSnapshot(tenantId, snapshot)
    for (const vpc of state.vpcs) {
      expect(vpc.lifecycle, `${context}: VPC ${vpc.id} left marked`).toBe("active")
      expect(Invariants.violationsIn(state, vpc.id, null), `${context}: guardrails of ${vpc.id}`).toEqual([])
      expect(state.rulesOf(vpc.id).length).toBeLessThanOrEqual(SecurityRule.MAX_RULES_PER_VPC)
      for (const rule of state.rulesOf(vpc.id)) {
        if (rule.remote_address_set_id === null) continue
        expect(state.addressSet(rule.remote_address_set_id), `${context}: rule ${rule.id} names a set gone`)
          .toBeDefined()
      }
      const blocks = state.subnetsOf(vpc.id).map((s) => s.cidr)
      for (const [i, a] of blocks.entries()) {
        for (const b of blocks.slice(i + 1)) {
          expect(Net.overlaps(Net.cidrOf(a), Net.cidrOf(b)), `${context}: ${a} and ${b} in ${vpc.id}`).toBe(false)
        }
      }
    }
    for (const pod of state.pods) expect(pod.lifecycle, `${context}: pod ${pod.id} left marked`).toBe("active")
    return state
  })

/** Rounds of two writes at once, through `processes` in turn; every promise checked after each. */
const race =
  (batched: boolean) => (processes: ReadonlyArray<Process>, rounds: ReadonlyArray<readonly [number, number]>) =>
    Effect.gen(function*() {
      const [first, second = first] = processes
      const tenant = yield* newTenant(first!)
      // Two VPCs with a block each to start from, and a rule naming the other VPC.
      for (const [i, cidr] of ["10.0.1.0/24", "10.0.2.0/24"].entries()) {
        yield* tenant.asTenant(first!, (caller) => write(tenant, 4, -1 - i)(caller))
        yield* tenant.asTenant(first!, (caller) =>
          Effect.gen(function*() {
            const store = yield* Store.Store
            const state = Option.getOrThrow(yield* store.snapshots.tenant(caller.tenant_id))
            return yield* Effect.flatMap(Subnets.Subnets, (s) =>
              s.create(
                caller,
                Schema.decodeUnknownSync(Subnet.SubnetCreate)({
                  ...tenant.creds,
                  vpc_id: state.rows.vpcs[i]!.id,
                  name: `s${i}`,
                  cidr,
                  gateway_ip: gatewayOf(cidr)
                })
              ))
          }))
      }
      // An address set the rounds edit and name: entries apart from the guardrails' space to start.
      yield* tenant.asTenant(first!, (caller) =>
        Effect.flatMap(AddressSets.AddressSets, (a) =>
          a.create(
            caller,
            Schema.decodeUnknownSync(AddressSet.AddressSetCreate)({
              name: "offices",
              entries: [{ cidr: "198.51.100.0/24" }]
            })
          )))
      let changed = 0
      for (const [round, [a, b]] of rounds.entries()) {
        const before = yield* holds(first!, tenant.id, `before round ${round}`)
        // Batched: a third write's commit held until the round's two have queued behind it on the
        // first process, so they are decided in turn and committed as one batch, while a fourth
        // goes through the second process (on PostgreSQL, a replica racing the batch).
        const outcomes = batched
          ? (yield* CommitGate.behindAHeldCommit(
            tenant.id,
            tenant.asTenant(first!, write(tenant, (a * 7 + b) % 840, round + 1000)),
            [
              tenant.asTenant(first!, write(tenant, a, round)),
              tenant.asTenant(first!, write(tenant, b, round)),
              tenant.asTenant(second!, write(tenant, (a + b) % 840, round + 2000))
            ],
            Effect.sleep("50 millis")
          )).slice(1)
          : yield* Effect.all([
            tenant.asTenant(first!, write(tenant, a, round)),
            tenant.asTenant(second!, write(tenant, b, round))
          ], { concurrency: "unbounded" })
        // What each write answered, to read a failure by.
        const answered = outcomes.map((o) => o._tag === "Left" ? String(o.left) : "ok").join("; ")
        const after = yield* holds(
          first!,
          tenant.id,
          `after round ${round} (${a}, ${b}: ${answered}) of ${JSON.stringify(rounds)}`
        )
        if (after.revision !== before.revision) changed++
      }
      // The rounds wrote (a write may find nothing to act on, or be refused as a user's would be).
      expect(changed, JSON.stringify(rounds)).toBeGreaterThan(rounds.length / 4)
    })

/** A rule's fields allowing SSH in from an address set, ahead of the VPC's other rules. */
const allowFromSet = (setId: string) => ({
  action: "allow",
  priority: 10,
  remote_type: "address_set",
  remote_address_set_id: setId
})

/** Setup through the use cases, which must succeed. */
const must = <A>(outcome: Effect.Effect<Either.Either<A, unknown>>) =>
  Effect.flatMap(outcome, (e) => e._tag === "Right" ? Effect.succeed(e.right) : Effect.dieMessage(String(e.left)))

const guardrailBody = (require: "deny" | "allow", ports: string, name: string) =>
  Schema.decodeUnknownSync(Guardrail.GuardrailCreate)({
    name,
    description: null,
    require,
    direction: "ingress",
    protocol: "tcp",
    ports,
    remote_cidr: "10.0.0.0/8",
    local: null
  })

/** A tenant's setup and writes, on one process, through the use cases. */
const writer = (tenant: Tenant, process: Process) => {
  const as = <A>(body: (caller: Principal.TenantPrincipal) => Effect.Effect<A, unknown, Services>) =>
    tenant.asTenant(process, body)
  return {
    vpc: (name: string) =>
      as((caller) =>
        Effect.flatMap(
          Vpcs.Vpcs,
          (v) =>
            v.create(caller, Schema.decodeUnknownSync(Vpc.VpcCreate)({ ...tenant.creds, name, enable_internet: false }))
        )
      ),
    subnet: (vpcId: string, cidr: string, name = `s${cidr.replace(/[./]/g, "-")}`) =>
      as((caller) =>
        Effect.flatMap(Subnets.Subnets, (s) =>
          s.create(
            caller,
            Schema.decodeUnknownSync(Subnet.SubnetCreate)({
              ...tenant.creds,
              vpc_id: vpcId,
              name,
              cidr,
              gateway_ip: gatewayOf(cidr)
            })
          ))
      ),
    rule: (vpcId: string, fields: Record<string, unknown>) =>
      as((caller) =>
        Effect.flatMap(SecurityRules.SecurityRules, (s) =>
          s.create(
            caller,
            Schema.decodeUnknownSync(SecurityRule.SecurityRuleCreate)({
              vpc_id: vpcId,
              name: `r${Math.random().toString(36).slice(2, 8)}`,
              direction: "ingress",
              protocol: "tcp",
              ports: "22",
              ...fields
            })
          ))
      ),
    /** The VPC's rules gone, the seeded one too: nothing is allowed in. */
    unseed: (vpcId: string) =>
      as((caller) =>
        Effect.gen(function*() {
          const rules = yield* SecurityRules.SecurityRules
          const state = Option.getOrThrow(
            yield* Effect.flatMap(Store.Store, (s) => s.snapshots.tenant(caller.tenant_id))
          )
          for (const r of state.rows.rules.filter((r) => r.vpc_id === vpcId)) yield* rules.delete(caller, r.id)
        })
      ),
    guardrail: (vpcId: string, body: Guardrail.GuardrailCreate) =>
      as((caller) => Effect.flatMap(Guardrails.Guardrails, (g) => g.create(caller, vpcId as Ids.VpcId, body))),
    tenantGuardrail: (body: Guardrail.GuardrailCreate) =>
      as((caller) => Effect.flatMap(Guardrails.Guardrails, (g) => g.createForTenant(caller.tenant_id, body))),
    addressSet: (cidr: string) =>
      as((caller) =>
        Effect.flatMap(AddressSets.AddressSets, (a) =>
          a.create(
            caller,
            Schema.decodeUnknownSync(AddressSet.AddressSetCreate)({ name: "offices", entries: [{ cidr }] })
          ))
      ),
    deleteSet: (setId: string) =>
      as((caller) => Effect.flatMap(AddressSets.AddressSets, (a) => a.delete(caller, setId as Ids.AddressSetId))),
    deleteRule: (ruleId: string) =>
      as((caller) =>
        Effect.flatMap(SecurityRules.SecurityRules, (s) => s.delete(caller, ruleId as Ids.SecurityRuleId))
      ),
    editSet: (setId: string, cidr: string) =>
      as((caller) =>
        Effect.flatMap(AddressSets.AddressSets, (a) =>
          a.update(
            caller,
            setId as Ids.AddressSetId,
            Schema.decodeUnknownSync(AddressSet.AddressSetPatch)({ entries: [{ cidr }] })
          ))
      ),
    deleteVpc: (vpcId: string) =>
      as((caller) => Effect.flatMap(Vpcs.Vpcs, (v) => v.delete(caller, vpcId as Ids.VpcId))),
    topology: (vpcName: string, cidr: string, newVpc = false) =>
      as((caller) =>
        Effect.flatMap(Topologies.Topologies, (t) =>
          t.deploy(
            caller,
            caller.tenant_id,
            Schema.decodeUnknownSync(Topology.TopologyRequest)({
              token: tenant.token,
              vpcs: newVpc ? [{ name: vpcName, enable_internet: false }] : [],
              subnets: [{
                name: `t${cidr.replace(/[./]/g, "-")}`,
                vpc_name: vpcName,
                cidr,
                gateway_ip: gatewayOf(cidr)
              }]
            })
          ))
      )
  }
}

type Writer = ReturnType<typeof writer>

/** A VPC letting nothing in, under a guardrail denying SSH from 10.0.0.0/8, and a set apart from that space. */
const guardedWithSet = (setup: Writer) =>
  Effect.gen(function*() {
    const vpc = yield* must(setup.vpc("v"))
    const set = yield* must(setup.addressSet("198.51.100.0/24"))
    yield* must(setup.unseed(vpc.id))
    yield* must(setup.guardrail(vpc.id, guardrailBody("deny", "22", "no ssh")))
    return { set, vpc }
  })

/**
 * The races the issue measured, each on a tenant of its own: `setup` through the first
 * process, then its two writes at once, one through each process.
 */
const RACES: ReadonlyArray<{
  readonly name: string
  readonly run: (setup: Writer, a: Writer, b: Writer) => Effect.Effect<unknown>
}> = [
  {
    name: "topology post vs POST /subnets, same VPC, overlapping blocks",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const vpc = yield* must(setup.vpc("v"))
        yield* Effect.all([a.topology("v", "10.0.0.0/16"), b.subnet(vpc.id, "10.0.1.0/24")], { concurrency: 2 })
      })
  },
  {
    name: "topology post vs a VPC guardrail the post's block would break",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const vpc = yield* must(setup.vpc("v"))
        yield* Effect.all([
          a.topology("v", "10.0.1.0/24"),
          b.guardrail(vpc.id, guardrailBody("deny", "22", "no ssh"))
        ], { concurrency: 2 })
      })
  },
  {
    name: "VPC delete vs the tenant-wide guardrail it would break",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const [p, q] = [yield* must(setup.vpc("p")), yield* must(setup.vpc("q"))]
        yield* must(setup.subnet(q.id, "10.0.2.0/24"))
        yield* must(setup.unseed(p.id))
        yield* must(setup.unseed(q.id))
        yield* must(setup.rule(p.id, { action: "deny", priority: 10, remote_type: "vpc", remote_vpc_id: q.id }))
        yield* must(
          setup.rule(p.id, { action: "allow", priority: 20, remote_type: "cidr", remote_cidr: "10.0.2.0/24" })
        )
        yield* Effect.all([a.deleteVpc(q.id), b.tenantGuardrail(guardrailBody("deny", "22", "no ssh"))], {
          concurrency: 2
        })
      })
  },
  {
    name: "a tenant-wide must-allow guardrail vs POST /vpcs",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const vpc = yield* must(setup.vpc("v"))
        yield* must(
          setup.rule(vpc.id, {
            action: "allow",
            priority: 10,
            remote_type: "cidr",
            remote_cidr: "10.0.0.0/8",
            ports: "443"
          })
        )
        yield* Effect.all([a.vpc("w"), b.tenantGuardrail(guardrailBody("allow", "443", "https"))], { concurrency: 2 })
      })
  },
  {
    name: "a rule naming VPC Q vs a subnet added to Q",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const [p, q] = [yield* must(setup.vpc("p")), yield* must(setup.vpc("q"))]
        yield* must(setup.unseed(p.id))
        yield* must(setup.guardrail(p.id, guardrailBody("deny", "22", "no ssh")))
        yield* Effect.all([
          a.rule(p.id, { action: "allow", priority: 10, remote_type: "vpc", remote_vpc_id: q.id }),
          b.subnet(q.id, "10.0.5.0/24")
        ], { concurrency: 2 })
      })
  },
  {
    name: "an address set's edit vs a guardrail it would break where a rule names the set",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const [p, q] = [yield* must(setup.vpc("p")), yield* must(setup.vpc("q"))]
        const set = yield* must(setup.addressSet("198.51.100.0/24"))
        yield* must(setup.unseed(q.id))
        yield* must(
          setup.rule(q.id, allowFromSet(set.id))
        )
        yield* must(
          setup.rule(p.id, { action: "deny", priority: 10, remote_type: "address_set", remote_address_set_id: set.id })
        )
        yield* Effect.all([a.editSet(set.id, "10.0.0.0/8"), b.guardrail(q.id, guardrailBody("deny", "22", "no ssh"))], {
          concurrency: 2
        })
      })
  },
  {
    name: "an address set's edit vs a rule naming the set, under a guardrail",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const { set, vpc } = yield* guardedWithSet(setup)
        yield* Effect.all([
          a.editSet(set.id, "10.0.0.0/8"),
          b.rule(vpc.id, allowFromSet(set.id))
        ], { concurrency: 2 })
      })
  },
  {
    name: "an address set's delete vs a rule naming it",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const vpc = yield* must(setup.vpc("v"))
        const set = yield* must(setup.addressSet("198.51.100.0/24"))
        const [deleted, named] = yield* Effect.all([
          a.deleteSet(set.id),
          b.rule(vpc.id, allowFromSet(set.id))
        ], { concurrency: 2 })
        // One of the two: the rule made naming the set (its delete refused), or the set gone (the rule refused).
        expect([deleted._tag, named._tag].sort()).toEqual(["Left", "Right"])
      })
  },
  {
    name: "an address set's delete vs the delete of the one rule naming it",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const vpc = yield* must(setup.vpc("v"))
        const set = yield* must(setup.addressSet("198.51.100.0/24"))
        const made = yield* must(
          setup.rule(vpc.id, allowFromSet(set.id))
        )
        yield* Effect.all([a.deleteSet(set.id), b.deleteRule((made as SecurityRule.RuleMutation).rule.id)], {
          concurrency: 2
        })
      })
  },
  {
    name: "a guardrail vs the rule that would break it",
    run: (setup, a, b) =>
      Effect.gen(function*() {
        const vpc = yield* must(setup.vpc("v"))
        yield* must(setup.unseed(vpc.id))
        yield* Effect.all([
          a.rule(vpc.id, { action: "allow", priority: 10, remote_type: "cidr", remote_cidr: "10.0.0.0/8" }),
          b.guardrail(vpc.id, guardrailBody("deny", "22", "no ssh"))
        ], { concurrency: 2 })
      })
  }
]

/** Each race `times` times in a random order, every promise checked after each. */
const races = (processes: ReadonlyArray<Process>, order: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const [first, second = first] = processes
    for (const [round, index] of order.entries()) {
      const race = RACES[index % RACES.length]!
      const tenant = yield* newTenant(first!)
      yield* race.run(writer(tenant, first!), writer(tenant, first!), writer(tenant, second!))
      yield* holds(first!, tenant.id, `round ${round}: ${race.name}`)
    }
  })

const ORDERS = fc.sample(fc.array(fc.nat(RACES.length - 1), { minLength: 36, maxLength: 36 }), 1)

const ROUNDS = fc.array(fc.tuple(fc.nat(839), fc.nat(839)), { minLength: 30, maxLength: 40 })
const SEQUENCES = fc.sample(ROUNDS, 3)

/**
 * `decide` committed through the pipeline on `process`, its first decision held (after
 * `decided`) until `release`: what commits meanwhile is committed on a state it did not see.
 */
const heldCommit = <A, E>(
  tenant: Tenant,
  process: Process,
  decide: (state: TenantState.TenantState) => Either.Either<Pipeline.Decision<A>, E>,
  decided: Deferred.Deferred<void>,
  release: Deferred.Deferred<void>
) =>
  tenant.asTenant(
    process,
    (caller) =>
      Effect.flatMap(Pipeline.Pipeline, (pipeline) =>
        pipeline.commit(caller.tenant_id, (state) =>
          Effect.gen(function*() {
            const decision = decide(state)
            yield* Deferred.succeed(decided, undefined)
            yield* Deferred.await(release)
            return yield* decision
          }), Pipeline.INVARIANTS))
  )

/**
 * A write decided on a state from before another commits, in each order that matters for an
 * address set: the refusal the one decided second must get, whichever process commits what.
 */
const INTERLEAVINGS: ReadonlyArray<{
  readonly name: string
  readonly refusal: string
  readonly run: (
    tenant: Tenant,
    setup: Writer,
    held: (
      decide: (state: TenantState.TenantState) => Either.Either<Pipeline.Decision<unknown>, unknown>
    ) => Effect.Effect<Effect.Effect<Either.Either<unknown, unknown>>>,
    other: Writer
  ) => Effect.Effect<Either.Either<unknown, unknown>>
}> = [
  {
    name: "a set's delete decided before a rule naming it commits",
    refusal: "Conflict",
    run: (_tenant, setup, held, other) =>
      Effect.gen(function*() {
        const vpc = yield* must(setup.vpc("v"))
        const set = yield* must(setup.addressSet("198.51.100.0/24"))
        const deleting = yield* held(AddressSetStrategy.remove(set.id, undefined))
        yield* must(
          other.rule(vpc.id, allowFromSet(set.id))
        )
        return yield* deleting
      })
  },
  {
    name: "a set's edit decided before a rule naming it commits, under a guardrail the edit would break",
    refusal: "GuardrailViolated",
    run: (_tenant, setup, held, other) =>
      Effect.gen(function*() {
        const { set, vpc } = yield* guardedWithSet(setup)
        const patch = Schema.decodeUnknownSync(AddressSet.AddressSetPatch)({ entries: [{ cidr: "10.0.0.0/8" }] })
        const editing = yield* held(AddressSetStrategy.update(set.id, patch, undefined, DateTime.unsafeNow()))
        yield* must(
          other.rule(vpc.id, allowFromSet(set.id))
        )
        return yield* editing
      })
  },
  {
    name: "a rule naming a set decided before the set's edit commits, under a guardrail the edit makes it break",
    refusal: "GuardrailViolated",
    run: (tenant, setup, held, other) =>
      Effect.gen(function*() {
        const { set, vpc } = yield* guardedWithSet(setup)
        const now = DateTime.unsafeNow()
        const rule = {
          ...Schema.decodeUnknownSync(SecurityRule.SecurityRuleCreate)({
            vpc_id: vpc.id,
            name: "ssh from the set",
            direction: "ingress",
            action: "allow",
            priority: 10,
            protocol: "tcp",
            ports: "22",
            remote_type: "address_set",
            remote_address_set_id: set.id
          }),
          id: Fixtures.rule(Fixtures.vpc(tenant.id), 1).id,
          tenant_id: tenant.id,
          created_at: now,
          updated_at: now
        }
        const creating = yield* held(SecurityRuleStrategy.create(rule, null))
        yield* must(other.editSet(set.id, "10.0.0.0/8"))
        return yield* creating
      })
  }
]

/** Each interleaving on a tenant of its own: the held write through the first process, the other through the second. */
const interleaved = (processes: ReadonlyArray<Process>) =>
  Effect.gen(function*() {
    const [first, second = first] = processes
    for (const interleaving of INTERLEAVINGS) {
      const tenant = yield* newTenant(first!)
      const held = (decide: (state: TenantState.TenantState) => Either.Either<Pipeline.Decision<unknown>, unknown>) =>
        Effect.gen(function*() {
          const decided = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const fiber = yield* Effect.fork(heldCommit(tenant, first!, decide, decided, release))
          yield* Deferred.await(decided)
          return Effect.zipRight(
            Deferred.succeed(release, undefined),
            Effect.flatten(Effect.map(fiber.await, (exit) => exit))
          )
        })
      const outcome = yield* interleaving.run(tenant, writer(tenant, first!), held, writer(tenant, second!))
      expect(
        outcome._tag === "Left" && (outcome.left as { _tag?: string })._tag,
        `${interleaving.name}: ${outcome._tag === "Left" ? JSON.stringify(outcome.left) : "made"}`
      ).toBe(
        interleaving.refusal
      )
      yield* holds(first!, tenant.id, interleaving.name)
    }
  })

const memory = () => Layer.empty
const embedded = () => PgEmbedded.layer().pipe(Layer.orDie)

describe("every promise under concurrency", () => {
  it.live("memory: a write decided before an address set's other write commits", () =>
    onFresh([0], 1, memory, interleaved))

  it.live.skipIf(url === undefined)(
    "PostgreSQL, two processes: a write decided before an address set's other write commits",
    () => onFreshDatabases(url!, "interleaved", [0], interleaved),
    120_000
  )

  it.live("memory: the measured races, each again and again", () => onFresh(ORDERS, 1, memory, races), 120_000)

  it.live("embedded: the measured races, each again and again", () => onFresh(ORDERS, 1, embedded, races), 240_000)

  it.live.skipIf(url === undefined)(
    "PostgreSQL, two processes: the measured races, one write through each",
    () => onFreshDatabases(url!, "races", ORDERS, races),
    300_000
  )

  it.live("memory: two writes at once, every round", () => onFresh(SEQUENCES, 1, memory, race(false)), 120_000)

  it.live("embedded: two writes at once, every round", () => onFresh(SEQUENCES, 1, embedded, race(false)), 240_000)

  it.live.skipIf(url === undefined)(
    "PostgreSQL, two processes: two writes at once, one through each, every round",
    () => onFreshDatabases(url!, "invariants", SEQUENCES, race(false)),
    300_000
  )

  // The round's two writes committed as one batch (ARCHITECTURE.md, "Writes in batches").
  it.live(
    "memory: two writes at once in one batch, every round of a sequence",
    () => onFresh(SEQUENCES.slice(0, 1), 1, memory, race(true), CommitGate.decorator),
    120_000
  )

  it.live(
    "embedded: two writes at once in one batch, every round of a sequence",
    () => onFresh(SEQUENCES.slice(0, 1), 1, embedded, race(true), CommitGate.decorator),
    240_000
  )

  it.live.skipIf(url === undefined)(
    "PostgreSQL, two processes: two writes at once in one batch, while the other process writes, every round of a sequence",
    () => onFreshDatabases(url!, "invariants_batched", SEQUENCES.slice(0, 1), race(true), CommitGate.decorator),
    300_000
  )
})
