/**
 * The Store in memory. State is one immutable value of persistent maps, so a transaction
 * works on a private draft and commits by swapping it in: readers never see half a
 * transaction, and a failed one leaves nothing behind. Writers are serialized, which is what
 * makes the uniqueness checks below hold under concurrent requests.
 */
import type {
  Admin,
  Domain,
  Ids,
  Pod,
  ProviderConfig,
  RegistryCredential,
  SecurityRule,
  ServiceTunnel,
  Subnet,
  Tenant,
  Tunnel,
  Vpc
} from "@tenet/core"
import { Store } from "@tenet/core"
import { Context, Effect, FiberRef, HashMap, Layer, Option, Ref } from "effect"

interface State {
  readonly admins: HashMap.HashMap<string, Admin.AdminRecord>
  readonly adminByToken: HashMap.HashMap<string, string>
  readonly tenants: HashMap.HashMap<Ids.TenantId, Tenant.TenantRecord>
  readonly tenantByName: HashMap.HashMap<string, Ids.TenantId>
  readonly tenantByToken: HashMap.HashMap<string, Ids.TenantId>
  readonly domains: HashMap.HashMap<Ids.DomainId, Domain.DomainRow>
  readonly domainByName: HashMap.HashMap<string, Ids.DomainId>
  readonly providerConfig: Option.Option<ProviderConfig.ProviderConfigRecord>
  readonly serviceTunnels: HashMap.HashMap<Ids.ServiceTunnelId, ServiceTunnel.ServiceTunnelRecord>
  readonly vpcs: HashMap.HashMap<Ids.VpcId, Vpc.VpcRecord>
  readonly subnets: HashMap.HashMap<Ids.SubnetId, Subnet.SubnetRecord>
  readonly rules: HashMap.HashMap<Ids.SecurityRuleId, SecurityRule.SecurityRuleRecord>
  readonly pods: HashMap.HashMap<Ids.PodId, Pod.PodRecord>
  readonly tunnels: HashMap.HashMap<Ids.TunnelId, Tunnel.TunnelRecord>
  /** Keyed by `tenant_id/name`. */
  readonly credentials: HashMap.HashMap<string, RegistryCredential.RegistryCredentialRecord>
  /** Insertion order of every record, breaking ties between equal creation times. */
  readonly order: HashMap.HashMap<string, number>
  readonly nextOrder: number
}

const emptyState: State = {
  admins: HashMap.empty(),
  adminByToken: HashMap.empty(),
  tenants: HashMap.empty(),
  tenantByName: HashMap.empty(),
  tenantByToken: HashMap.empty(),
  domains: HashMap.empty(),
  domainByName: HashMap.empty(),
  providerConfig: Option.none(),
  serviceTunnels: HashMap.empty(),
  vpcs: HashMap.empty(),
  subnets: HashMap.empty(),
  rules: HashMap.empty(),
  pods: HashMap.empty(),
  tunnels: HashMap.empty(),
  credentials: HashMap.empty(),
  order: HashMap.empty(),
  nextOrder: 0
}

/** Switches for tests: make the store fail as a database that went away would. */
export class StoreSwitches extends Context.Tag("@tenet/adapters-memory/StoreSwitches")<StoreSwitches, {
  /** While false, every call fails with `StoreUnavailable` and nothing changes. */
  readonly setAvailable: (available: boolean) => Effect.Effect<void>
}>() {}

/** Records under `key` as inserted now. */
const inserted = (s: State, key: string): State => ({
  ...s,
  order: HashMap.set(s.order, key, s.nextOrder),
  nextOrder: s.nextOrder + 1
})

type Created = { readonly created_at: { readonly epochMillis: number } }
const keyOf = (record: Created & { readonly id?: string; readonly tenant_id?: string; readonly name?: string }) =>
  record.id ?? `${record.tenant_id}/${record.name}`

/** Oldest first; records created in the same millisecond keep the order they were inserted in. */
const byCreation = (s: State) => <A extends Created>(a: A, b: A) =>
  a.created_at.epochMillis - b.created_at.epochMillis ||
  Option.getOrElse(HashMap.get(s.order, keyOf(a)), () => 0) - Option.getOrElse(HashMap.get(s.order, keyOf(b)), () => 0)

export const make = Effect.gen(function*() {
  const committed = yield* Ref.make(emptyState)
  const writer = yield* Effect.makeSemaphore(1)
  const draft = FiberRef.unsafeMake<Option.Option<Ref.Ref<State>>>(Option.none())
  let available = true

  const unavailable = new Store.StoreUnavailable({ detail: "the in-memory store was switched off" })
  const guard = Effect.suspend(() => available ? Effect.void : Effect.fail(unavailable))

  const transaction = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Store.StoreUnavailable, R> =>
    Effect.flatMap(FiberRef.get(draft), (current) =>
      Option.isSome(current)
        ? self
        : guard.pipe(
          Effect.zipRight(
            writer.withPermits(1)(
              Effect.gen(function*() {
                const working = yield* Ref.make(yield* Ref.get(committed))
                const result = yield* Effect.locally(self, draft, Option.some(working))
                yield* Ref.set(committed, yield* Ref.get(working))
                return result
              })
            )
          )
        ))

  const read = <A>(f: (state: State) => A): Effect.Effect<A, Store.StoreUnavailable> =>
    guard.pipe(
      Effect.zipRight(FiberRef.get(draft)),
      Effect.flatMap((current) => Ref.get(Option.getOrElse(current, () => committed))),
      Effect.map(f)
    )

  /** Applies a change inside the current transaction, or as a transaction of its own. */
  const write = <A, E = never>(
    f: (state: State) => Effect.Effect<readonly [A, State], E>
  ): Effect.Effect<A, E | Store.StoreUnavailable> =>
    transaction(
      Effect.flatMap(FiberRef.get(draft), (current) => {
        const ref = Option.getOrThrow(current)
        return Effect.flatMap(Ref.get(ref), (state) =>
          Effect.flatMap(f(state), ([result, next]) => Effect.as(Ref.set(ref, next), result)))
      })
    )

  const violation = (constraint: string) => Effect.fail(new Store.UniqueViolation({ constraint }))

  const admins: Store.AdminRepository = {
    find: (username) => read((s) => HashMap.get(s.admins, username)),
    findByTokenHash: (hash) =>
      read((s) => Option.flatMap(HashMap.get(s.adminByToken, hash), (name) => HashMap.get(s.admins, name))),
    put: (record) =>
      write((s) => {
        const previous = HashMap.get(s.admins, record.username)
        const withoutOldToken = Option.match(previous, {
          onNone: () => s.adminByToken,
          onSome: (p) => HashMap.remove(s.adminByToken, p.token_hash)
        })
        return Effect.succeed(
          [undefined, {
            ...s,
            admins: HashMap.set(s.admins, record.username, record),
            adminByToken: HashMap.set(withoutOldToken, record.token_hash, record.username)
          }] as const
        )
      })
  }

  /** A VPC goes with its subnets, rules and pods. */
  const removeVpc = (s: State, id: Ids.VpcId): State => ({
    ...s,
    vpcs: HashMap.remove(s.vpcs, id),
    subnets: HashMap.filter(s.subnets, (subnet) => subnet.vpc_id !== id),
    rules: HashMap.filter(s.rules, (rule) => rule.vpc_id !== id),
    pods: HashMap.filter(s.pods, (pod) => pod.vpc_id !== id),
    tunnels: HashMap.filter(s.tunnels, (tunnel) => tunnel.vpc_id !== id)
  })

  const removeTenant = (state: State, id: Ids.TenantId): State => {
    const tenant = Option.getOrThrow(HashMap.get(state.tenants, id))
    const ownedDomains = HashMap.filter(state.domains, (d) => d.tenant_id === id)
    const s = HashMap.reduce(
      HashMap.filter(state.vpcs, (vpc) => vpc.tenant_id === id),
      state,
      (acc, vpc) => removeVpc(acc, vpc.id)
    )
    return {
      ...s,
      tenants: HashMap.remove(s.tenants, id),
      tenantByName: HashMap.remove(s.tenantByName, tenant.name),
      tenantByToken: HashMap.remove(s.tenantByToken, tenant.token_hash),
      domains: HashMap.filter(s.domains, (d) => d.tenant_id !== id),
      credentials: HashMap.filter(s.credentials, (c) => c.tenant_id !== id),
      domainByName: HashMap.reduce(ownedDomains, s.domainByName, (index, d) => HashMap.remove(index, d.domain))
    }
  }

  const tenants: Store.TenantRepository = {
    insert: (record) =>
      write((s) =>
        HashMap.has(s.tenantByName, record.name)
          ? violation(Store.Constraints.tenantName)
          : Effect.succeed(
            [undefined, {
              ...inserted(s, record.id),
              tenants: HashMap.set(s.tenants, record.id, record),
              tenantByName: HashMap.set(s.tenantByName, record.name, record.id),
              tenantByToken: HashMap.set(s.tenantByToken, record.token_hash, record.id)
            }] as const
          )
      ),
    find: (id) => read((s) => HashMap.get(s.tenants, id)),
    findByName: (name) =>
      read((s) => Option.flatMap(HashMap.get(s.tenantByName, name), (id) => HashMap.get(s.tenants, id))),
    findByTokenHash: (hash) =>
      read((s) => Option.flatMap(HashMap.get(s.tenantByToken, hash), (id) => HashMap.get(s.tenants, id))),
    list: read((s) => Array.from(HashMap.values(s.tenants)).sort(byCreation(s))),
    setToken: (id, tokenHash, tokenCiphertext) =>
      write((s) =>
        Effect.succeed(Option.match(HashMap.get(s.tenants, id), {
          onNone: () => [false, s] as const,
          onSome: (tenant) =>
            [true, {
              ...s,
              tenants: HashMap.set(s.tenants, id, {
                ...tenant,
                token_hash: tokenHash,
                token_ciphertext: tokenCiphertext
              }),
              tenantByToken: HashMap.set(HashMap.remove(s.tenantByToken, tenant.token_hash), tokenHash, id)
            }] as const
        }))
      ),
    delete: (id) =>
      write((s) =>
        Effect.succeed(HashMap.has(s.tenants, id) ? [true, removeTenant(s, id)] as const : [false, s] as const)
      )
  }

  const domains: Store.DomainRepository = {
    insert: (row) =>
      write((s) =>
        HashMap.has(s.domainByName, row.domain)
          ? violation(Store.Constraints.domainName)
          : Effect.succeed(
            [undefined, {
              ...inserted(s, row.id),
              domains: HashMap.set(s.domains, row.id, row),
              domainByName: HashMap.set(s.domainByName, row.domain, row.id)
            }] as const
          )
      ),
    listByTenant: (tenantId) =>
      read((s) => Array.from(HashMap.values(s.domains)).filter((d) => d.tenant_id === tenantId).sort(byCreation(s))),
    findByDomain: (domain) =>
      read((s) => Option.flatMap(HashMap.get(s.domainByName, domain), (id) => HashMap.get(s.domains, id))),
    delete: (id) =>
      write((s) =>
        Effect.succeed(Option.match(HashMap.get(s.domains, id), {
          onNone: () => [false, s] as const,
          onSome: (row) =>
            [true, {
              ...s,
              domains: HashMap.remove(s.domains, id),
              domainByName: HashMap.remove(s.domainByName, row.domain)
            }] as const
        }))
      )
  }

  const providerConfig: Store.ProviderConfigRepository = {
    get: read((s) => s.providerConfig),
    put: (record) => write((s) => Effect.succeed([undefined, { ...s, providerConfig: Option.some(record) }] as const))
  }

  const serviceTunnels: Store.ServiceTunnelRepository = {
    insert: (record) =>
      write((s) => {
        const existing = Array.from(HashMap.values(s.serviceTunnels))
        if (existing.some((t) => t.service === record.service)) return violation(Store.Constraints.serviceTunnelService)
        if (existing.some((t) => t.hostname === record.hostname)) {
          return violation(Store.Constraints.serviceTunnelHostname)
        }
        return Effect.succeed(
          [undefined, {
            ...inserted(s, record.id),
            serviceTunnels: HashMap.set(s.serviceTunnels, record.id, record)
          }] as const
        )
      }),
    list: read((s) => Array.from(HashMap.values(s.serviceTunnels)).sort(byCreation(s))),
    find: (id) => read((s) => HashMap.get(s.serviceTunnels, id)),
    update: (record) =>
      write((s) =>
        Effect.succeed(
          HashMap.has(s.serviceTunnels, record.id)
            ? [true, { ...s, serviceTunnels: HashMap.set(s.serviceTunnels, record.id, record) }] as const
            : [false, s] as const
        )
      ),
    delete: (id) =>
      write((s) =>
        Effect.succeed(
          HashMap.has(s.serviceTunnels, id)
            ? [true, { ...s, serviceTunnels: HashMap.remove(s.serviceTunnels, id) }] as const
            : [false, s] as const
        )
      )
  }

  const vpcs: Store.VpcRepository = {
    insert: (record) =>
      write((s) =>
        Array.from(HashMap.values(s.vpcs)).some((v) => v.tenant_id === record.tenant_id && v.name === record.name)
          ? violation(Store.Constraints.vpcName)
          : Effect.succeed(
            [undefined, { ...inserted(s, record.id), vpcs: HashMap.set(s.vpcs, record.id, record) }] as const
          )
      ),
    find: (id) => read((s) => HashMap.get(s.vpcs, id)),
    listByTenant: (tenantId) =>
      read((s) => Array.from(HashMap.values(s.vpcs)).filter((v) => v.tenant_id === tenantId).sort(byCreation(s))),
    listUnapplied: read((s) => Array.from(HashMap.values(s.vpcs)).filter((v) => !v.applied).sort(byCreation(s))),
    // Writers are already serialized, so holding a VPC is only a matter of it existing.
    lock: (id) => transaction(read((s) => HashMap.has(s.vpcs, id))),
    setApplyState: (id, applied, applyError) =>
      write((s) =>
        Effect.succeed(Option.match(HashMap.get(s.vpcs, id), {
          onNone: () => [false, s] as const,
          onSome: (vpc) =>
            [true, { ...s, vpcs: HashMap.set(s.vpcs, id, { ...vpc, applied, apply_error: applyError }) }] as const
        }))
      ),
    delete: (id) =>
      write((s) => Effect.succeed(HashMap.has(s.vpcs, id) ? [true, removeVpc(s, id)] as const : [false, s] as const))
  }

  const subnets: Store.SubnetRepository = {
    insert: (record) =>
      write((s) =>
        Array.from(HashMap.values(s.subnets)).some((n) => n.vpc_id === record.vpc_id && n.name === record.name)
          ? violation(Store.Constraints.subnetName)
          : Effect.succeed(
            [undefined, { ...inserted(s, record.id), subnets: HashMap.set(s.subnets, record.id, record) }] as const
          )
      ),
    find: (id) => read((s) => HashMap.get(s.subnets, id)),
    listByTenant: (tenantId) =>
      read((s) => Array.from(HashMap.values(s.subnets)).filter((n) => n.tenant_id === tenantId).sort(byCreation(s))),
    listByVpc: (vpcId) =>
      read((s) => Array.from(HashMap.values(s.subnets)).filter((n) => n.vpc_id === vpcId).sort(byCreation(s)))
  }

  const bySeq = (a: SecurityRule.SecurityRuleRecord, b: SecurityRule.SecurityRuleRecord) => a.seq - b.seq

  const securityRules: Store.SecurityRuleRepository = {
    insert: (record) =>
      write((s) => Effect.succeed([undefined, { ...s, rules: HashMap.set(s.rules, record.id, record) }] as const)),
    find: (id) => read((s) => HashMap.get(s.rules, id)),
    listByVpc: (vpcId) =>
      read((s) => Array.from(HashMap.values(s.rules)).filter((r) => r.vpc_id === vpcId).sort(bySeq)),
    listByRemoteVpc: (vpcId) =>
      read((s) =>
        Array.from(HashMap.values(s.rules)).filter((r) => r.remote_vpc_id === vpcId && r.vpc_id !== vpcId).sort(bySeq)
      ),
    update: (record) =>
      write((s) =>
        Effect.succeed(
          HashMap.has(s.rules, record.id)
            ? [true, { ...s, rules: HashMap.set(s.rules, record.id, record) }] as const
            : [false, s] as const
        )
      ),
    delete: (id) =>
      write((s) =>
        Effect.succeed(
          HashMap.has(s.rules, id) ? [true, { ...s, rules: HashMap.remove(s.rules, id) }] as const : [false, s] as const
        )
      )
  }

  const pods: Store.PodRepository = {
    insert: (record) =>
      write((s) =>
        Array.from(HashMap.values(s.pods)).some((p) => p.vpc_id === record.vpc_id && p.name === record.name)
          ? violation(Store.Constraints.podName)
          : Effect.succeed(
            [undefined, { ...inserted(s, record.id), pods: HashMap.set(s.pods, record.id, record) }] as const
          )
      ),
    find: (id) => read((s) => HashMap.get(s.pods, id)),
    listByTenant: (tenantId) =>
      read((s) => Array.from(HashMap.values(s.pods)).filter((p) => p.tenant_id === tenantId).sort(byCreation(s))),
    listByVpc: (vpcId) =>
      read((s) => Array.from(HashMap.values(s.pods)).filter((p) => p.vpc_id === vpcId).sort(byCreation(s))),
    listUnapplied: read((s) => Array.from(HashMap.values(s.pods)).filter((p) => !p.applied).sort(byCreation(s))),
    update: (record) =>
      write((s) =>
        Effect.succeed(
          HashMap.has(s.pods, record.id)
            ? [true, { ...s, pods: HashMap.set(s.pods, record.id, record) }] as const
            : [false, s] as const
        )
      ),
    delete: (id) =>
      write((s) =>
        Effect.succeed(
          HashMap.has(s.pods, id)
            ? [true, {
              ...s,
              pods: HashMap.remove(s.pods, id),
              tunnels: HashMap.filter(s.tunnels, (t) => t.pod_id !== id)
            }] as const
            : [false, s] as const
        )
      )
  }

  const tunnels: Store.TunnelRepository = {
    insert: (record) =>
      write((s) => {
        const all = Array.from(HashMap.values(s.tunnels))
        if (all.some((t) => t.tenant_id === record.tenant_id && t.tunnel_name === record.tunnel_name)) {
          return violation(Store.Constraints.tunnelName)
        }
        if (all.some((t) => t.hostname === record.hostname)) return violation(Store.Constraints.tunnelHostname)
        return Effect.succeed(
          [undefined, { ...inserted(s, record.id), tunnels: HashMap.set(s.tunnels, record.id, record) }] as const
        )
      }),
    find: (id) => read((s) => HashMap.get(s.tunnels, id)),
    listByTenant: (tenantId) =>
      read((s) => Array.from(HashMap.values(s.tunnels)).filter((t) => t.tenant_id === tenantId).sort(byCreation(s))),
    listByPod: (podId) =>
      read((s) => Array.from(HashMap.values(s.tunnels)).filter((t) => t.pod_id === podId).sort(byCreation(s))),
    listInactive: read((s) =>
      Array.from(HashMap.values(s.tunnels)).filter((t) => t.status !== "active").sort(byCreation(s))
    ),
    update: (record) =>
      write((s) =>
        Effect.succeed(
          HashMap.has(s.tunnels, record.id)
            ? [true, { ...s, tunnels: HashMap.set(s.tunnels, record.id, record) }] as const
            : [false, s] as const
        )
      ),
    delete: (id) =>
      write((s) =>
        Effect.succeed(
          HashMap.has(s.tunnels, id)
            ? [true, { ...s, tunnels: HashMap.remove(s.tunnels, id) }] as const
            : [false, s] as const
        )
      )
  }

  const credentialKey = (tenantId: string, name: string) => `${tenantId}/${name}`

  const registryCredentials: Store.RegistryCredentialRepository = {
    insert: (record) =>
      write((s) => {
        const key = credentialKey(record.tenant_id, record.name)
        return HashMap.has(s.credentials, key)
          ? violation(Store.Constraints.registryCredentialName)
          : Effect.succeed(
            [undefined, { ...inserted(s, key), credentials: HashMap.set(s.credentials, key, record) }] as const
          )
      }),
    listByTenant: (tenantId) =>
      read((s) =>
        Array.from(HashMap.values(s.credentials)).filter((c) => c.tenant_id === tenantId).sort(byCreation(s))
      ),
    find: (tenantId, name) => read((s) => HashMap.get(s.credentials, credentialKey(tenantId, name))),
    delete: (tenantId, name) =>
      write((s) => {
        const key = credentialKey(tenantId, name)
        return Effect.succeed(
          HashMap.has(s.credentials, key)
            ? [true, { ...s, credentials: HashMap.remove(s.credentials, key) }] as const
            : [false, s] as const
        )
      })
  }

  const store = Store.Store.of({
    backend: "memory",
    transaction,
    exclusive: Store.inProcessExclusive(),
    ping: guard,
    admins,
    tenants,
    domains,
    providerConfig,
    serviceTunnels,
    vpcs,
    subnets,
    securityRules,
    pods,
    tunnels,
    registryCredentials
  })
  const switches = StoreSwitches.of({ setAvailable: (value) => Effect.sync(() => void (available = value)) })
  return { store, switches }
})

/** The in-memory Store and its test switches. */
export const layer: Layer.Layer<Store.Store | StoreSwitches> = Layer.effectContext(
  Effect.map(make, ({ store, switches }) => Context.make(Store.Store, store).pipe(Context.add(StoreSwitches, switches)))
)
