/** The server's configuration, from `TENET_*` environment variables. */
import { Fairness, Net, Quota, Session } from "@tenet/core"
import { Config, Duration, LogLevel, Option } from "effect"

export const StoreKind = Config.literal("embedded", "postgres", "memory")("TENET_STORE").pipe(
  Config.withDefault("embedded" as const)
)

export const OrchestratorKind = Config.literal("simulated", "kubernetes")("TENET_ORCHESTRATOR").pipe(
  Config.withDefault("simulated" as const)
)

export const TunnelsKind = Config.literal("simulated", "edge")("TENET_TUNNELS").pipe(
  Config.withDefault("simulated" as const)
)

/** A positive integer setting. */
const positive = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )

/** A quota's default: a whole number a tenant may have, none to `Quota.MAX_QUOTA`. */
const count = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({
      message: `must be an integer from 0 to ${Quota.MAX_QUOTA}`,
      validation: (n) => n >= 0 && n <= Quota.MAX_QUOTA
    }),
    Config.withDefault(fallback)
  )

export const ServerConfig = Config.all({
  host: Config.string("TENET_HOST").pipe(Config.withDefault("127.0.0.1")),
  port: Config.port("TENET_PORT").pipe(Config.withDefault(8080)),
  metricsPort: Config.option(Config.port("TENET_METRICS_PORT")),
  metricsHost: Config.option(Config.string("TENET_METRICS_HOST")),
  publicUrl: Config.option(Config.string("TENET_PUBLIC_URL")),
  adminUsername: Config.nonEmptyString("TENET_ADMIN_USERNAME").pipe(Config.withDefault("admin")),
  adminPassword: Config.option(Config.redacted("TENET_ADMIN_PASSWORD")),
  store: StoreKind,
  orchestrator: OrchestratorKind,
  tunnels: TunnelsKind,
  kubeOvnExternalSubnet: Config.nonEmptyString("TENET_KUBE_OVN_EXTERNAL_SUBNET").pipe(
    Config.withDefault("ovn-vpc-external-network")
  ),
  kubeOvnPeeringSubnet: Config.nonEmptyString("TENET_KUBE_OVN_PEERING_SUBNET").pipe(
    Config.withDefault("tenet-peering")
  ),
  namespace: Config.nonEmptyString("TENET_NAMESPACE").pipe(Config.withDefault("tenet-system")),
  edgeApiUrl: Config.nonEmptyString("TENET_EDGE_API_URL").pipe(
    Config.withDefault("https://api.cloudflare.com/client/v4")
  ),
  databaseUrl: Config.option(Config.redacted("TENET_DATABASE_URL")),
  dataDir: Config.string("TENET_DATA_DIR").pipe(Config.withDefault("./.tenet")),
  serviceCidr: Config.string("TENET_SERVICE_CIDR").pipe(
    Config.validate({
      message: "must be an IPv4 CIDR block with host bits clear, e.g. 10.96.0.0/12",
      validation: (s) => Option.match(Net.parseCidr(s), { onNone: () => false, onSome: (c) => !Net.hasHostBits(c) })
    }),
    Config.withDefault("10.96.0.0/12")
  ),
  encryptionKey: Config.option(Config.redacted("TENET_ENCRYPTION_KEY")),
  reconcileInterval: Config.duration("TENET_RECONCILE_INTERVAL").pipe(Config.withDefault(Duration.minutes(2))),
  applyWait: Config.duration("TENET_APPLY_WAIT").pipe(Config.withDefault(Duration.seconds(2))),
  controller: Config.all({
    resync: Config.duration("TENET_CONTROLLER_RESYNC").pipe(Config.withDefault(Duration.minutes(10))),
    deleteOrphans: Config.boolean("TENET_CONTROLLER_DELETE_ORPHANS").pipe(Config.withDefault(true))
  }),
  watch: Config.all({
    retention: Config.duration("TENET_WATCH_RETENTION").pipe(Config.withDefault(Duration.hours(1)))
  }),
  quotas: Config.all({
    vpcs: count("TENET_QUOTA_VPCS", Quota.DEFAULTS.vpcs),
    subnets: count("TENET_QUOTA_SUBNETS", Quota.DEFAULTS.subnets),
    pods: count("TENET_QUOTA_PODS", Quota.DEFAULTS.pods),
    watchers: count("TENET_QUOTA_WATCHERS", Quota.DEFAULTS.watchers)
  }),
  sessionTtl: Config.duration("TENET_SESSION_TTL").pipe(Config.withDefault(Session.DEFAULT_TTL)),
  fairness: Config.all({
    seats: positive("TENET_EXPENSIVE_SEATS", Fairness.DEFAULTS.seats),
    queue: positive("TENET_EXPENSIVE_QUEUE", Fairness.DEFAULTS.queue)
  }),
  logLevel: Config.logLevel("TENET_LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info)),
  requestTimeout: Config.duration("TENET_REQUEST_TIMEOUT").pipe(Config.withDefault(Duration.seconds(30))),
  shutdownGrace: Config.duration("TENET_SHUTDOWN_GRACE").pipe(Config.withDefault(Duration.seconds(10))),
  maxBodyBytes: Config.integer("TENET_MAX_BODY_BYTES").pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(1024 * 1024)
  )
})

export type ServerConfig = Config.Config.Success<typeof ServerConfig>

/**
 * OpenTelemetry's standard variables for exporting traces (`Tracing`): the OTLP/HTTP endpoint,
 * headers (e.g. an API key), the service name, the export interval, and the SDK's off switch.
 */
export const TracingConfig = Config.all({
  endpoint: Config.option(Config.nonEmptyString("OTEL_EXPORTER_OTLP_ENDPOINT")),
  tracesEndpoint: Config.option(Config.nonEmptyString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
  headers: Config.option(Config.redacted("OTEL_EXPORTER_OTLP_HEADERS")),
  serviceName: Config.nonEmptyString("OTEL_SERVICE_NAME").pipe(Config.withDefault("tenet")),
  scheduleDelay: Config.integer("OTEL_BSP_SCHEDULE_DELAY").pipe(
    Config.validate({ message: "must be a positive number of milliseconds", validation: (n) => n > 0 }),
    Config.withDefault(5000)
  ),
  disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false))
})

export type TracingConfig = Config.Config.Success<typeof TracingConfig>

/**
 * Where spans go, per the OTLP exporter specification: the traces endpoint as given, else the
 * base endpoint with `/v1/traces` appended. None when tracing is off.
 */
export const tracesUrl = (config: TracingConfig): Option.Option<string> => {
  if (config.disabled) return Option.none()
  if (Option.isSome(config.tracesEndpoint)) return config.tracesEndpoint
  return Option.map(config.endpoint, (base) => `${base.replace(/\/+$/, "")}/v1/traces`)
}
