/**
 * Per-tenant quotas, as AWS and GCP bound each account: how many VPCs, subnets and pods a
 * tenant may have, and how many change streams it may hold open on one replica. Each has the
 * server's default (`TENET_QUOTA_*`), which the administrator may set otherwise for a tenant
 * (`PUT /tenants/{id}/quotas`). A create that would pass a quota is refused (409) naming it,
 * decided on the tenant's scope so that concurrent creates cannot pass it together; a quota set
 * below what a tenant has takes nothing away, it only refuses the next create. Pure.
 */
import { Context, Schema } from "effect"
import { intBetween, nullable, wireExample } from "./Common.js"
import { TenantId } from "./Ids.js"

export const KINDS = ["vpcs", "subnets", "pods", "watchers"] as const
export type Kind = typeof KINDS[number]

/** What a tenant may have of each, or hold at once. */
export type Limits = Readonly<Record<Kind, number>>

/** The largest quota an administrator may set. */
export const MAX_QUOTA = 1_000_000

/** What a tenant may have unless its server or administrator says otherwise. */
export const DEFAULTS: Limits = { vpcs: 100, subnets: 1000, pods: 2000, watchers: 20 }

/** The server's defaults (`DEFAULTS` unless the server is configured otherwise). */
export class Defaults extends Context.Reference<Defaults>()("@tenet/core/Quota/Defaults", {
  defaultValue: (): Limits => DEFAULTS
}) {}

const Override = nullable(intBetween(0, MAX_QUOTA))

/** A tenant's own quotas: null for the server's default. What the administrator sets, and the store keeps. */
export const QuotaOverrides = Schema.Struct({
  vpcs: Override,
  subnets: Override,
  pods: Override,
  watchers: Override
}).annotations({
  identifier: "QuotaOverrides",
  examples: wireExample({ vpcs: 10, subnets: null, pods: 500, watchers: null })
})
export type QuotaOverrides = typeof QuotaOverrides.Type

/** No quota of the tenant's own: the server's defaults, each. */
export const NONE: QuotaOverrides = { vpcs: null, subnets: null, pods: null, watchers: null }

/** The limits that hold for a tenant: its own, else the server's. */
export const limitsOf = (overrides: QuotaOverrides, defaults: Limits): Limits => ({
  vpcs: overrides.vpcs ?? defaults.vpcs,
  subnets: overrides.subnets ?? defaults.subnets,
  pods: overrides.pods ?? defaults.pods,
  watchers: overrides.watchers ?? defaults.watchers
})

export const QuotaUsage = Schema.Struct({
  limit: Schema.Int,
  /** How many the tenant has (of `watchers`: open on the replica that answered). */
  used: Schema.Int,
  /** Whether the limit is the server's default, not one set for the tenant. */
  default: Schema.Boolean
}).annotations({ identifier: "QuotaUsage" })

/** `GET /tenants/{id}/quotas`: each quota, what holds and what is used of it. */
export class TenantQuotas extends Schema.Class<TenantQuotas>("TenantQuotas")({
  tenant_id: TenantId,
  vpcs: QuotaUsage,
  subnets: QuotaUsage,
  pods: QuotaUsage,
  watchers: QuotaUsage
}) {}

/** How many the tenant has of what creates count (streams are counted as they open). */
export type Counts = Readonly<Record<Exclude<Kind, "watchers">, number>>

const NOUNS: Record<Kind, string> = { vpcs: "VPCs", subnets: "subnets", pods: "pods", watchers: "change streams" }

/**
 * The quota a change from `before` to `after` passes, in words, if any: a count above its
 * limit that the change raised (a count already above a lowered limit is not this change's).
 */
export const passed = (limits: Limits, before: Counts, after: Counts): string | undefined => {
  for (const kind of ["vpcs", "subnets", "pods"] as const) {
    if (after[kind] > limits[kind] && after[kind] > before[kind]) {
      return `the tenant's quota of ${limits[kind]} ${NOUNS[kind]} would be passed (${after[kind]}); ` +
        "an administrator may raise it (PUT /tenants/{tenant_id}/quotas)"
    }
  }
  return undefined
}

/** The refusal of one more change stream than the quota. */
export const streamsPassed = (limit: number) =>
  `the tenant already holds ${limit} change streams open on this server, its quota of ${NOUNS.watchers}; ` +
  "close one, or ask an administrator to raise it (PUT /tenants/{tenant_id}/quotas)"
