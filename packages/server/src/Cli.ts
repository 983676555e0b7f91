/**
 * `tenet-server`'s command line. Everything is set with environment variables; the command
 * line only asks for help or the version, so a mistyped flag is an error instead of a server
 * started by surprise (binding a port, creating a data directory).
 */
import { Api } from "@tenet/core"

export type Command =
  | { readonly _tag: "Serve" }
  | { readonly _tag: "Help" }
  | { readonly _tag: "Version" }
  | { readonly _tag: "Unknown"; readonly argument: string }

export const parse = (args: ReadonlyArray<string>): Command => {
  const [first] = args
  if (first === undefined) return { _tag: "Serve" }
  if (args.length === 1 && (first === "--help" || first === "-h" || first === "help")) return { _tag: "Help" }
  if (args.length === 1 && (first === "--version" || first === "-v")) return { _tag: "Version" }
  return { _tag: "Unknown", argument: args.find((a) => !["--help", "-h", "--version", "-v"].includes(a)) ?? first }
}

/** Every setting, its default and what it is for: the README's configuration table, in short. */
export const SETTINGS: ReadonlyArray<readonly [name: string, byDefault: string, meaning: string]> = [
  ["TENET_HOST", "127.0.0.1", "address to listen on (0.0.0.0 for all interfaces)"],
  ["TENET_PORT", "8080", "port to listen on"],
  ["TENET_PUBLIC_URL", "http://$TENET_HOST:$TENET_PORT", "where this server is reached"],
  ["TENET_ADMIN_USERNAME", "admin", "the administrator's name"],
  ["TENET_ADMIN_PASSWORD", "unset", "the admin's password (unset: generated into $TENET_DATA_DIR/admin-password)"],
  ["TENET_STORE", "embedded", "embedded (PostgreSQL in the process), postgres or memory"],
  ["TENET_DATA_DIR", "./.tenet", "the embedded store's directory"],
  ["TENET_DATABASE_URL", "unset", "postgres://user:password@host:5432/database, for TENET_STORE=postgres"],
  ["TENET_ENCRYPTION_KEY", "unset", "32-byte key for stored secrets (required with postgres)"],
  ["TENET_SERVICE_CIDR", "10.96.0.0/12", "the range pods' virtual IPs come from (simulated cluster)"],
  ["TENET_ORCHESTRATOR", "simulated", "simulated or kubernetes (a Kube-OVN cluster)"],
  ["TENET_TUNNELS", "simulated", "simulated or edge (the tunnel provider's API)"],
  ["TENET_KUBE_OVN_EXTERNAL_SUBNET", "ovn-vpc-external-network", "Kube-OVN subnet of the provider network"],
  ["TENET_KUBE_OVN_PEERING_SUBNET", "tenet-peering", "Kube-OVN subnet holding the peering block"],
  ["TENET_NAMESPACE", "tenet-system", "where platform service tunnels' connector runs"],
  ["TENET_EDGE_API_URL", "https://api.cloudflare.com/client/v4", "the tunnel provider's API"],
  ["TENET_RECONCILE_INTERVAL", "2 minutes", "how often failed applies and pending tunnels are retried"],
  ["TENET_APPLY_WAIT", "2 seconds", "how long a write waits for its change to be in force in the cluster"],
  [
    "TENET_CONTROLLER_RESYNC",
    "10 minutes",
    "how often the cluster and the provider are compared with the committed state"
  ],
  [
    "TENET_CONTROLLER_DELETE_ORPHANS",
    "true",
    "false: what no committed state wants is logged and counted at the resync, not deleted"
  ],
  ["TENET_WATCH_RETENTION", "1 hour", "how long GET /watch can resume from a revision (410 after)"],
  ["TENET_SESSION_TTL", "12 hours", "how long a sign-in session (login with session: true) lasts"],
  ["TENET_QUOTA_VPCS", "100", "VPCs a tenant may have, unless the admin sets its own quota"],
  ["TENET_QUOTA_SUBNETS", "1000", "subnets a tenant may have, unless the admin sets its own quota"],
  ["TENET_QUOTA_PODS", "2000", "pods a tenant may have, unless the admin sets its own quota"],
  ["TENET_QUOTA_WATCHERS", "20", "change streams a tenant may hold open on one replica"],
  ["TENET_EXPENSIVE_SEATS", "4", "expensive requests (reachability, explain, analysis, topology) run at once"],
  ["TENET_EXPENSIVE_QUEUE", "16", "a tenant's expensive requests that may wait for a seat (429 past it)"],
  ["TENET_METRICS_PORT", "unset (off)", "serves Prometheus metrics at /metrics on this port"],
  ["TENET_METRICS_HOST", "TENET_HOST", "the address the metrics listener binds"],
  ["TENET_LOG_LEVEL", "info", "all, trace, debug, info, warn, error, fatal or off"],
  ["TENET_MAX_BODY_BYTES", "1048576", "larger request bodies are refused with 413"],
  ["TENET_REQUEST_TIMEOUT", "30 seconds", "headers and body must arrive within this (408 otherwise)"],
  ["TENET_SHUTDOWN_GRACE", "10 seconds", "on SIGTERM/SIGINT, how long requests in flight may take"],
  ["TENET_EXIT_WITH_PARENT", "false", "true: also stop when the process that started it exits (pnpm start)"],
  ["OTEL_EXPORTER_OTLP_ENDPOINT", "unset (off)", "exports traces over OTLP/HTTP"]
]

export const help = (version: string): string => {
  const width = Math.max(...SETTINGS.map(([name]) => name.length))
  return [
    `tenet-server ${version}: Tenet's API server (API ${Api.API_VERSION})`,
    "",
    "Usage: tenet-server            serve until SIGTERM or SIGINT",
    "       tenet-server --help     this text",
    "       tenet-server --version  the version",
    "",
    "Settings are environment variables (default in brackets):",
    ...SETTINGS.map(([name, byDefault, meaning]) => `  ${name.padEnd(width)}  ${meaning} [${byDefault}]`),
    "",
    "Console at /console, API reference at /docs, OpenAPI at /openapi.json."
  ].join("\n")
}

export const version = (version: string): string => `tenet-server ${version} (API ${Api.API_VERSION})`

export const unknown = (argument: string): string =>
  `tenet-server: unknown argument '${argument}'; settings are environment variables (tenet-server --help)`
