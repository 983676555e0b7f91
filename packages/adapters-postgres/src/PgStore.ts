/**
 * The Store and the OperationsLog on PostgreSQL, through `@effect/sql`. Rows are decoded with
 * the domain's own schemas (`SqlSchema`), uniqueness and cascades are the database's
 * constraints, and the per-VPC lock is a row lock, so the rules hold with many server
 * processes writing at once.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type { SqlError } from "@effect/sql"
import {
  Ids,
  Net,
  OperationLog,
  OperationsLog,
  Pod,
  SecurityRule,
  ServiceTunnel,
  Store,
  Subnet,
  Tunnel,
  Vpc
} from "@tenet/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import type { ParseResult } from "effect"
import * as Disk from "./Disk.js"

/** A column read directly (a `Date`) or inside a JSON aggregate (an ISO string). */
const Timestamp = Schema.Union(Schema.DateTimeUtcFromDate, Schema.DateTimeUtc)

const TenantRow = Schema.Struct({
  id: Ids.TenantId,
  name: Net.DnsLabel,
  description: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  password_hash: Schema.String,
  token_hash: Schema.String,
  token_ciphertext: Schema.String
})

const AdminRow = Schema.Struct({
  username: Schema.String,
  password_hash: Schema.String,
  token_hash: Schema.String,
  token_ciphertext: Schema.String
})

const DomainRow = Schema.Struct({
  id: Ids.DomainId,
  tenant_id: Ids.TenantId,
  domain: Schema.typeSchema(Net.DomainName),
  created_at: Timestamp
})

const ProviderConfigRow = Schema.Struct({
  external_subnet_cidr: Net.Ipv4Network,
  external_subnet_gateway: Net.Ipv4Address,
  peering_subnet_cidr: Net.Ipv4Network,
  pod_dns_nameservers: Schema.Array(Net.Ipv4Address),
  pod_dns_ndots: Schema.NullOr(Schema.Number),
  edge_account_id: Schema.NullOr(Schema.String),
  edge_api_token_ciphertext: Schema.NullOr(Schema.String),
  edge_domain: Schema.NullOr(Schema.typeSchema(Net.DomainName)),
  updated_at: Timestamp
})

const ServiceTunnelRow = Schema.Struct({
  id: Ids.ServiceTunnelId,
  service: Net.DnsLabel,
  hostname: Schema.typeSchema(Net.DomainName),
  target_url: ServiceTunnel.ServiceUrl,
  status: ServiceTunnel.ServiceTunnelStatus,
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp
})

/*
 * Rows of the resources whose records are schemas in the domain: the record's schema, with
 * its instants as PostgreSQL answers them; written through the same schema's encoder.
 */
const VpcRow = Schema.Struct({ ...Vpc.VpcRecord.fields, created_at: Timestamp })

const SubnetRow = Schema.Struct({ ...Subnet.SubnetRecord.fields, created_at: Timestamp })

const RuleRow = Schema.Struct({
  ...SecurityRule.SecurityRuleRecord.fields,
  created_at: Timestamp,
  updated_at: Timestamp
})

const PodRow = Schema.Struct({ ...Pod.PodRecord.fields, created_at: Timestamp, updated_at: Timestamp })

const TunnelRow = Schema.Struct({
  id: Ids.TunnelId,
  tenant_id: Ids.TenantId,
  pod_id: Ids.PodId,
  vpc_id: Ids.VpcId,
  tunnel_name: Net.DnsLabel,
  subdomain: Net.DnsLabel,
  domain: Schema.typeSchema(Net.DomainName),
  hostname: Schema.typeSchema(Net.DomainName),
  protocol_type: Tunnel.TunnelProtocol,
  service_port: Schema.Number,
  status: Tunnel.TunnelStatus,
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp
})

const CredentialRow = Schema.Struct({
  tenant_id: Ids.TenantId,
  name: Net.DnsLabel,
  server: Schema.String,
  username: Schema.String,
  password_ciphertext: Schema.String,
  created_at: Timestamp
})

const IdempotencyKeyRow = Schema.Struct({
  scope: Schema.String,
  key: Schema.String,
  fingerprint: Schema.String,
  resource_id: Schema.String,
  created_at: Timestamp
})

const AuthenticatedRow = Schema.Struct({
  ...TenantRow.fields,
  revision: Schema.String,
  provider_config_revision: Schema.String
})

/** A tenant's rows, each table as one JSON array, read in one statement (so at one instant). */
const SnapshotRow = Schema.Struct({
  revision: Schema.String,
  vpcs: Schema.Array(VpcRow),
  subnets: Schema.Array(SubnetRow),
  security_rules: Schema.Array(RuleRow),
  pods: Schema.Array(PodRow),
  tunnels: Schema.Array(TunnelRow),
  registry_credentials: Schema.Array(CredentialRow),
  domains: Schema.Array(DomainRow)
})

const ProviderConfigSnapshotRow = Schema.Struct({
  revision: Schema.String,
  config: Schema.NullOr(ProviderConfigRow)
})

const OperationRow = Schema.Struct({
  seq: Schema.Union(Schema.Number, Schema.NumberFromString),
  at: Timestamp,
  kind: OperationLog.OperationKind,
  outcome: OperationLog.Outcome,
  principal: Schema.String,
  tenant_id: Schema.NullOr(Schema.String),
  source_address: Schema.NullOr(Schema.String),
  detail: Schema.NullOr(Schema.String)
})

/** A record as a row: instants become `Date`s, everything else is already a column value. */
const row = <A extends object>(record: A): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(record).map(([k, v]) => [k, DateTime.isDateTime(v) ? DateTime.toDateUtc(v) : v])
  )

const describe = (error: SqlError.SqlError) => {
  const cause = error.cause as { message?: string } | undefined
  return Disk.describeFailure(cause?.message ?? error.message)
}

/** The database is the store's only dependency: a failed query means the store is unavailable. */
const unavailable = <A, R>(self: Effect.Effect<A, SqlError.SqlError | ParseResult.ParseError, R>) =>
  self.pipe(
    Effect.catchTag("ParseError", (e) => Effect.die(e)),
    Effect.mapError((e) => new Store.StoreUnavailable({ detail: describe(e) }))
  )

const isSqlError = (e: unknown): e is SqlError.SqlError => (e as { _tag?: unknown } | null)?._tag === "SqlError"

/**
 * For effects that carry the caller's own errors too (a transaction's body): only the
 * database's failures become `StoreUnavailable`; the caller's pass through untouched.
 */
const sqlFailureUnavailable = <A, E, R>(
  self: Effect.Effect<A, E | SqlError.SqlError, R>
): Effect.Effect<A, E | Store.StoreUnavailable, R> =>
  Effect.catchAll(self, (e): Effect.Effect<never, E | Store.StoreUnavailable> =>
    isSqlError(e)
      ? Effect.fail(new Store.StoreUnavailable({ detail: describe(e) }))
      : Effect.fail(e as E))

/** As `unavailable`, and a unique violation is reported as the constraint it broke. */
const writing = <A, R>(
  self: Effect.Effect<A, SqlError.SqlError | ParseResult.ParseError, R>
): Effect.Effect<A, Store.StoreUnavailable | Store.UniqueViolation, R> =>
  self.pipe(
    Effect.catchTag("ParseError", (e) => Effect.die(e)),
    Effect.catchTag("SqlError", (e): Effect.Effect<never, Store.StoreUnavailable | Store.UniqueViolation> => {
      const cause = e.cause as { code?: string; constraint?: string } | undefined
      return cause?.code === "23505"
        ? Effect.fail(new Store.UniqueViolation({ constraint: cause.constraint ?? "unknown" }))
        : Effect.fail(new Store.StoreUnavailable({ detail: describe(e) }))
    })
  )

export interface Options {
  /** Reported by `/healthz` and the startup line. */
  readonly backend?: string
  /**
   * How `exclusive` excludes: `advisory` locks in the database (across processes), or
   * `in-process` where the database cannot tell connections apart (PGlite is one session)
   * and one process owns it anyway.
   */
  readonly locks?: "advisory" | "in-process"
  /**
   * The data directory, where the database's disk is this machine's (embedded): the health
   * check then says the store is unavailable while that disk is (nearly) full, since every
   * write would fail.
   */
  readonly dataDir?: string
}

export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const one = <I, A, IA>(
      Result: Schema.Schema<A, IA>,
      execute: (request: I) => Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>
    ) =>
    (request: I) =>
      unavailable(SqlSchema.findOne({ Request: Schema.Any as Schema.Schema<I>, Result, execute })(request))

    const all = <I, A, IA>(
      Result: Schema.Schema<A, IA>,
      execute: (request: I) => Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>
    ) =>
    (request: I) =>
      unavailable(SqlSchema.findAll({ Request: Schema.Any as Schema.Schema<I>, Result, execute })(request))

    const affected = (statement: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>) =>
      unavailable(Effect.map(statement, (rows) => rows.length > 0))

    /** Inserts a record through its row schema's encoder. */
    const insertRow = <A, I extends Record<string, unknown>>(table: string, Row: Schema.Schema<A, I>) => (record: A) =>
      writing(Effect.flatMap(
        Schema.encode(Row)(record),
        (row) => Effect.asVoid(sql`INSERT INTO ${sql(table)} ${sql.insert(row)}`)
      ))

    /** Updates a record's row through its row schema's encoder; `fixed` are the columns that never change. */
    const updateRow =
      <A, I extends { readonly id: string }>(table: string, Row: Schema.Schema<A, I>, fixed: ReadonlyArray<keyof I>) =>
      (record: A) =>
        Effect.flatMap(Schema.encode(Row)(record).pipe(Effect.orDie), (row) => {
          const fields = Object.fromEntries(
            Object.entries(row).filter(([column]) => column !== "id" && !fixed.includes(column as keyof I))
          )
          return affected(sql`UPDATE ${sql(table)} SET ${sql.update(fields)} WHERE id = ${row.id} RETURNING id`)
        })

    const admins: Store.AdminRepository = {
      find: one(AdminRow, (username: string) => sql`SELECT * FROM admins WHERE username = ${username}`),
      findByTokenHash: one(AdminRow, (hash: string) => sql`SELECT * FROM admins WHERE token_hash = ${hash}`),
      put: (record) =>
        writing(sql`
        INSERT INTO admins ${sql.insert(row(record))}
        ON CONFLICT (username) DO UPDATE SET
          password_hash = EXCLUDED.password_hash,
          token_hash = EXCLUDED.token_hash,
          token_ciphertext = EXCLUDED.token_ciphertext
      `.pipe(Effect.asVoid))
    }

    const tenants: Store.TenantRepository = {
      insert: (record) => writing(Effect.asVoid(sql`INSERT INTO tenants ${sql.insert(row(record))}`)),
      find: one(TenantRow, (id: Ids.TenantId) => sql`SELECT * FROM tenants WHERE id = ${id}`),
      findByName: one(TenantRow, (name: string) => sql`SELECT * FROM tenants WHERE name = ${name}`),
      findByTokenHash: one(TenantRow, (hash: string) => sql`SELECT * FROM tenants WHERE token_hash = ${hash}`),
      list: all(TenantRow, () => sql`SELECT * FROM tenants ORDER BY created_at, seq`)(undefined),
      setToken: (id, tokenHash, tokenCiphertext) =>
        affected(sql`
        UPDATE tenants SET token_hash = ${tokenHash}, token_ciphertext = ${tokenCiphertext}
        WHERE id = ${id} RETURNING id
      `),
      delete: (id) =>
        affected(sql`
        WITH keys AS (DELETE FROM idempotency_keys WHERE scope = ${id})
        DELETE FROM tenants WHERE id = ${id} RETURNING id
      `)
    }

    const domains: Store.DomainRepository = {
      insert: (record) => writing(Effect.asVoid(sql`INSERT INTO domains ${sql.insert(row(record))}`)),
      listByTenant: all(
        DomainRow,
        (tenantId: Ids.TenantId) => sql`SELECT * FROM domains WHERE tenant_id = ${tenantId} ORDER BY created_at, seq`
      ),
      findByDomain: one(DomainRow, (domain: string) => sql`SELECT * FROM domains WHERE domain = ${domain}`),
      delete: (id) => affected(sql`DELETE FROM domains WHERE id = ${id} RETURNING id`)
    }

    const providerConfig: Store.ProviderConfigRepository = {
      get: one(ProviderConfigRow, () => sql`SELECT * FROM provider_config`)(undefined),
      put: (record) =>
        writing(Effect.asVoid(sql`
        INSERT INTO provider_config ${sql.insert({ singleton: true, ...row(record) })}
        ON CONFLICT (singleton) DO UPDATE SET
          revision = provider_config.revision + 1,
          external_subnet_cidr = EXCLUDED.external_subnet_cidr,
          external_subnet_gateway = EXCLUDED.external_subnet_gateway,
          peering_subnet_cidr = EXCLUDED.peering_subnet_cidr,
          pod_dns_nameservers = EXCLUDED.pod_dns_nameservers,
          pod_dns_ndots = EXCLUDED.pod_dns_ndots,
          edge_account_id = EXCLUDED.edge_account_id,
          edge_api_token_ciphertext = EXCLUDED.edge_api_token_ciphertext,
          edge_domain = EXCLUDED.edge_domain,
          updated_at = EXCLUDED.updated_at
      `))
    }

    const serviceTunnels: Store.ServiceTunnelRepository = {
      insert: (record) => writing(Effect.asVoid(sql`INSERT INTO service_tunnels ${sql.insert(row(record))}`)),
      list: all(ServiceTunnelRow, () => sql`SELECT * FROM service_tunnels ORDER BY created_at, seq`)(undefined),
      find: one(ServiceTunnelRow, (id: Ids.ServiceTunnelId) => sql`SELECT * FROM service_tunnels WHERE id = ${id}`),
      update: (record) =>
        affected(sql`
        UPDATE service_tunnels SET status = ${record.status}, error = ${record.error},
          target_url = ${record.target_url}, hostname = ${record.hostname}
        WHERE id = ${record.id} RETURNING id
      `),
      delete: (id) => affected(sql`DELETE FROM service_tunnels WHERE id = ${id} RETURNING id`)
    }

    const vpcs: Store.VpcRepository = {
      insert: insertRow("vpcs", VpcRow),
      find: one(VpcRow, (id: Ids.VpcId) => sql`SELECT * FROM vpcs WHERE id = ${id}`),
      listByTenant: all(
        VpcRow,
        (tenantId: Ids.TenantId) => sql`SELECT * FROM vpcs WHERE tenant_id = ${tenantId} ORDER BY created_at, seq`
      ),
      listUnapplied: all(VpcRow, () => sql`SELECT * FROM vpcs WHERE NOT applied ORDER BY created_at, seq`)(undefined),
      lock: (id) =>
        unavailable(Effect.map(
          sql<{ revision: string }>`
          SELECT t.revision::text AS revision FROM vpcs v JOIN tenants t ON t.id = v.tenant_id
          WHERE v.id = ${id} FOR UPDATE OF v
        `,
          (rows) => Option.fromNullable(rows[0]?.revision)
        )),
      setApplyState: (id, applied, applyError) =>
        affected(sql`UPDATE vpcs SET applied = ${applied}, apply_error = ${applyError} WHERE id = ${id} RETURNING id`),
      delete: (id) => affected(sql`DELETE FROM vpcs WHERE id = ${id} RETURNING id`)
    }

    const subnets: Store.SubnetRepository = {
      insert: insertRow("subnets", SubnetRow),
      find: one(SubnetRow, (id: Ids.SubnetId) => sql`SELECT * FROM subnets WHERE id = ${id}`),
      listByTenant: all(
        SubnetRow,
        (tenantId: Ids.TenantId) => sql`SELECT * FROM subnets WHERE tenant_id = ${tenantId} ORDER BY created_at, seq`
      ),
      listByVpc: all(
        SubnetRow,
        (vpcId: Ids.VpcId) => sql`SELECT * FROM subnets WHERE vpc_id = ${vpcId} ORDER BY created_at, seq`
      )
    }

    const securityRules: Store.SecurityRuleRepository = {
      insert: insertRow("security_rules", RuleRow),
      find: one(RuleRow, (id: Ids.SecurityRuleId) => sql`SELECT * FROM security_rules WHERE id = ${id}`),
      listByVpc: all(
        RuleRow,
        (vpcId: Ids.VpcId) => sql`SELECT * FROM security_rules WHERE vpc_id = ${vpcId} ORDER BY seq`
      ),
      listByRemoteVpc: all(
        RuleRow,
        (vpcId: Ids.VpcId) =>
          sql`SELECT * FROM security_rules WHERE remote_vpc_id = ${vpcId} AND vpc_id <> ${vpcId} ORDER BY seq`
      ),
      update: updateRow("security_rules", RuleRow, ["created_at", "tenant_id", "vpc_id"]),
      delete: (id) => affected(sql`DELETE FROM security_rules WHERE id = ${id} RETURNING id`)
    }

    const pods: Store.PodRepository = {
      insert: insertRow("pods", PodRow),
      find: one(PodRow, (id: Ids.PodId) => sql`SELECT * FROM pods WHERE id = ${id}`),
      listByTenant: all(
        PodRow,
        (tenantId: Ids.TenantId) => sql`SELECT * FROM pods WHERE tenant_id = ${tenantId} ORDER BY created_at, seq`
      ),
      listByVpc: all(
        PodRow,
        (vpcId: Ids.VpcId) => sql`SELECT * FROM pods WHERE vpc_id = ${vpcId} ORDER BY created_at, seq`
      ),
      listUnapplied: all(PodRow, () => sql`SELECT * FROM pods WHERE NOT applied ORDER BY created_at, seq`)(undefined),
      update: updateRow("pods", PodRow, ["created_at", "tenant_id"]),
      delete: (id) => affected(sql`DELETE FROM pods WHERE id = ${id} RETURNING id`)
    }

    const tunnels: Store.TunnelRepository = {
      insert: (record) => writing(Effect.asVoid(sql`INSERT INTO tunnels ${sql.insert(row(record))}`)),
      find: one(TunnelRow, (id: Ids.TunnelId) => sql`SELECT * FROM tunnels WHERE id = ${id}`),
      listByTenant: all(
        TunnelRow,
        (tenantId: Ids.TenantId) => sql`SELECT * FROM tunnels WHERE tenant_id = ${tenantId} ORDER BY created_at, seq`
      ),
      listByPod: all(
        TunnelRow,
        (podId: Ids.PodId) => sql`SELECT * FROM tunnels WHERE pod_id = ${podId} ORDER BY created_at, seq`
      ),
      listInactive: all(TunnelRow, () => sql`SELECT * FROM tunnels WHERE status <> 'active' ORDER BY created_at, seq`)(
        undefined
      ),
      update: (record) =>
        affected(
          sql`UPDATE tunnels SET status = ${record.status}, error = ${record.error} WHERE id = ${record.id} RETURNING id`
        ),
      delete: (id) => affected(sql`DELETE FROM tunnels WHERE id = ${id} RETURNING id`)
    }

    const registryCredentials: Store.RegistryCredentialRepository = {
      insert: (record) => writing(Effect.asVoid(sql`INSERT INTO registry_credentials ${sql.insert(row(record))}`)),
      listByTenant: all(
        CredentialRow,
        (tenantId: Ids.TenantId) =>
          sql`SELECT * FROM registry_credentials WHERE tenant_id = ${tenantId} ORDER BY created_at, seq`
      ),
      find: (tenantId, name) =>
        one(
          CredentialRow,
          () => sql`SELECT * FROM registry_credentials WHERE tenant_id = ${tenantId} AND name = ${name}`
        )(
          undefined
        ),
      delete: (tenantId, name) =>
        affected(sql`DELETE FROM registry_credentials WHERE tenant_id = ${tenantId} AND name = ${name} RETURNING name`)
    }

    /**
     * A session advisory lock on a connection reserved for the duration: other processes on the
     * same database skip the work while it is held, and it is released with the connection even
     * if this process dies.
     */
    const advisory = <A, E, R>(key: string, self: Effect.Effect<A, E, R>) =>
      Effect.scoped(Effect.gen(function*() {
        const connection = yield* sql.reserve
        const [row] = yield* connection.execute("SELECT pg_try_advisory_lock(hashtext($1)) AS got", [key], undefined)
        if (row?.got !== true) return Option.none<A>()
        yield* Effect.addFinalizer(() =>
          Effect.ignore(connection.execute("SELECT pg_advisory_unlock(hashtext($1))", [key], undefined))
        )
        return Option.some(yield* self)
      })).pipe(sqlFailureUnavailable<Option.Option<A>, E, R>)

    const idempotencyKeys: Store.IdempotencyKeyRepository = {
      find: (scope, key) =>
        one(IdempotencyKeyRow, () => sql`SELECT * FROM idempotency_keys WHERE scope = ${scope} AND key = ${key}`)(
          undefined
        ),
      // Replaces only an expired record: a live one keeps the key, and the insert answers no row.
      claim: (record, liveSince) =>
        affected(sql`
        INSERT INTO idempotency_keys ${sql.insert(row(record))}
        ON CONFLICT (scope, key) DO UPDATE SET
          fingerprint = EXCLUDED.fingerprint,
          resource_id = EXCLUDED.resource_id,
          created_at = EXCLUDED.created_at
        WHERE idempotency_keys.created_at < ${DateTime.toDateUtc(liveSince)}
        RETURNING key
      `),
      purge: (liveSince) =>
        unavailable(Effect.map(
          sql`DELETE FROM idempotency_keys WHERE created_at < ${DateTime.toDateUtc(liveSince)} RETURNING key`,
          (rows) => rows.length
        ))
    }

    /** The table's rows of the tenant `t`, oldest first, as a JSON array. */
    const owned = (table: string, order = "created_at, seq") =>
      `(SELECT coalesce(json_agg(r ORDER BY ${order}), '[]') FROM ${table} r WHERE r.tenant_id = t.id) AS ${table}`

    const snapshotQuery = `SELECT t.revision::text AS revision, ${
      [
        owned("vpcs"),
        owned("subnets"),
        owned("security_rules", "seq"),
        owned("pods"),
        owned("tunnels"),
        owned("registry_credentials"),
        owned("domains")
      ].join(", ")
    } FROM tenants t WHERE t.id = $1`

    const snapshots: Store.SnapshotRepository = {
      authenticate: (hash) =>
        Effect.map(
          one(AuthenticatedRow, (hash: string) =>
            sql`
            SELECT t.*, t.revision::text AS revision,
              coalesce((SELECT revision::text FROM provider_config), '0') AS provider_config_revision
            FROM tenants t WHERE t.token_hash = ${hash}
          `)(hash),
          Option.map(({ provider_config_revision, revision, ...tenant }) => ({
            tenant,
            revision,
            providerConfigRevision: provider_config_revision
          }))
        ),
      tenant: (id) =>
        Effect.map(
          one(SnapshotRow, (id: Ids.TenantId) => sql.unsafe(snapshotQuery, [id]))(id),
          Option.map((r) => ({
            revision: r.revision,
            vpcs: r.vpcs,
            subnets: r.subnets,
            securityRules: r.security_rules,
            pods: r.pods,
            tunnels: r.tunnels,
            registryCredentials: r.registry_credentials,
            domains: r.domains
          }))
        ),
      // The setting tells the revision triggers that this transaction's step is taken.
      step: (id) =>
        unavailable(Effect.map(
          sql<{ before: string; after: string }>`
          UPDATE tenants SET revision = revision + 1 WHERE id = ${id}
          RETURNING (revision - 1)::text AS before, revision::text AS after,
            set_config('tenet.revision_stepped', id::text, true) AS stepped
        `,
          (rows) => ({ before: rows[0]?.before ?? "0", after: rows[0]?.after ?? "0" })
        )),
      providerConfig: Effect.map(
        one(ProviderConfigSnapshotRow, () =>
          sql`
          SELECT coalesce((SELECT revision::text FROM provider_config), '0') AS revision,
            (SELECT row_to_json(c) FROM provider_config c) AS config
        `)(undefined),
        (found) => {
          const row = Option.getOrThrow(found)
          return { revision: row.revision, config: Option.fromNullable(row.config) }
        }
      )
    }

    // Interrupting a statement makes @effect/sql-pg cancel it with `pg_cancel_backend` on
    // another pooled connection. With one session (PGlite) that connection is the one the
    // transaction holds, so the cancel waited for its own transaction and every request
    // stalled for its 5-second timeout (seen when clients left in the middle of POSTs). A
    // transaction there is short and waits on no other process: it is let finish instead.
    const oneSession = options.locks === "in-process"
    const store = Store.Store.of({
      backend: options.backend ?? "postgres",
      soleWriter: oneSession,
      exclusive: oneSession ? Store.inProcessExclusive() : advisory,
      transaction: (self) =>
        sqlFailureUnavailable(
          oneSession ? Effect.uninterruptible(sql.withTransaction(self)) : sql.withTransaction(self)
        ).pipe(
          // @effect/sql makes a failed COMMIT or ROLLBACK a defect; when the connection is lost
          // that is the store being unavailable (and the outcome unknown), not a bug.
          Effect.catchSomeDefect((defect) =>
            isSqlError(defect)
              ? Option.some(Effect.fail(new Store.StoreUnavailable({ detail: describe(defect) })))
              : Option.none()
          )
        ),
      ping: unavailable(Effect.asVoid(sql`SELECT 1`)).pipe(
        Effect.zipRight(Effect.suspend(() => {
          const problem = options.dataDir === undefined ? undefined : Disk.fullDiskProblem(options.dataDir)
          return problem === undefined ? Effect.void : Effect.fail(new Store.StoreUnavailable({ detail: problem }))
        }))
      ),
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
      registryCredentials,
      idempotencyKeys,
      snapshots
    })

    const log = OperationsLog.OperationsLog.of({
      append: (entry) => unavailable(Effect.asVoid(sql`INSERT INTO operations_log ${sql.insert(row(entry))}`)),
      page: ({ before, limit }) =>
        unavailable(Effect.gen(function*() {
          const rows = yield* SqlSchema.findAll({
            Request: Schema.Void,
            Result: OperationRow,
            execute: () =>
              before === undefined
                ? sql`SELECT * FROM operations_log ORDER BY seq DESC LIMIT ${limit + 1}`
                : sql`SELECT * FROM operations_log WHERE seq < ${before} ORDER BY seq DESC LIMIT ${limit + 1}`
          })(undefined)
          const entries = rows.slice(0, limit).map((r) => OperationLog.OperationLogEntry.make(r))
          return {
            entries,
            next_before: rows.length > limit ? entries[entries.length - 1]!.seq : null
          }
        }))
    })

    return { store, log }
  })

/** The Store and OperationsLog on the `SqlClient` in context (migrations must have run). */
export const layer = (
  options?: Options
): Layer.Layer<Store.Store | OperationsLog.OperationsLog, never, SqlClient.SqlClient> =>
  Layer.effectContext(
    Effect.map(
      make(options),
      ({ log, store }) => Context.make(Store.Store, store).pipe(Context.add(OperationsLog.OperationsLog, log))
    )
  )
