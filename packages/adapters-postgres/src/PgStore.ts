/**
 * The Store and the OperationsLog on PostgreSQL, through `@effect/sql`. Rows are the domain's
 * record schemas, read through `SqlSchema` and written through their encoders; uniqueness and
 * cascades are the database's constraints, and the per-VPC lock is a row lock, so the rules
 * hold with many server processes writing at once.
 */
import { SqlClient, SqlError, SqlSchema } from "@effect/sql"
import type { Hostname } from "@tenet/core"
import {
  Admin,
  AuditLog,
  Change,
  ChangeEvent,
  IdempotencyKey,
  Ids,
  Kind,
  LoginThrottle,
  OperationLog,
  OperationsLog,
  ProviderConfig,
  ServiceTunnel,
  Session,
  Store,
  Tenant,
  Tunnel
} from "@tenet/core"
import { Context, DateTime, Effect, Layer, Option, Schema, SchemaAST } from "effect"
import type { ParseResult } from "effect"
import * as Disk from "./Disk.js"

/** A column read directly (a `Date`) or inside a JSON aggregate (an ISO string). */
const Timestamp = Schema.Union(Schema.DateTimeUtcFromDate, Schema.DateTimeUtc)

/*
 * Each table's row is its record's schema from the domain, with the record's instants as
 * PostgreSQL answers them; rows are written through the same schema's encoder.
 */
/** `quotas` are kept as their JSON text. */
const TenantRow = Schema.Struct({
  ...Tenant.TenantRecord.fields,
  quotas: Schema.parseJson(Tenant.TenantRecord.fields.quotas),
  created_at: Timestamp
})

const AdminRow = Admin.AdminRecord

const ProviderConfigRow = Schema.Struct({ ...ProviderConfig.ProviderConfigRecord.fields, updated_at: Timestamp })

const ServiceTunnelRow = Schema.Struct({ ...ServiceTunnel.ServiceTunnelRecord.fields, created_at: Timestamp })

/** A row as a kind's entry describes it: its columns by name. */
type Columns = { readonly [column: string]: unknown }

/**
 * A structured value kept as JSON text (`Kind.storage.jsonText`). A null is SQL NULL, not the
 * text `null`: a union encodes with its first member that takes the value, so `Null` comes first.
 */
const jsonTextColumn = (field: Schema.Schema.AnyNoContext) =>
  Schema.is(Schema.typeSchema(field))(null)
    ? Schema.Union(Schema.Null, Schema.parseJson(field))
    : Schema.parseJson(field)

/** Whether a field holds an instant, or an instant or null: by its type's schema, not by trying a value. */
const instantOf = (field: Schema.Schema.AnyNoContext): "instant" | "nullable" | null => {
  const type = SchemaAST.typeAST(field.ast)
  if (type === Schema.DateTimeUtcFromSelf.ast) return "instant"
  return SchemaAST.isUnion(type) && type.types.length === 2 &&
      type.types.some((member) => member === Schema.DateTimeUtcFromSelf.ast) &&
      type.types.some((member) => SchemaAST.isLiteral(member) && member.literal === null)
    ? "nullable"
    : null
}

/**
 * A kind's row, from its entry (`Kind.Kind`): the record's fields, with its instants as
 * PostgreSQL answers them and its `jsonText` columns parsed; rows are written through the same
 * schema's encoder. Every kind's row is derived here: a kind's storage is said in its entry alone.
 */
const rowOf = (kind: Kind.Any): Schema.Schema<Columns, Columns> => {
  const jsonText: ReadonlyArray<string> = kind.storage.jsonText
  return Schema.Struct(Object.fromEntries(
    Object.entries(kind.fields).map(([name, field]): [string, Kind.Fields[string]] => {
      if (!Schema.isSchema(field)) {
        // An optional field is kept as it is: one kept as JSON text must be a plain field.
        if (jsonText.includes(name)) {
          throw new Error(`${kind.storage.table}.${name}: a JSON-text column is a plain field`)
        }
        return [name, field]
      }
      if (jsonText.includes(name)) return [name, jsonTextColumn(field)]
      const instant = instantOf(field)
      return [name, instant === null ? field : instant === "nullable" ? Schema.NullOr(Timestamp) : Timestamp]
    })
  ))
}

/** Each part's row schema (`rowOf`), as the records of its part. */
const ROWS = Kind.byPart((part) => rowOf(Kind.KINDS[part]))
const StatusCount = Schema.Struct({ status: Tunnel.TunnelStatus, count: Schema.Number })

const SessionRow = Schema.Struct({
  ...Session.SessionRecord.fields,
  created_at: Timestamp,
  expires_at: Timestamp
})

const FoundSessionRow = Schema.Struct({ ...SessionRow.fields, principal_token_hash: Schema.String })

const IdempotencyKeyRow = Schema.Struct({ ...IdempotencyKey.IdempotencyKeyRecord.fields, created_at: Timestamp })

const AuthenticatedRow = Schema.Struct({
  ...TenantRow.fields,
  revision: Schema.String,
  provider_config_revision: Schema.String
})

/** A tenant's rows, each table as one JSON array, read in one statement (so at one instant). */
/** The first key of the advisory lock on a tenant's scope (the second: the tenant's id, hashed). */
const SCOPE_LOCK = 1413829443

/** How often a held advisory lock's connection is checked: a lock lost with it stops its work within this. */
const HELD_CHECK = "1 second"
/** A check unanswered this long (a host cut off, no reset) counts as the lock lost. */
const HELD_CHECK_TIMEOUT = "5 seconds"

/** A tenant's rows under a registry: each kind's as one JSON array, read in one statement (so at one instant). */
const snapshotRowOf = (registry: Kind.Registry) => {
  const lists: Readonly<Record<string, Schema.Array$<Schema.Schema<Columns, Columns>>>> = Object.fromEntries(
    Object.entries(registry).map(([part, kind]) => [part, Schema.Array(rowOf(kind))])
  )
  return Schema.Struct({
    revision: Schema.String,
    vpc_versions: Schema.Record({ key: Schema.String, value: Schema.Number }),
    scope_version: Schema.Union(Schema.Number, Schema.NumberFromString),
    ...lists
  })
}

const ProviderConfigSnapshotRow = Schema.Struct({
  revision: Schema.String,
  config: Schema.NullOr(ProviderConfigRow)
})

const NewOperationRow = Schema.Struct({ ...OperationLog.NewOperation.fields, at: Timestamp })

const NewAuditRow = Schema.Struct({ ...AuditLog.NewAuditEntry.fields, at: Timestamp })

/** `seq` is a `bigint` column, which the driver answers as a string. */
const AuditRow = Schema.Struct({
  ...AuditLog.AuditEntry.fields,
  seq: Schema.Union(Schema.Number, Schema.NumberFromString),
  at: Timestamp
})

/** `seq` is a `bigint` column, which the driver answers as a string. */
const OperationRow = Schema.Struct({
  ...OperationLog.OperationLogEntry.fields,
  seq: Schema.Union(Schema.Number, Schema.NumberFromString),
  at: Timestamp
})

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

/** Who holds a routed hostname, as the index and its holders' rows answer it. */
const HolderRow = Schema.Struct({
  tunnel_id: Schema.NullOr(Ids.TunnelId),
  tenant_id: Schema.NullOr(Ids.TenantId),
  tunnel_name: Schema.NullOr(Schema.String),
  service_tunnel_id: Schema.NullOr(Ids.ServiceTunnelId),
  service: Schema.NullOr(Schema.String)
})

const holderOf = (row: typeof HolderRow.Type): Option.Option<Hostname.Holder> =>
  row.tunnel_id !== null && row.tenant_id !== null && row.tunnel_name !== null
    ? Option.some({ kind: "tunnel", tenant_id: row.tenant_id, tunnel_id: row.tunnel_id, tunnel_name: row.tunnel_name })
    : row.service_tunnel_id !== null && row.service !== null
    ? Option.some({ kind: "service", service_tunnel_id: row.service_tunnel_id, service: row.service })
    : Option.none()

const isSqlError = (e: unknown): e is SqlError.SqlError => (e as { _tag?: unknown } | null)?._tag === "SqlError"

/**
 * A foreign key broken: the keys only back what the decision already holds (a set a rule names is
 * not deleted), so one firing is a bug, a defect, not the database being away.
 */
const isForeignKeyViolation = (e: SqlError.SqlError) => (e.cause as { code?: string } | undefined)?.code === "23503"

/** The defect of a broken foreign key (not an `SqlError`: a transaction's lost connection is one, and is not a bug). */
const brokenKey = (e: SqlError.SqlError) => Effect.dieMessage(`a decision broke a foreign key: ${describe(e)}`)

/**
 * For effects that carry the caller's own errors too (a transaction's body): only the
 * database's failures become `StoreUnavailable`; the caller's pass through untouched.
 */
const sqlFailureUnavailable = <A, E, R>(
  self: Effect.Effect<A, E | SqlError.SqlError, R>
): Effect.Effect<A, E | Store.StoreUnavailable, R> =>
  Effect.catchAll(self, (e): Effect.Effect<never, E | Store.StoreUnavailable> =>
    !isSqlError(e)
      ? Effect.fail(e as E)
      : isForeignKeyViolation(e)
      ? brokenKey(e)
      : Effect.fail(new Store.StoreUnavailable({ detail: describe(e) })))

/** As `unavailable`, and a unique violation is reported as the constraint it broke (a broken foreign key is a defect). */
const writing = <A, R>(
  self: Effect.Effect<A, SqlError.SqlError | ParseResult.ParseError, R>
): Effect.Effect<A, Store.StoreUnavailable | Store.UniqueViolation, R> =>
  self.pipe(
    Effect.catchTag("ParseError", (e) => Effect.die(e)),
    Effect.catchTag("SqlError", (e): Effect.Effect<never, Store.StoreUnavailable | Store.UniqueViolation> => {
      const cause = e.cause as { code?: string; constraint?: string } | undefined
      if (isForeignKeyViolation(e)) return brokenKey(e)
      return cause?.code === "23505"
        ? Effect.fail(new Store.UniqueViolation({ constraint: cause.constraint ?? "unknown" }))
        : Effect.fail(new Store.StoreUnavailable({ detail: describe(e) }))
    })
  )

/**
 * A write no uniqueness rule can refuse (a random token's digest, the one configuration row): a
 * unique violation is a defect, as a broken foreign key is.
 */
const unbound = <A, R>(
  self: Effect.Effect<A, Store.UniqueViolation | Store.StoreUnavailable, R>
): Effect.Effect<A, Store.StoreUnavailable, R> =>
  self.pipe(
    Effect.catchTag(
      "UniqueViolation",
      (e) => Effect.dieMessage(`a write no uniqueness rule binds broke ${e.constraint}`)
    )
  )

/** A statement answering rows for a request (its encoded side). */
type Execute<RI> = (request: RI) => Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>

export interface Options {
  /** The kinds a tenant owns (`Kind.KINDS` unless given: a registry of more, a test's), each kept in its entry's table. */
  readonly kinds?: Kind.Registry
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
    const registry = options.kinds ?? Kind.KINDS

    /*
     * Reads through `SqlSchema`: the request is encoded with its schema (lookup keys are plain
     * strings: a malformed id finds nothing rather than failing) and rows are decoded with the
     * row's schema.
     */
    const one = <R, RI, A, AI>(Request: Schema.Schema<R, RI>, Result: Schema.Schema<A, AI>, execute: Execute<RI>) => {
      const find = SqlSchema.findOne({ Request, Result, execute })
      return (request: R) => unavailable(find(request))
    }

    const all = <R, RI, A, AI>(Request: Schema.Schema<R, RI>, Result: Schema.Schema<A, AI>, execute: Execute<RI>) => {
      const find = SqlSchema.findAll({ Request, Result, execute })
      return (request: R) => unavailable(find(request))
    }

    const affected = (statement: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>) =>
      unavailable(Effect.map(statement, (rows) => rows.length > 0))

    /** A record as its row, through the row schema's encoder (a record that does not encode is a bug). */
    const encoded = <A, I>(Row: Schema.Schema<A, I>) => {
      const encode = Schema.encode(Row)
      return (record: A) => Effect.orDie(encode(record))
    }

    /** Inserts a record through its row schema's encoder. */
    const insertRow = <A, I extends Record<string, unknown>>(table: string, Row: Schema.Schema<A, I>) => {
      const encode = encoded(Row)
      return (record: A) =>
        writing(
          Effect.flatMap(encode(record), (row) => Effect.asVoid(sql`INSERT INTO ${sql(table)} ${sql.insert(row)}`))
        )
    }

    const encodeAdmin = encoded(AdminRow)
    const encodeQuotas = encoded(Schema.parseJson(Tenant.TenantRecord.fields.quotas))
    const encodeProviderConfig = encoded(ProviderConfigRow)
    const encodeIdempotencyKey = encoded(IdempotencyKeyRow)

    const admins: Store.AdminRepository = {
      find: one(Schema.String, AdminRow, (username) => sql`SELECT * FROM admins WHERE username = ${username}`),
      findByTokenHash: one(Schema.String, AdminRow, (hash) => sql`SELECT * FROM admins WHERE token_hash = ${hash}`),
      put: (record) =>
        Effect.flatMap(encodeAdmin(record), (row) =>
          unbound(writing(sql`
        INSERT INTO admins ${sql.insert(row)}
        ON CONFLICT (username) DO UPDATE SET
          password_hash = EXCLUDED.password_hash,
          token_hash = EXCLUDED.token_hash,
          token_ciphertext = EXCLUDED.token_ciphertext
      `.pipe(Effect.asVoid))))
    }

    const tenants: Store.TenantRepository = {
      insert: insertRow("tenants", TenantRow),
      find: one(Schema.String, TenantRow, (id) => sql`SELECT * FROM tenants WHERE id = ${id}`),
      findByName: one(Schema.String, TenantRow, (name) => sql`SELECT * FROM tenants WHERE name = ${name}`),
      findByTokenHash: one(Schema.String, TenantRow, (hash) => sql`SELECT * FROM tenants WHERE token_hash = ${hash}`),
      list: all(Schema.Void, TenantRow, () => sql`SELECT * FROM tenants ORDER BY created_at, seq`)(undefined),
      // One range of the (created_at, id) index: a page costs its own rows, whatever comes before it.
      page: (after, limit) =>
        unavailable(
          Effect.flatMap(
            after === undefined
              ? sql`SELECT * FROM tenants ORDER BY created_at, id LIMIT ${limit + 1}`
              : sql`SELECT * FROM tenants WHERE (created_at, id) > (${new Date(Number(after[0]))}, ${
                String(after[1])
              }::uuid) ORDER BY created_at, id LIMIT ${limit + 1}`,
            Schema.decodeUnknown(Schema.Array(TenantRow))
          )
        ),
      setToken: (id, tokenHash, tokenCiphertext) =>
        affected(sql`
        UPDATE tenants SET token_hash = ${tokenHash}, token_ciphertext = ${tokenCiphertext}
        WHERE id = ${id} RETURNING id
      `),
      setQuotas: (id, quotas) =>
        Effect.flatMap(encodeQuotas(quotas), (text) =>
          one(
            Schema.Struct({ id: Schema.String, text: Schema.String }),
            TenantRow,
            (request) => sql`UPDATE tenants SET quotas = ${request.text} WHERE id = ${request.id} RETURNING *`
          )({ id, text })),
      lockScope: (id) => unavailable(Effect.asVoid(sql`SELECT pg_advisory_xact_lock(${SCOPE_LOCK}, hashtext(${id}))`)),
      // The VPCs are held before the tenant's row (the subquery runs first), the order every
      // commit locks in: a commit racing the delete waits instead of deadlocking.
      delete: one(
        Schema.String,
        TenantRow,
        (id) =>
          sql`
        WITH held AS (SELECT id FROM vpcs WHERE tenant_id = ${id} ORDER BY id FOR UPDATE),
          keys AS (DELETE FROM idempotency_keys WHERE scope = ${id})
        DELETE FROM tenants WHERE id = ${id} AND (SELECT count(*) FROM held) >= 0 RETURNING *
      `
      )
    }

    /** A part's rows matching `where` (a fixed condition, with `$1` the one parameter), oldest first. */
    const rowsWhere = <P extends Kind.Part>(part: P, where: string, parameter?: string) =>
      Effect.map(
        all(
          Schema.Void,
          ROWS[part],
          () =>
            sql.unsafe(
              `SELECT * FROM ${Kind.KINDS[part].storage.table} WHERE ${where} ORDER BY created_at, seq`,
              parameter === undefined ? [] : [parameter]
            )
        )(undefined),
        (rows) => rows as ReadonlyArray<Kind.RecordOf<P>>
      )

    const domains: Store.DomainRepository = {
      listByTenant: (tenantId) => rowsWhere("domains", "tenant_id = $1", tenantId),
      findByDomain: (domain) =>
        Effect.map(rowsWhere("domains", "domain = $1", domain), (rows) => Option.fromNullable(rows[0]))
    }

    const providerConfig: Store.ProviderConfigRepository = {
      get: one(Schema.Void, ProviderConfigRow, () => sql`SELECT * FROM provider_config`)(undefined),
      put: (record) =>
        Effect.flatMap(encodeProviderConfig(record), (row) =>
          unbound(writing(Effect.asVoid(sql`
        INSERT INTO provider_config ${sql.insert({ singleton: true, ...row })}
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
      `))))
    }

    const serviceTunnels: Store.ServiceTunnelRepository = {
      insert: insertRow("service_tunnels", ServiceTunnelRow),
      list: all(Schema.Void, ServiceTunnelRow, () => sql`SELECT * FROM service_tunnels ORDER BY created_at, seq`)(
        undefined
      ),
      find: one(Schema.String, ServiceTunnelRow, (id) => sql`SELECT * FROM service_tunnels WHERE id = ${id}`),
      update: (record) =>
        affected(sql`
        UPDATE service_tunnels SET status = ${record.status}, error = ${record.error},
          target_url = ${record.target_url}
        WHERE id = ${record.id} RETURNING id
      `),
      delete: (id) => affected(sql`DELETE FROM service_tunnels WHERE id = ${id} RETURNING id`)
    }

    const holderRow = one(
      Schema.String,
      HolderRow,
      (hostname) =>
        sql`
          SELECT r.tunnel_id, t.tenant_id, t.tunnel_name, r.service_tunnel_id, s.service
          FROM routed_hostnames r
          LEFT JOIN tunnels t ON t.id = r.tunnel_id
          LEFT JOIN service_tunnels s ON s.id = r.service_tunnel_id
          WHERE r.hostname = ${hostname}`
    )
    const hostnames: Store.HostnameRepository = {
      holder: (hostname) => Effect.map(holderRow(hostname), Option.flatMap(holderOf))
    }

    const vpcs: Store.VpcRepository = {
      listUnapplied: rowsWhere("vpcs", "NOT applied"),
      listDeleting: rowsWhere("vpcs", "lifecycle = 'deleting'"),
      lock: (id) =>
        unavailable(Effect.map(
          sql<{ revision: string }>`
          SELECT t.revision::text AS revision FROM vpcs v JOIN tenants t ON t.id = v.tenant_id
          WHERE v.id = ${id} FOR UPDATE OF v
        `,
          (rows) => Option.fromNullable(rows[0]?.revision)
        ))
    }

    const pods: Store.PodRepository = {
      listUnapplied: rowsWhere("pods", "NOT applied"),
      listDeleting: rowsWhere("pods", "lifecycle = 'deleting'")
    }

    const tunnels: Store.TunnelRepository = {
      listInactive: rowsWhere("tunnels", "status <> 'active'"),
      countByStatus: all(
        Schema.Void,
        StatusCount,
        () => sql`SELECT status, count(*)::int AS count FROM tunnels GROUP BY status`
      )(undefined).pipe(Effect.map((rows) => {
        const counts = { active: 0, pending: 0, error: 0 }
        for (const row of rows) counts[row.status] = row.count
        return counts
      }))
    }

    /**
     * A session advisory lock on a connection reserved for the duration: other processes on the
     * same database skip the work while it is held, and it is released with the connection even
     * if this process dies. The connection is asked every `HELD_CHECK` whether it still lives:
     * when it breaks (the primary died, a failover) the lock is gone, another replica may take
     * it, and the work stops here, failing.
     */
    const advisory = <A, E, R>(key: string, self: Effect.Effect<A, E, R>) =>
      Effect.scoped(Effect.gen(function*() {
        const connection = yield* sql.reserve
        const [row] = yield* connection.execute("SELECT pg_try_advisory_lock(hashtext($1)) AS got", [key], undefined)
        if (row?.got !== true) return Option.none<A>()
        // Bounded: on a connection that stopped answering, the unlock would wait as long.
        yield* Effect.addFinalizer(() =>
          Effect.ignore(
            connection.execute("SELECT pg_advisory_unlock(hashtext($1))", [key], undefined).pipe(
              Effect.timeout(HELD_CHECK_TIMEOUT)
            )
          )
        )
        const lost = connection.execute("SELECT 1", [], undefined).pipe(
          Effect.timeoutFail({
            duration: HELD_CHECK_TIMEOUT,
            onTimeout: () => new SqlError.SqlError({ message: "the advisory lock's connection stopped answering" })
          }),
          Effect.delay(HELD_CHECK),
          Effect.forever
        )
        return Option.some(yield* Effect.raceFirst(self, lost))
      })).pipe(sqlFailureUnavailable<Option.Option<A>, E, R>)

    const findIdempotencyKey = one(
      Schema.Struct({ scope: Schema.String, key: Schema.String }),
      IdempotencyKeyRow,
      ({ key, scope }) => sql`SELECT * FROM idempotency_keys WHERE scope = ${scope} AND key = ${key}`
    )

    const idempotencyKeys: Store.IdempotencyKeyRepository = {
      find: (scope, key) => findIdempotencyKey({ scope, key }),
      // Replaces only an expired record: a live one keeps the key, and the insert answers no row.
      claim: (record, liveSince) =>
        Effect.flatMap(encodeIdempotencyKey(record), (row) =>
          affected(sql`
        INSERT INTO idempotency_keys ${sql.insert(row)}
        ON CONFLICT (scope, key) DO UPDATE SET
          fingerprint = EXCLUDED.fingerprint,
          resource_id = EXCLUDED.resource_id,
          created_at = EXCLUDED.created_at
        WHERE idempotency_keys.created_at < ${DateTime.toDateUtc(liveSince)}
        RETURNING key
      `)),
      purge: (liveSince) =>
        unavailable(Effect.map(
          sql`DELETE FROM idempotency_keys WHERE created_at < ${DateTime.toDateUtc(liveSince)} RETURNING key`,
          (rows) => rows.length
        ))
    }

    /** A kind's rows of the tenant `t`, in its order (`Kind.order`), as a JSON array named by its part. */
    const owned = (part: string, kind: Kind.Any) =>
      `(SELECT coalesce(json_agg(r ORDER BY ${
        kind.order === "seq" ? "seq" : "created_at, seq"
      }), '[]') FROM ${kind.storage.table} r WHERE r.tenant_id = t.id) AS "${part}"`

    const SnapshotRow = snapshotRowOf(registry)
    const snapshotQuery = `SELECT t.revision::text AS revision, t.scope_version, ${
      [
        ...Object.entries(registry).map(([part, kind]) => owned(part, kind)),
        "(SELECT coalesce(json_object_agg(v.id, v.version), '{}') FROM vpcs v WHERE v.tenant_id = t.id) AS vpc_versions"
      ].join(", ")
    } FROM tenants t WHERE t.id = $1`

    const snapshots: Store.SnapshotRepository = {
      authenticate: (hash) =>
        Effect.map(
          one(Schema.String, AuthenticatedRow, (hash) =>
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
          one(Schema.String, SnapshotRow, (id) => sql.unsafe(snapshotQuery, [id]))(id),
          Option.map(({ revision, scope_version, vpc_versions, ...lists }) => {
            // The lists are the registry's parts (`snapshotRowOf`), each a kind's rows.
            const rows: Readonly<Record<string, ReadonlyArray<Columns>>> = lists
            return {
              revision,
              rows: Kind.rowsIn(registry, (part) => rows[part] ?? []),
              vpcVersions: vpc_versions,
              scopeVersion: scope_version
            }
          })
        ),
      revisions: (id) =>
        Effect.map(
          one(
            Schema.String,
            Schema.Struct({ revision: Schema.NullOr(Schema.String), provider_config_revision: Schema.String }),
            (id) =>
              sql`
              SELECT (SELECT revision::text FROM tenants WHERE id = ${id}) AS revision,
                coalesce((SELECT revision::text FROM provider_config), '0') AS provider_config_revision`
          )(id),
          (found) => {
            const row = Option.getOrThrow(found)
            return { tenant: Option.fromNullable(row.revision), providerConfig: row.provider_config_revision }
          }
        ),
      providerConfig: Effect.map(
        one(Schema.Void, ProviderConfigSnapshotRow, () =>
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
    const encodeAudit = encoded(NewAuditRow)
    const audit: Store.AuditRepository = {
      append: (entry) =>
        Effect.flatMap(encodeAudit(entry), (row) =>
          unavailable(Effect.asVoid(sql`INSERT INTO audit_log ${sql.insert(row)}`))),
      // The newest `limit + 1` entries that pass: the extra one says whether a next page exists.
      page: (filter) =>
        Effect.map(
          all(Schema.Void, AuditRow, () => {
            const where = sql.and([
              ...(filter.before === undefined ? [] : [sql`seq < ${filter.before}`]),
              ...(filter.tenant_id === undefined ? [] : [sql`tenant_id = ${filter.tenant_id}`]),
              ...(filter.since === undefined ? [] : [sql`at >= ${DateTime.toDateUtc(filter.since)}`]),
              ...(filter.until === undefined ? [] : [sql`at < ${DateTime.toDateUtc(filter.until)}`]),
              ...(filter.resource_kind === undefined ? [] : [sql`resource_kind = ${filter.resource_kind}`]),
              ...(filter.resource_id === undefined ? [] : [sql`resource_id = ${filter.resource_id}`]),
              ...(filter.action === undefined ? [] : [sql`action = ${filter.action}`])
            ])
            return sql`SELECT * FROM audit_log WHERE ${where} ORDER BY seq DESC LIMIT ${filter.limit + 1}`
          })(undefined),
          (rows) => {
            const entries = rows.slice(0, filter.limit).map((r) =>
              AuditLog.AuditEntry.make(r)
            )
            return { entries, next_before: rows.length > filter.limit ? entries[entries.length - 1]!.seq : null }
          }
        )
    }

    // The kinds the registry names: the API's (`ChangeEvent.EventKind`) over `Kind.KINDS`.
    const StoredEvents = Schema.parseJson(Schema.Array(Schema.Struct({
      revision: Schema.Number,
      tenant_id: Schema.String,
      type: ChangeEvent.EventType,
      kind: Schema.Union(ChangeEvent.EventKind, Schema.Literal(...Object.values(registry).map((kind) => kind.event))),
      id: Schema.String,
      object: Schema.Unknown
    })))

    const events: Store.EventRepository = {
      // What has committed is numbered first (`tenet_sequence_events`: commits take no lock),
      // then read in one statement, so one snapshot: `latest` is the highest revision it can
      // see, and it sees every revision below one it sees (numberings commit whole, in order).
      after: (revision, tenant, limit) =>
        unavailable(Effect.gen(function*() {
          yield* sql`SELECT tenet_sequence_events()`
          const [row] = yield* sql<{ events: string; horizon: number; latest: number }>`
            WITH page AS (
              SELECT revision::float8 AS revision, tenant_id::text AS tenant_id, type, kind, id, object
              FROM events WHERE revision > ${revision}${tenant === null ? sql`` : sql` AND tenant_id = ${tenant}::uuid`}
              ORDER BY revision LIMIT ${limit}
            )
            SELECT (SELECT coalesce(json_agg(page ORDER BY revision), '[]')::text FROM page) AS events,
              h.compacted_through::float8 AS horizon,
              greatest((SELECT max(revision) FROM events), h.compacted_through)::float8 AS latest
            FROM event_horizon h`
          return {
            events: (yield* Schema.decode(StoredEvents)(row!.events)) as ReadonlyArray<ChangeEvent.StoredEvent>,
            horizon: Number(row!.horizon),
            latest: Number(row!.latest)
          }
        })),
      append: (appended) =>
        appended.length === 0
          ? Effect.void
          : unavailable(Effect.asVoid(sql`SELECT tenet_append_events(${JSON.stringify(appended)}::jsonb)`)),
      // What has committed is numbered first, so that it is forgotten with its age, not kept
      // for want of a revision (one that commits meanwhile waits for the next compaction).
      compact: (before) =>
        unavailable(Effect.map(
          Effect.zipRight(
            sql`SELECT tenet_sequence_events()`,
            sql<{ gone: number }>`
            WITH gone AS (DELETE FROM events WHERE at_ms < ${before} AND revision IS NOT NULL RETURNING revision),
            moved AS (
              UPDATE event_horizon SET compacted_through = greatest(
                compacted_through, coalesce((SELECT max(revision) FROM gone), 0)
              ) RETURNING 1
            )
            SELECT (SELECT count(*) FROM gone)::int AS gone FROM moved`
          ),
          (rows) => rows[0]?.gone ?? 0
        ))
    }

    const transaction: Store.StoreShape["transaction"] = (self) =>
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
      )

    const loginAttempts: Store.LoginAttemptRepository = {
      // Held per key (an advisory lock until the transaction ends), read, decided, counted: two
      // replicas' attempts on one name go in turn, so the limit holds across them exactly.
      begin: (attempt, keys, now) =>
        transaction(unavailable(Effect.gen(function*() {
          const names = keys.map(({ key }) => key).sort()
          yield* sql`SELECT pg_advisory_xact_lock(hashtext(k)) FROM (SELECT unnest(${names}::text[]) AS k ORDER BY 1) held`
          const rows = yield* sql<{ key: string; at: number }>`
            SELECT key, at_ms::float8 AS at FROM login_attempts WHERE key = ANY(${names}::text[]) ORDER BY at_ms`
          const begun = LoginThrottle.begin((key) => rows.filter((r) => r.key === key).map((r) => r.at), keys, now)
          if (begun._tag === "Counted") {
            const expired = keys.map(({ key, policy }) => sql`(key = ${key} AND at_ms <= ${now - policy.windowMillis})`)
            yield* sql`
              WITH expired AS (DELETE FROM login_attempts WHERE ${sql.or(expired)})
              INSERT INTO login_attempts ${sql.insert(names.map((key) => ({ key, attempt, at_ms: now })))}`
          }
          return begun
        }))),
      succeeded: (attempt, clear) =>
        unavailable(
          Effect.asVoid(sql`DELETE FROM login_attempts WHERE attempt = ${attempt} OR key = ANY(${clear}::text[])`)
        ),
      purge: (before) =>
        unavailable(Effect.map(
          sql`DELETE FROM login_attempts WHERE at_ms < ${before} RETURNING attempt`,
          (rows) => rows.length
        ))
    }

    const findSession = one(
      Schema.Struct({ hash: Schema.String, now: Schema.Number }),
      FoundSessionRow,
      ({ hash, now }) =>
        sql`
        SELECT s.*, coalesce(t.token_hash, a.token_hash) AS principal_token_hash
        FROM sessions s
        LEFT JOIN tenants t ON t.id = s.tenant_id
        LEFT JOIN admins a ON a.username = s.admin_username
        WHERE s.token_hash = ${hash} AND s.expires_at > to_timestamp(${now} / 1000.0)`
    )

    const sessions: Store.SessionRepository = {
      insert: (record) => unbound(insertRow("sessions", SessionRow)(record)),
      find: (hash, now) =>
        Effect.map(
          findSession({ hash, now }),
          Option.map(({ principal_token_hash, ...session }) => ({ session, principalTokenHash: principal_token_hash }))
        ),
      delete: (hash) => affected(sql`DELETE FROM sessions WHERE token_hash = ${hash} RETURNING token_hash`),
      deleteOf: (owner) =>
        unavailable(Effect.map(
          "tenant_id" in owner
            ? sql`DELETE FROM sessions WHERE tenant_id = ${owner.tenant_id} RETURNING token_hash`
            : sql`DELETE FROM sessions WHERE admin_username = ${owner.admin_username} RETURNING token_hash`,
          (rows) => rows.length
        )),
      purge: (now) =>
        unavailable(Effect.map(
          sql`DELETE FROM sessions WHERE expires_at <= to_timestamp(${now} / 1000.0) RETURNING token_hash`,
          (rows) => rows.length
        ))
    }

    /** How each part of a tenant's state is written: its row's encoder (`fixed`: the columns an update never changes). */
    const parts: Readonly<
      Record<string, {
        readonly table: string
        readonly encode: (record: Columns) => Effect.Effect<Columns>
        readonly fixed: ReadonlyArray<string>
      }>
    > = Object.fromEntries(
      Object.entries(registry).map((
        [part, kind]
      ) => [part, { table: kind.storage.table, encode: encoded(rowOf(kind)), fixed: kind.storage.fixed }])
    )

    /** A row's key as a condition: by its kind's key field (`Kind.keyField`), within its tenant. */
    const whereKey = (tenant: string, part: Change.Part, key: string) =>
      sql`tenant_id = ${tenant} AND ${sql(registry[part]!.keyField)} = ${key}`

    /** The data-modifying statement of one row's update or removal, for a `WITH` list. */
    const statementOf = (
      tenant: string,
      w: Extract<Change.Write, { readonly _tag: "Update" | "Remove" }>,
      alsoStep: boolean
    ) =>
      Effect.gen(function*() {
        const { encode, fixed, table } = parts[w.part]!
        if (w._tag === "Remove") {
          return sql`DELETE FROM ${sql(table)} WHERE ${whereKey(tenant, w.part, w.key)} RETURNING 1`
        }
        const row = yield* encode(w.record)
        const fields = Object.fromEntries(
          Object.entries(row).filter(([column]) => column !== "id" && !fixed.includes(column))
        )
        // A VPC stepped by this change and replaced by it too: one statement may change a row once.
        const step = alsoStep ? sql`, version = version + 1` : sql``
        return sql`UPDATE ${sql(table)} SET ${sql.update(fields)}${step} WHERE ${
          whereKey(tenant, w.part, Kind.keyIn(registry[w.part]!, w.record))
        } RETURNING 1`
      })

    /**
     * One transaction of at most four statements: BEGIN, one that holds the VPCs decided on or
     * written into (reading their versions) and claims the keys, one that makes every write with
     * the version steps, the audit entries and the revision step, and COMMIT. Without a VPC to
     * hold or a key to claim, the one statement of writes alone, a transaction by itself.
     */
    /**
     * A commit PostgreSQL chose as a deadlock's victim (a stale decision's retry holds the VPC
     * it found changed before the others) wrote nothing: it is decided again, like a stale one.
     */
    const deadlockIsStale = <A, R>(
      self: Effect.Effect<A, SqlError.SqlError, R>
    ): Effect.Effect<A, Store.StaleDecision | Store.StoreUnavailable | Store.UniqueViolation, R> =>
      self.pipe(Effect.catchTag(
        "SqlError",
        (e): Effect.Effect<never, Store.StaleDecision | Store.StoreUnavailable | Store.UniqueViolation> =>
          (e.cause as { code?: string } | undefined)?.code === "40P01"
            ? Effect.fail(new Store.StaleDecision({ vpc_id: null }))
            : writing(Effect.fail(e))
      ))

    const commit: Store.StoreShape["commit"] = (change) =>
      Effect.gen(function*() {
        const touched = Change.touchedVpcs(change.writes, registry)
        const replaced = new Set(
          change.writes.flatMap((w) =>
            w._tag === "Update" && registry[w.part]!.versioned ? [Kind.keyIn(registry[w.part]!, w.record)] : []
          )
        )
        // Every VPC decided on or written into is held first, in id order: a commit locks VPCs,
        // then rows, then the tenant, so commits racing for the same rows never deadlock.
        const held = [...new Set([...change.decidedOn.map((d) => d.vpc as string), ...touched])].sort()
        // One statement claims every key; a record made since the earliest claim's `liveSince` holds its key.
        const claim = change.claims.length === 0 ? null : {
          rows: yield* Effect.forEach(change.claims, (c) => encodeIdempotencyKey(c.record)),
          liveSince: DateTime.toDateUtc(
            change.claims.reduce(
              (a, c) => DateTime.lessThan(c.liveSince, a) ? c.liveSince : a,
              change.claims[0]!.liveSince
            )
          )
        }
        const movesScope = Change.movesScope(change.writes, registry)
        const scoped = change.scope !== undefined || movesScope
        const hold = Effect.gen(function*() {
          // The scope first: a commit decided on it holds it before any VPC, as the stale retry does.
          if (scoped) yield* tenants.lockScope(change.tenant)
          const versions = held.length === 0
            ? sql`SELECT NULL::text AS id, NULL::bigint AS version WHERE false`
            : sql`SELECT id::text, version FROM vpcs WHERE id IN ${sql.in(held)} ORDER BY id FOR UPDATE`
          const claiming = claim === null ? sql`SELECT NULL::text AS key WHERE false` : sql`
            INSERT INTO idempotency_keys ${sql.insert(claim.rows)}
            ON CONFLICT (scope, key) DO UPDATE SET
              fingerprint = EXCLUDED.fingerprint,
              resource_id = EXCLUDED.resource_id,
              created_at = EXCLUDED.created_at
            WHERE idempotency_keys.created_at < ${claim.liveSince}
            RETURNING key`
          const [found] = yield* deadlockIsStale(sql<
            { versions: Record<string, string | number>; claimed: number; scope: string | number }
          >`
            WITH held AS (${versions}), claimed AS (${claiming})
            SELECT coalesce((SELECT json_object_agg(id, version) FROM held), '{}') AS versions,
              (SELECT count(*)::int FROM claimed) AS claimed,
              (SELECT scope_version FROM tenants WHERE id = ${change.tenant}) AS scope`)
          if (change.scope !== undefined && Number(found?.scope) !== change.scope) {
            return yield* new Store.StaleDecision({ vpc_id: null })
          }
          for (const { version, vpc } of change.decidedOn) {
            const current = found?.versions[vpc]
            if (current === undefined || Number(current) !== version) {
              return yield* new Store.StaleDecision({ vpc_id: vpc })
            }
          }
          if (claim !== null && found?.claimed !== claim.rows.length) return yield* new Store.KeyClaimed()
        })
        // A touch writes no row: it is one of the version steps below. The inserts of one kind are
        // one statement (a topology's 2,000 pods are one INSERT, not 2,000 parts of the WITH list).
        const rowWrites = change.writes.filter((w) => w._tag !== "Touch")
        const inserts = new Map<Change.Part, Array<Columns>>()
        for (const w of rowWrites) {
          if (w._tag !== "Insert") continue
          const of = inserts.get(w.part)
          if (of === undefined) inserts.set(w.part, [w.record])
          else of.push(w.record)
        }
        const others = rowWrites.filter((w): w is Extract<Change.Write, { readonly _tag: "Update" | "Remove" }> =>
          w._tag !== "Insert"
        )
        const statements = [
          ...(yield* Effect.forEach(inserts, ([part, records]) =>
            Effect.map(
              Effect.forEach(records, parts[part]!.encode),
              (rows) => sql`INSERT INTO ${sql(parts[part]!.table)} ${sql.insert(rows)} RETURNING 1`
            ))),
          ...(yield* Effect.forEach(
            others,
            (w) =>
              statementOf(
                change.tenant,
                w,
                w._tag === "Update" && registry[w.part]!.versioned &&
                  touched.has(Kind.keyIn(registry[w.part]!, w.record) as Ids.VpcId)
              )
          ))
        ]
        const removals = others.flatMap((w, i) => w._tag === "Remove" ? [inserts.size + i] : [])
        const stepped = [...touched].filter((id) => !replaced.has(id))
        if (stepped.length > 0) {
          statements.push(sql`UPDATE vpcs SET version = version + 1 WHERE id IN ${sql.in(stepped)} RETURNING 1`)
        }
        if (change.audit.length > 0) {
          const rows = yield* Effect.forEach(change.audit, encodeAudit)
          statements.push(sql`INSERT INTO audit_log ${sql.insert(rows)} RETURNING 1`)
        }
        // The step reads every write's count, so the writes run (and take their row locks)
        // before it locks the tenant's row: VPC before tenant, as every transaction locks them.
        // The events are appended after it (they read it), so a tenant's commits append theirs in
        // the order they take effect, which is the order the change stream numbers them in.
        // A removal that removed nothing was decided on a state before the row's delete: no step,
        // and the transaction it runs in is rolled back (`StaleDecision`).
        const writesFirst = statements.length === 0
          ? sql``
          : sql` AND ${
            sql.join(" + ", false)(statements.map((_, i) => sql`(SELECT count(*) FROM ${sql(`w${i}`)})`))
          } >= 0${sql.join("", false)(removals.map((i) => sql` AND (SELECT count(*) FROM ${sql(`w${i}`)}) > 0`))}`
        const write = Effect.flatMap(
          deadlockIsStale(sql<{ before: string; after: string }>`
            WITH ${sql.join(", ", false)(statements.map((statement, i) => sql`${sql(`w${i}`)} AS (${statement})`))}${
            statements.length === 0 ? sql`` : sql`,`
          } step AS (
              UPDATE tenants SET revision = revision + 1${
            movesScope ? sql`, scope_version = scope_version + 1` : sql``
          } WHERE id = ${change.tenant}${writesFirst}
              RETURNING (revision - 1)::text AS before, revision::text AS after,
                set_config('tenet.revision_stepped', id::text, true) AS stepped
            )${
            change.events.length === 0 ? sql`` : sql`,
            appended AS (SELECT tenet_append_events(${JSON.stringify(change.events)}::jsonb) AS n FROM step)`
          }
            SELECT before, after${
            change.events.length === 0 ? sql`` : sql`, (SELECT n FROM appended) AS appended`
          } FROM step`),
          (rows) =>
            rows[0] === undefined && removals.length > 0
              ? Effect.fail(new Store.StaleDecision({ vpc_id: null }))
              : Effect.succeed({ before: rows[0]?.before ?? "0", after: rows[0]?.after ?? "0" })
        )
        return yield* held.length === 0 && claim === null && !scoped && removals.length === 0
          ? write
          : transaction(Effect.zipRight(hold, write))
      })

    const store = Store.Store.of({
      backend: options.backend ?? "postgres",
      soleWriter: oneSession,
      exclusive: oneSession ? Store.inProcessExclusive() : advisory,
      transaction,
      commit,
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
      hostnames,
      vpcs,
      pods,
      tunnels,
      idempotencyKeys,
      loginAttempts,
      sessions,
      events,
      audit,
      snapshots
    })

    const encodeOperation = encoded(NewOperationRow)
    /** The newest `limit + 1` entries older than `before`: the extra one says whether a next page exists. */
    const operationsBefore = all(
      Schema.Struct({ before: Schema.NullOr(Schema.Number), limit: Schema.Number }),
      OperationRow,
      ({ before, limit }) =>
        before === null
          ? sql`SELECT * FROM operations_log ORDER BY seq DESC LIMIT ${limit + 1}`
          : sql`SELECT * FROM operations_log WHERE seq < ${before} ORDER BY seq DESC LIMIT ${limit + 1}`
    )

    const log = OperationsLog.OperationsLog.of({
      append: (entry) =>
        Effect.flatMap(
          encodeOperation(entry),
          (row) => unavailable(Effect.asVoid(sql`INSERT INTO operations_log ${sql.insert(row)}`))
        ),
      page: ({ before, limit }) =>
        Effect.map(operationsBefore({ before: before ?? null, limit }), (rows) => {
          const entries = rows.slice(0, limit).map((r) => OperationLog.OperationLogEntry.make(r))
          return { entries, next_before: rows.length > limit ? entries[entries.length - 1]!.seq : null }
        })
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
