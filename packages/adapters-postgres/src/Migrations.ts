/**
 * The schema, as numbered migrations run by the Migrator at startup. Unique constraints are
 * named as the Store port's `Constraints`, so a violation says which rule it broke. Foreign
 * keys cascade as the domain does (tenant -> VPCs -> subnets, rules, pods -> tunnels);
 * references a rule may outlive (remote VPC, target subnet and pods) are not foreign keys.
 * Every table has a `seq` so rows created in the same instant list in insertion order.
 */
import { Migrator } from "@effect/sql"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const initial = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE TABLE admins (
      username text PRIMARY KEY,
      password_hash text NOT NULL,
      token_hash text NOT NULL CONSTRAINT admins_token_hash_key UNIQUE,
      token_ciphertext text NOT NULL
    );

    CREATE TABLE tenants (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      name text NOT NULL CONSTRAINT tenants_name_key UNIQUE,
      description text,
      created_at timestamptz NOT NULL,
      password_hash text NOT NULL,
      token_hash text NOT NULL CONSTRAINT tenants_token_hash_key UNIQUE,
      token_ciphertext text NOT NULL
    );

    CREATE TABLE domains (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      domain text NOT NULL CONSTRAINT domains_domain_key UNIQUE,
      created_at timestamptz NOT NULL
    );

    CREATE TABLE provider_config (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      external_subnet_cidr text NOT NULL,
      external_subnet_gateway text NOT NULL,
      peering_subnet_cidr text NOT NULL,
      pod_dns_nameservers text[] NOT NULL,
      pod_dns_ndots integer,
      edge_account_id text,
      edge_api_token_ciphertext text,
      edge_domain text,
      updated_at timestamptz NOT NULL
    );

    CREATE TABLE service_tunnels (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      service text NOT NULL CONSTRAINT service_tunnels_service_key UNIQUE,
      hostname text NOT NULL CONSTRAINT service_tunnels_hostname_key UNIQUE,
      target_url text NOT NULL,
      status text NOT NULL,
      error text,
      created_at timestamptz NOT NULL
    );

    CREATE TABLE vpcs (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text NOT NULL,
      enable_internet boolean NOT NULL,
      applied boolean NOT NULL,
      apply_error text,
      created_at timestamptz NOT NULL,
      CONSTRAINT vpcs_tenant_id_name_key UNIQUE (tenant_id, name)
    );
    CREATE INDEX vpcs_unapplied ON vpcs (seq) WHERE NOT applied;

    CREATE TABLE subnets (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      vpc_id uuid NOT NULL REFERENCES vpcs (id) ON DELETE CASCADE,
      name text NOT NULL,
      cidr text NOT NULL,
      gateway_ip text NOT NULL,
      created_at timestamptz NOT NULL,
      CONSTRAINT subnets_vpc_id_name_key UNIQUE (vpc_id, name)
    );
    CREATE INDEX subnets_tenant_id ON subnets (tenant_id);

    CREATE TABLE security_rules (
      id uuid PRIMARY KEY,
      vpc_id uuid NOT NULL REFERENCES vpcs (id) ON DELETE CASCADE,
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      seq integer NOT NULL,
      name text NOT NULL,
      description text,
      direction text NOT NULL,
      action text NOT NULL,
      priority integer NOT NULL,
      protocol text NOT NULL,
      ports text,
      remote_type text NOT NULL,
      remote_cidr text,
      remote_vpc_id uuid,
      target_type text NOT NULL,
      target_subnet_id uuid,
      target_pod_ids uuid[],
      enabled boolean NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE INDEX security_rules_vpc_id ON security_rules (vpc_id, seq);
    CREATE INDEX security_rules_remote_vpc_id ON security_rules (remote_vpc_id);

    CREATE TABLE pods (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      vpc_id uuid NOT NULL REFERENCES vpcs (id) ON DELETE CASCADE,
      subnet_id uuid NOT NULL REFERENCES subnets (id) ON DELETE CASCADE,
      name text NOT NULL,
      container_image text NOT NULL,
      replica_count integer NOT NULL,
      service_port integer NOT NULL,
      use_registry_credentials boolean NOT NULL,
      external_access boolean NOT NULL,
      external_inbound boolean NOT NULL,
      auto_healing boolean NOT NULL,
      auto_scaling boolean NOT NULL,
      autoscale_min_replicas integer NOT NULL,
      autoscale_max_replicas integer NOT NULL,
      autoscale_cpu_target_millicores integer NOT NULL,
      persistent boolean NOT NULL,
      persistent_mount_path text NOT NULL,
      gpu_count integer NOT NULL,
      env_var_names text[] NOT NULL,
      env_ciphertext text,
      vip text,
      external_ip text,
      lifecycle text NOT NULL,
      applied boolean NOT NULL,
      apply_error text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CONSTRAINT pods_vpc_id_name_key UNIQUE (vpc_id, name)
    );
    CREATE INDEX pods_tenant_id ON pods (tenant_id);
    CREATE INDEX pods_unapplied ON pods (seq) WHERE NOT applied;

    CREATE TABLE tunnels (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      pod_id uuid NOT NULL REFERENCES pods (id) ON DELETE CASCADE,
      vpc_id uuid NOT NULL,
      tunnel_name text NOT NULL,
      subdomain text NOT NULL,
      domain text NOT NULL,
      hostname text NOT NULL CONSTRAINT tunnels_hostname_key UNIQUE,
      protocol_type text NOT NULL,
      service_port integer NOT NULL,
      status text NOT NULL,
      error text,
      created_at timestamptz NOT NULL,
      CONSTRAINT tunnels_tenant_id_tunnel_name_key UNIQUE (tenant_id, tunnel_name)
    );
    CREATE INDEX tunnels_pod_id ON tunnels (pod_id);

    CREATE TABLE registry_credentials (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text NOT NULL,
      seq bigserial NOT NULL,
      server text NOT NULL,
      username text NOT NULL,
      password_ciphertext text NOT NULL,
      created_at timestamptz NOT NULL,
      CONSTRAINT registry_credentials_tenant_id_name_key PRIMARY KEY (tenant_id, name)
    );

    CREATE TABLE operations_log (
      seq bigserial PRIMARY KEY,
      at timestamptz NOT NULL,
      kind text NOT NULL,
      outcome text NOT NULL,
      principal text NOT NULL,
      tenant_id text,
      source_address text,
      detail text
    );
  `))

/**
 * Idempotency keys: per scope (a tenant id, or `admin`), what each key's request made. Written
 * in the transaction of that write; forgotten after the retention period (by `created_at`).
 */
const idempotencyKeys = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE TABLE idempotency_keys (
      scope text NOT NULL,
      key text NOT NULL,
      fingerprint text NOT NULL,
      resource_id text NOT NULL,
      created_at timestamptz NOT NULL,
      CONSTRAINT idempotency_keys_pkey PRIMARY KEY (scope, key)
    );
    CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
  `))

const owned = ["domains", "vpcs", "subnets", "security_rules", "pods", "tunnels", "registry_credentials"]

/**
 * Revisions for the read model: a tenant's changes with every committed change to a row it
 * owns, the provider configuration's with every put. The bump is a deferred trigger, so it
 * takes the tenant's row lock only while committing, after every other lock the transaction
 * takes: no lock order to get wrong, and the reconciler's and cascades' writes count too. A
 * transaction that took its step itself (`snapshots.step`, last, so also after its other locks)
 * is not bumped again.
 */
const revisions = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    ALTER TABLE tenants ADD COLUMN revision bigint NOT NULL DEFAULT 0;
    ALTER TABLE provider_config ADD COLUMN revision bigint NOT NULL DEFAULT 1;
    CREATE INDEX security_rules_tenant_id ON security_rules (tenant_id);
    CREATE INDEX domains_tenant_id ON domains (tenant_id);

    CREATE FUNCTION tenet_bump_tenant_revision() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      tenant uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.tenant_id ELSE NEW.tenant_id END;
    BEGIN
      IF coalesce(current_setting('tenet.revision_stepped', true), '') <> tenant::text THEN
        UPDATE tenants SET revision = revision + 1 WHERE id = tenant;
      END IF;
      RETURN NULL;
    END
    $$;
    ${
    owned.map((table) => `
    CREATE CONSTRAINT TRIGGER ${table}_bump_tenant_revision
      AFTER INSERT OR UPDATE OR DELETE ON ${table}
      DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION tenet_bump_tenant_revision();`).join("")
  }
  `))

/**
 * The audit trail: one row per change, written in the change's transaction. No foreign keys:
 * entries outlive what they name. Read newest first, by tenant or by resource.
 */
const auditLog = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE TABLE audit_log (
      seq bigserial PRIMARY KEY,
      at timestamptz NOT NULL,
      request_id text NOT NULL,
      actor_type text NOT NULL,
      actor text NOT NULL,
      tenant_id text,
      action text NOT NULL,
      resource_kind text NOT NULL,
      resource_id text,
      outcome text NOT NULL
    );
    CREATE INDEX audit_log_tenant_id ON audit_log (tenant_id, seq);
    CREATE INDEX audit_log_resource_id ON audit_log (resource_id, seq);
  `))

/**
 * Each VPC's version (`Change` in core): stepped by every commit that changes the VPC's
 * contents, compared by commits decided on them.
 */
const vpcVersions = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    ALTER TABLE vpcs ADD COLUMN version bigint NOT NULL DEFAULT 0;
  `))

/**
 * Guardrails (`domain/Guardrail.ts` in core): a VPC's (`vpc_id`) or tenant-wide (null). `local`
 * is the record's JSON text (pods and subnets, or null for the whole VPC): read whole, never
 * queried into.
 */
const guardrails = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE TABLE guardrails (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      vpc_id uuid REFERENCES vpcs (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      require text NOT NULL,
      direction text NOT NULL,
      protocol text NOT NULL,
      ports text,
      remote_cidr text NOT NULL,
      local text,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX guardrails_tenant_id ON guardrails (tenant_id);
    CREATE INDEX guardrails_vpc_id ON guardrails (vpc_id);
    CREATE CONSTRAINT TRIGGER guardrails_bump_tenant_revision
      AFTER INSERT OR UPDATE OR DELETE ON guardrails
      DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION tenet_bump_tenant_revision();
  `))

/**
 * Login attempts counted for throttling, shared by every replica (`Store.LoginAttemptRepository`):
 * one row per attempt and key (a login name, a source address), times in epoch milliseconds.
 */
const loginAttempts = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE TABLE login_attempts (
      key text NOT NULL,
      attempt uuid NOT NULL,
      at_ms bigint NOT NULL
    );
    CREATE INDEX login_attempts_key ON login_attempts (key, at_ms);
    CREATE INDEX login_attempts_attempt ON login_attempts (attempt);
  `))

/** Tenants a page at a time (`Store.TenantRepository.page`): a range of this index per page. */
const tenantPages = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE INDEX tenants_created_at_id ON tenants (created_at, id);
  `))

/**
 * The change stream (`Store.EventRepository`): every commit's events, appended by
 * `tenet_append_events` under an advisory lock held to the end of the transaction, so revisions
 * are taken in the order commits become visible (a reader that sees a revision sees every one
 * before it). `event_horizon` is the highest revision compacted away.
 */
const events = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE SEQUENCE event_revisions;
    CREATE TABLE events (
      revision bigint PRIMARY KEY,
      tenant_id uuid NOT NULL,
      type text NOT NULL,
      kind text NOT NULL,
      id text NOT NULL,
      object jsonb NOT NULL,
      at_ms bigint NOT NULL
    );
    CREATE INDEX events_tenant_id_revision ON events (tenant_id, revision);
    CREATE TABLE event_horizon (
      one boolean PRIMARY KEY DEFAULT true CHECK (one),
      compacted_through bigint NOT NULL
    );
    INSERT INTO event_horizon (compacted_through) VALUES (0);
    CREATE FUNCTION tenet_append_events(appended jsonb) RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      n integer := jsonb_array_length(appended);
      first bigint;
    BEGIN
      IF n = 0 THEN RETURN 0; END IF;
      PERFORM pg_advisory_xact_lock(1413828165, 1);
      first := nextval('event_revisions');
      IF n > 1 THEN PERFORM setval('event_revisions', first + n - 1); END IF;
      INSERT INTO events (revision, tenant_id, type, kind, id, object, at_ms)
        SELECT first + e.n - 1, (e.value->>'tenant_id')::uuid, e.value->>'type', e.value->>'kind',
          e.value->>'id', e.value->'object', (extract(epoch FROM clock_timestamp()) * 1000)::bigint
        FROM jsonb_array_elements(appended) WITH ORDINALITY AS e(value, n);
      RETURN n;
    END
    $$;
  `))

/**
 * One index of every routed hostname (`domain/Hostname.ts`), tenants' tunnels and service
 * tunnels alike: each takes its row as it is inserted (a trigger, in the inserting statement,
 * so a clash fails that statement) and gives it back as it is deleted (the foreign keys). It
 * replaces each table's own unique hostname, which could not see the other table. A clash
 * already stored (the earlier bug) keeps the tenant's tunnel in the index.
 */
const routedHostnames = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE TABLE routed_hostnames (
      hostname text CONSTRAINT routed_hostnames_pkey PRIMARY KEY,
      tunnel_id uuid UNIQUE REFERENCES tunnels (id) ON DELETE CASCADE,
      service_tunnel_id uuid UNIQUE REFERENCES service_tunnels (id) ON DELETE CASCADE,
      CHECK ((tunnel_id IS NULL) <> (service_tunnel_id IS NULL))
    );
    INSERT INTO routed_hostnames (hostname, tunnel_id) SELECT hostname, id FROM tunnels;
    INSERT INTO routed_hostnames (hostname, service_tunnel_id) SELECT hostname, id FROM service_tunnels
      ON CONFLICT (hostname) DO NOTHING;
    ALTER TABLE tunnels DROP CONSTRAINT tunnels_hostname_key;
    ALTER TABLE service_tunnels DROP CONSTRAINT service_tunnels_hostname_key;
    CREATE FUNCTION tenet_route_tunnel() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO routed_hostnames (hostname, tunnel_id) VALUES (NEW.hostname, NEW.id);
      RETURN NULL;
    END
    $$;
    CREATE FUNCTION tenet_route_service_tunnel() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO routed_hostnames (hostname, service_tunnel_id) VALUES (NEW.hostname, NEW.id);
      RETURN NULL;
    END
    $$;
    CREATE TRIGGER tunnels_route AFTER INSERT ON tunnels
      FOR EACH ROW EXECUTE FUNCTION tenet_route_tunnel();
    CREATE TRIGGER service_tunnels_route AFTER INSERT ON service_tunnels
      FOR EACH ROW EXECUTE FUNCTION tenet_route_service_tunnel();
  `))

/**
 * What the pipeline decides on beyond VPC versions (`Invariants` in core): each tenant's scope
 * version, compared and stepped under a per-tenant advisory lock by commits that add or remove
 * a VPC or write a tenant-wide guardrail; and a VPC's lifecycle, `deleting` from the commit that
 * decides its delete until the cluster has let it go.
 */
const deciding = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    ALTER TABLE tenants ADD COLUMN scope_version bigint NOT NULL DEFAULT 0;
    ALTER TABLE vpcs ADD COLUMN lifecycle text NOT NULL DEFAULT 'active';
  `))

/**
 * When a delete was marked: the marking process finishes it within a lease, after which the
 * reconciler takes it over (`DeleteMark` in core). Marks made before this have none, and are
 * the reconciler's at once.
 */
const deleteMarks = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    ALTER TABLE vpcs ADD COLUMN deleting_since timestamptz;
    ALTER TABLE pods ADD COLUMN deleting_since timestamptz;
  `))

/**
 * The change stream without a lock on the commit path. A commit's events are inserted without a
 * revision, after the commit has locked its tenant's row (so `seq` follows the order a tenant's
 * commits take effect in; `xid` groups a transaction's). `tenet_sequence_events`, run by the
 * stream's readers, numbers the committed ones under the advisory lock that used to be held
 * through every commit, on from the highest revision given (or compacted): each transaction's
 * events together, transactions by their last `seq` (a tenant's next commit appends only once
 * this one has committed), and stamps them with when (compaction forgets by that age, so what
 * is forgotten is always a prefix of the revisions).
 * Revisions are still one sequence in the order events become readable: a reader that sees one
 * sees every one before it (each numbering commits whole, after the previous one). Before this,
 * commits of every tenant queued on that lock from their append to their end (their WAL flush
 * included): BENCHMARKS.md, "The change stream's order".
 */
const eventSequencer = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    ALTER TABLE events DROP CONSTRAINT events_pkey;
    ALTER TABLE events ALTER COLUMN revision DROP NOT NULL;
    ALTER TABLE events ADD COLUMN seq bigserial PRIMARY KEY;
    ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
    CREATE UNIQUE INDEX events_revision ON events (revision);
    CREATE INDEX events_unnumbered ON events (xid, seq) WHERE revision IS NULL;
    CREATE OR REPLACE FUNCTION tenet_append_events(appended jsonb) RETURNS integer LANGUAGE sql AS $$
      INSERT INTO events (tenant_id, type, kind, id, object, at_ms)
        SELECT (e.value->>'tenant_id')::uuid, e.value->>'type', e.value->>'kind', e.value->>'id', e.value->'object',
          (extract(epoch FROM clock_timestamp()) * 1000)::bigint
        FROM jsonb_array_elements(appended) WITH ORDINALITY AS e(value, n)
        ORDER BY e.n;
      SELECT jsonb_array_length(appended);
    $$;
    CREATE FUNCTION tenet_sequence_events() RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      n integer;
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM events WHERE revision IS NULL) THEN RETURN 0; END IF;
      PERFORM pg_advisory_xact_lock(1413828165, 1);
      -- One statement, one snapshot: what it numbers is what it counted from.
      WITH base AS (
        SELECT greatest((SELECT max(revision) FROM events), (SELECT compacted_through FROM event_horizon)) AS b
      ), unnumbered AS (
        SELECT seq, row_number() OVER (ORDER BY last, seq) AS r
        FROM (SELECT seq, max(seq) OVER (PARTITION BY xid) AS last FROM events WHERE revision IS NULL) t
      )
      UPDATE events e SET revision = base.b + u.r,
        at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
      FROM unnumbered u, base WHERE e.seq = u.seq;
      GET DIAGNOSTICS n = ROW_COUNT;
      RETURN n;
    END
    $$;
    DROP SEQUENCE event_revisions;
  `))

/**
 * Address sets: a tenant's named lists of networks, the entries kept as their JSON text (read
 * and written whole, as the record's schema says), each name once per tenant.
 */
const addressSets = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE TABLE address_sets (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      entries text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CONSTRAINT address_sets_tenant_id_name_key UNIQUE (tenant_id, name)
    );
    CREATE CONSTRAINT TRIGGER address_sets_bump_tenant_revision
      AFTER INSERT OR UPDATE OR DELETE ON address_sets
      DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION tenet_bump_tenant_revision();
  `))

/**
 * A rule's remote may be one of its tenant's address sets. The key (on the tenant too: a rule
 * cannot name another tenant's set) is the last guard of what the pipeline decides (a set a rule
 * names is not deleted); checked at the statement's end, so a tenant's cascade takes its sets
 * and rules together.
 */
const ruleAddressSets = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    ALTER TABLE address_sets ADD CONSTRAINT address_sets_tenant_id_id_key UNIQUE (tenant_id, id);
    ALTER TABLE security_rules ADD COLUMN remote_address_set_id uuid,
      ADD CONSTRAINT security_rules_remote_address_set_fkey
        FOREIGN KEY (tenant_id, remote_address_set_id) REFERENCES address_sets (tenant_id, id);
    CREATE INDEX security_rules_remote_address_set_id ON security_rules (remote_address_set_id);
  `))

/**
 * Sign-in sessions (`domain/Session.ts`): a tenant's or the admin's, by their token's digest;
 * gone with their tenant (or admin).
 */
const sessions = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    CREATE TABLE sessions (
      token_hash text PRIMARY KEY,
      tenant_id uuid REFERENCES tenants (id) ON DELETE CASCADE,
      admin_username text REFERENCES admins (username) ON DELETE CASCADE ON UPDATE CASCADE,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      CONSTRAINT sessions_one_principal CHECK ((tenant_id IS NULL) <> (admin_username IS NULL))
    );
    CREATE INDEX sessions_tenant_id ON sessions (tenant_id);
    CREATE INDEX sessions_admin_username ON sessions (admin_username);
    CREATE INDEX sessions_expires_at ON sessions (expires_at);
  `))

/** A tenant's own quotas (`domain/Quota.ts`), as JSON text: every one null (the server's defaults) at first. */
const quotas = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    ALTER TABLE tenants ADD COLUMN quotas text NOT NULL
      DEFAULT '{"vpcs":null,"subnets":null,"pods":null,"watchers":null}';
  `))

/**
 * Which server marked a VPC's delete (`ProcessIdentity`): a restarted server finishes its dead
 * predecessor's deletes at once. Nullable, no default to compute: a server of the release before
 * writes rows without it and reads past it (an expand step, README "Upgrading"). A migration
 * that fails for its lock timeout fails the start; the next start tries again.
 */
const deleteMarkers = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    -- Beside a serving release: give up rather than queue its writes behind this one's lock.
    SET LOCAL lock_timeout = '5s';
    ALTER TABLE vpcs ADD COLUMN deleting_by text;
  `))

/** Every migration, in order. Add new ones as `NNNN_name`; never edit one that has run. */
const all = {
  "0001_initial": initial,
  "0002_idempotency_keys": idempotencyKeys,
  "0003_revisions": revisions,
  "0004_audit_log": auditLog,
  "0005_vpc_versions": vpcVersions,
  "0006_guardrails": guardrails,
  "0007_login_attempts": loginAttempts,
  "0008_tenant_pages": tenantPages,
  "0009_events": events,
  "0010_routed_hostnames": routedHostnames,
  "0011_deciding": deciding,
  "0012_delete_marks": deleteMarks,
  "0013_event_sequencer": eventSequencer,
  "0014_address_sets": addressSets,
  "0015_rule_address_sets": ruleAddressSets,
  "0016_sessions": sessions,
  "0017_tenant_quotas": quotas,
  "0018_delete_markers": deleteMarkers
}

export const loader = Migrator.fromRecord(all)

/** The newest migration this release knows: a database past it was migrated by a newer release. */
export const LATEST = Math.max(...Object.keys(all).map((name) => Number(name.slice(0, 4))))
