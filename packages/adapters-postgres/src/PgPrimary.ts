/**
 * Finding the primary: a connection URL may name several hosts, as libpq's do
 * (`postgres://u@db-1:5432,db-2:5432/tenet?target_session_attrs=read-write`), and every
 * connection the pool opens goes to the one that accepts writes. A failover manager (Patroni,
 * pg_auto_failover, CloudNativePG) promotes a standby when the primary dies; the pool's next
 * connection asks every host again and follows it, with no restart. `pg` itself takes one host,
 * so the search is here: the hosts are asked at once, and the first in the URL's order that
 * answers `transaction_read_only = off` is the primary until a connection to it fails.
 */
import * as Pg from "pg"

/** One host of a URL, as `host:port`. */
export interface Host {
  readonly host: string
  readonly port: number
}

export interface Target {
  /** The hosts, in the URL's order (one for a single-host URL). */
  readonly hosts: ReadonlyArray<Host>
  /** The URL with the first host alone, for everything but the host (user, database, TLS). */
  readonly url: string
}

/** What `target_session_attrs` may say: Tenet writes, so only a host that accepts writes will do. */
const WRITABLE = new Set(["read-write", "primary"])

const DEFAULT_PORT = 5432

/** `host:port`, an IPv6 address in brackets, as a URL writes it. */
export const describeHost = (host: Host) => `${host.host.includes(":") ? `[${host.host}]` : host.host}:${host.port}`

/**
 * The hosts of a PostgreSQL URL and the URL with the first alone, or why it cannot be used. A
 * URL without a host (a socket from `PGHOST`) is one target with no hosts named.
 */
export const parseUrl = (url: string): { readonly target: Target } | { readonly invalid: string } => {
  const match = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/s.exec(url)
  if (match === null) return { invalid: "not a postgres:// or postgresql:// URL" }
  const [, scheme, userinfo = "", authority = "", rest = ""] = match
  const [path = "", query = ""] = rest.split(/\?(.*)/s)
  const params = new URLSearchParams(query)
  const attrs = params.get("target_session_attrs")
  if (attrs !== null && !WRITABLE.has(attrs)) {
    return {
      invalid: `target_session_attrs=${attrs}: Tenet writes, so it connects only to a host that accepts writes ` +
        "(read-write, which it applies whether or not the URL says so)"
    }
  }
  params.delete("target_session_attrs")
  const defaultPort = Number(params.get("port") ?? DEFAULT_PORT)
  const hosts: Array<Host> = []
  for (const part of authority === "" ? [] : authority.split(",")) {
    const host = /^(?:\[([^\]]+)\]|([^:[\]]*))(?::(\d*))?$/.exec(part)
    const encoded = host?.[1] ?? host?.[2]
    // A socket directory is written percent-encoded (`%2Fvar%2Frun%2Fpostgresql`).
    const name = encoded === undefined ? undefined : decodeURIComponent(encoded)
    if (host === null || name === undefined || name === "") {
      return { invalid: `host "${part}" is not host or host:port` }
    }
    const port = host[3] === undefined || host[3] === "" ? defaultPort : Number(host[3])
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { invalid: `host "${part}" has no valid port` }
    hosts.push({ host: name, port })
  }
  const search = params.toString()
  const first = hosts[0] === undefined ? "" : describeHost(hosts[0])
  const single = `${scheme}${userinfo}${first}${path}${search === "" ? "" : `?${search}`}`
  try {
    new URL(single)
  } catch {
    return { invalid: "not a valid URL" }
  }
  return { target: { hosts, url: single } }
}

/**
 * Which host is the primary, as last found: known until a connection to it fails or it turns
 * out read-only, then asked again (one search at a time, shared by every connection waiting).
 */
export interface Locator {
  readonly primary: () => Promise<Host | undefined>
  readonly lost: (host: Host) => void
}

export const makeLocator = (
  hosts: ReadonlyArray<Host>,
  isWritable: (host: Host) => Promise<boolean>
): Locator => {
  if (hosts.length <= 1) return { primary: () => Promise.resolve(hosts[0]), lost: () => {} }
  let known: Host | undefined
  let search: Promise<Host> | undefined
  const find = async (): Promise<Host> => {
    // Asked at once, answered in the URL's order: done as soon as a host and every one before
    // it have answered, whatever the hosts after it are doing.
    const asked = hosts.map((host) =>
      isWritable(host).then(
        (value) => ({ status: "fulfilled" as const, value }),
        (reason: unknown) => ({ status: "rejected" as const, reason })
      )
    )
    const answers: Array<Awaited<(typeof asked)[number]>> = []
    for (const [i, answer] of asked.entries()) {
      answers.push(await answer)
      if (answers[i]!.status === "fulfilled" && (answers[i] as { value: boolean }).value) return hosts[i]!
    }
    const why = answers.map((answer, i) =>
      `${describeHost(hosts[i]!)} ${
        answer.status === "fulfilled" ? "accepts no writes (a standby)" : `is out of reach (${String(answer.reason)})`
      }`
    )
    throw new Error(`no host accepts writes: ${why.join("; ")}`)
  }
  return {
    primary: () => {
      if (known !== undefined) return Promise.resolve(known)
      search ??= find().then(
        (host) => {
          known = host
          search = undefined
          return host
        },
        (error: unknown) => {
          search = undefined
          throw error
        }
      )
      return search
    },
    lost: (host) => {
      if (known === host) known = undefined
    }
  }
}

/** `pg`'s options for one client of the target, at `host` (the URL names the first host). */
const clientAt = (options: Pg.ClientConfig, host: Host | undefined) => {
  const client = new Pg.Client(options)
  if (host !== undefined) {
    client.host = host.host
    client.port = host.port
  }
  return client
}

const READ_ONLY = "SHOW transaction_read_only"

const writableOn = async (client: Pg.ClientBase) => {
  const result = await client.query<{ transaction_read_only: string }>(READ_ONLY)
  return result.rows[0]?.transaction_read_only === "off"
}

export interface PoolOptions extends Omit<Pg.PoolConfig, "connectionString" | "Client" | "connectionTimeoutMillis"> {
  /**
   * How long one connection may take to open (the search for the primary within half of it). A
   * request waiting for a free connection is bounded by the request's own timeout, not this.
   */
  readonly connectTimeoutMillis?: number
}

/** A pool whose every connection goes to the primary (and is refused when it turns out read-only). */
export const makePool = (target: Target, options: PoolOptions): Pg.Pool => {
  const { connectTimeoutMillis = 5_000, ...poolOptions } = options
  // A host asked connects and answers within a quarter each: the search within half.
  const askTimeoutMillis = Math.ceil(connectTimeoutMillis / 4)
  const locator = makeLocator(target.hosts, async (host) => {
    const client = clientAt(
      {
        connectionString: target.url,
        connectionTimeoutMillis: askTimeoutMillis,
        query_timeout: askTimeoutMillis,
        application_name: "tenet-primary-search"
      },
      host
    )
    client.on("error", () => {})
    try {
      await client.connect()
      return await writableOn(client)
    } finally {
      void client.end().catch(() => {})
    }
  })
  const targets = new WeakMap<Pg.ClientBase, Host>()

  type Connected = ((err: Error) => void) | ((err: null, client: Pg.Client) => void)

  class PrimaryClient extends Pg.Client {
    // The pool hands each client its own options: the connect timeout is the client's alone.
    constructor(config: Pg.ClientConfig = {}) {
      super({ ...config, connectionTimeoutMillis: connectTimeoutMillis })
    }

    override connect(): Promise<Pg.Client>
    override connect(callback: Connected): void
    override connect(callback?: Connected): Promise<Pg.Client> | void {
      const connecting = locator.primary().then((host) => {
        if (host !== undefined) {
          this.host = host.host
          this.port = host.port
          targets.set(this, host)
          // An established connection that breaks may mean the primary is gone: ask again.
          this.on("error", () => locator.lost(host))
        }
        return super.connect().catch((error: unknown) => {
          if (host !== undefined) locator.lost(host)
          throw error
        })
      })
      if (callback === undefined) return connecting
      connecting.then(
        (client) => (callback as (err: null, client: Pg.Client) => void)(null, client),
        (error: Error) => (callback as (err: Error) => void)(error)
      )
    }
  }

  return new Pg.Pool({
    ...poolOptions,
    connectionString: target.url,
    keepAlive: true,
    Client: PrimaryClient,
    // A host found writable can stop being so (demoted, or read-only by setting) before we use it.
    onConnect: async (client) => {
      if (await writableOn(client)) return
      const host = targets.get(client)
      if (host !== undefined) locator.lost(host)
      throw new Error(
        `the database${host === undefined ? "" : ` at ${describeHost(host)}`} accepts no writes ` +
          "(a standby, or default_transaction_read_only is on)"
      )
    }
  })
}
