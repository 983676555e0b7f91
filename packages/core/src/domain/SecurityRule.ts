/** Per-VPC security rules (the spec's section 2 table and section 4 rules). */
import { Either, Schema, Struct } from "effect"
import { intBetween, nullable, oncePerRecord, stringBetween, Timestamp, TRUSTED, wireExample } from "./Common.js"
import * as Etag from "./Etag.js"
import { AddressSetId, GuardrailId, PodId, SecurityRuleId, SubnetId, TenantId, VpcId } from "./Ids.js"
import { DnsLabel, Ipv4Address, Ipv4Network, Ipv4NetworkNormalized } from "./Net.js"
import { PageParams } from "./Page.js"
import * as PortRanges from "./PortRanges.js"

export const MAX_RULES_PER_VPC = 200
export const MAX_TARGET_PODS = 64

export const Direction = Schema.Literal("ingress", "egress").annotations({ identifier: "Direction" })
export type Direction = typeof Direction.Type

export const RuleAction = Schema.Literal("allow", "deny").annotations({ identifier: "RuleAction" })
export type RuleAction = typeof RuleAction.Type

export const RuleProtocol = Schema.Literal("tcp", "udp", "icmp", "all").annotations({ identifier: "RuleProtocol" })
export type RuleProtocol = typeof RuleProtocol.Type

/** The protocol of a flow: a concrete one (a rule's `all` covers each of them). */
export const FlowProtocol = Schema.Literal("tcp", "udp", "icmp").annotations({ identifier: "FlowProtocol" })
export type FlowProtocol = typeof FlowProtocol.Type

export const RemoteType = Schema.Literal("cidr", "vpc", "address_set").annotations({
  identifier: "RemoteType",
  description:
    "cidr: remote_cidr; vpc: every subnet of remote_vpc_id; address_set: every entry of remote_address_set_id"
})
export type RemoteType = typeof RemoteType.Type

export const TargetType = Schema.Literal("vpc", "subnet", "pods").annotations({ identifier: "TargetType" })
export type TargetType = typeof TargetType.Type

export const RuleName = stringBetween(1, 128)
export const RuleDescription = stringBetween(0, 1024)
export const RulePriority = intBetween(1, 2000).annotations({ description: "1-2000; lowest evaluated first" })

/** `"80"`, `"8000-8080"` or a comma list of those (at most 32 entries); only with tcp or udp. */
export const PortsExpression = Schema.String.pipe(
  Schema.filter((s) => Either.match(PortRanges.parse(s), { onLeft: (message) => message, onRight: () => true })),
  Schema.annotations({
    identifier: "PortsExpression",
    examples: ["80,443,8000-8100"],
    arbitrary: () => (fc) =>
      fc.array(
        fc.tuple(fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 0, max: 100 })).map(([from, span]) =>
          span === 0 || from + span > 65535 ? String(from) : `${from}-${from + span}`
        ),
        { minLength: 1, maxLength: 32 }
      ).map((entries) => entries.join(","))
  })
)

export const TargetPodIds = Schema.Array(PodId).pipe(
  Schema.filter((ids) => ids.length <= MAX_TARGET_PODS || `at most ${MAX_TARGET_PODS} pods`)
)

/** A rule as the wire writes it, for the documents' examples. */
const HTTPS_EXAMPLE = {
  name: "Allow HTTPS",
  direction: "ingress",
  action: "allow",
  priority: 100,
  protocol: "tcp",
  ports: "443",
  remote_type: "cidr",
  remote_cidr: "0.0.0.0/0",
  target_type: "vpc",
  description: null,
  remote_vpc_id: null,
  remote_address_set_id: null,
  target_subnet_id: null,
  target_pod_ids: null,
  enabled: true
}

export const SecurityRuleCreate = Schema.Struct({
  vpc_id: VpcId,
  name: RuleName,
  description: nullable(RuleDescription),
  direction: Direction,
  action: RuleAction,
  priority: RulePriority,
  protocol: Schema.optionalWith(RuleProtocol, { default: () => "all" as const }),
  ports: nullable(PortsExpression),
  remote_type: RemoteType,
  remote_cidr: nullable(Ipv4NetworkNormalized),
  remote_vpc_id: nullable(VpcId),
  remote_address_set_id: nullable(AddressSetId),
  target_type: Schema.optionalWith(TargetType, { default: () => "vpc" as const }),
  target_subnet_id: nullable(SubnetId),
  target_pod_ids: nullable(TargetPodIds),
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true })
}).annotations({
  identifier: "SecurityRuleCreate",
  examples: wireExample({ vpc_id: "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a", ...HTTPS_EXAMPLE })
})
export type SecurityRuleCreate = typeof SecurityRuleCreate.Type

/**
 * One rule of a VPC's declared policy (`PUT /vpcs/{vpc_id}/security-rules`): the create's
 * fields without `vpc_id`, and optionally the `id` of the existing rule it is (otherwise it is
 * the existing rule of the same name, or a new one) and the `etag` it was read at (a rule's view
 * sent back as it was read: that item's `If-Match`). An address set may be named by its name
 * (`remote_address_set_name`), as rules files do, in place of its id.
 */
export const RuleDeclaration = Schema.Struct({
  id: Schema.optional(SecurityRuleId),
  etag: Schema.optional(Schema.String).annotations({
    description: "The rule's etag as read: 412 when the rule this item is changed since, or is gone"
  }),
  ...Struct.omit(SecurityRuleCreate.fields, "vpc_id"),
  remote_address_set_name: Schema.optional(DnsLabel).annotations({
    description: "With remote_type address_set: the tenant's set of this name, in place of remote_address_set_id"
  })
}).annotations({ identifier: "RuleDeclaration" })
export type RuleDeclaration = typeof RuleDeclaration.Type

/** The most items a declaration may list: the limit is on the end state, this only bounds the work. */
export const MAX_DECLARED_RULES = 1000

/** A VPC's whole policy: its rules become exactly these. */
export const RuleSetDeclaration = Schema.Struct({
  rules: Schema.Array(RuleDeclaration).pipe(
    Schema.filter((rules) => rules.length <= MAX_DECLARED_RULES || `at most ${MAX_DECLARED_RULES} items`)
  )
}).annotations({
  identifier: "RuleSetDeclaration",
  examples: wireExample({ rules: [HTTPS_EXAMPLE] })
})
export type RuleSetDeclaration = typeof RuleSetDeclaration.Type

/** `If-Match`: the rules' `ETag` the change was reviewed against (or `*`). */
export const IfMatchHeaders = Schema.Struct({
  "if-match": Schema.optional(Etag.IfMatch).annotations({
    description: "The ETag of GET /security-rules?vpc_id= the change was made against: 412 when the rules changed since"
  })
})

/** A change to one rule, made only while the rule is at the version its ETag names. */
export const RuleIfMatchHeaders = Schema.Struct({
  "if-match": Schema.optional(Etag.IfMatch).annotations({
    description:
      "The ETag of GET /security-rules/{rule_id} the change was made against: 412 when the rule changed since"
  })
})

/** Any subset of the create fields except `vpc_id`; only the fields present change. */
export const SecurityRulePatch = Schema.Struct({
  name: Schema.optional(RuleName),
  description: Schema.optional(Schema.NullOr(RuleDescription)),
  direction: Schema.optional(Direction),
  action: Schema.optional(RuleAction),
  priority: Schema.optional(RulePriority),
  protocol: Schema.optional(RuleProtocol),
  ports: Schema.optional(Schema.NullOr(PortsExpression)),
  remote_type: Schema.optional(RemoteType),
  remote_cidr: Schema.optional(Schema.NullOr(Ipv4NetworkNormalized)),
  remote_vpc_id: Schema.optional(Schema.NullOr(VpcId)),
  remote_address_set_id: Schema.optional(Schema.NullOr(AddressSetId)),
  target_type: Schema.optional(TargetType),
  target_subnet_id: Schema.optional(Schema.NullOr(SubnetId)),
  target_pod_ids: Schema.optional(Schema.NullOr(TargetPodIds)),
  enabled: Schema.optional(Schema.Boolean)
}).annotations({
  identifier: "SecurityRulePatch",
  // Like every body (contract/Payloads), it refuses unknown fields: vpc_id among them (it cannot change).
  examples: wireExample({ priority: 50, enabled: false })
})
export type SecurityRulePatch = typeof SecurityRulePatch.Type

export const RuleStatus = Schema.Literal(
  "active",
  "disabled",
  "remote_vpc_missing",
  "target_missing",
  "remote_vpc_overlaps",
  "remote_vpc_unreachable"
).annotations({
  identifier: "RuleStatus",
  description: "active: enforced; disabled: kept, not enforced; remote_vpc_missing / target_missing: " +
    "what it references was deleted, so enforcement skips it; remote_vpc_overlaps: its remote VPC has a " +
    "block overlapping one of this VPC's, so no route joins them, it can never match and enforcement skips it; " +
    "remote_vpc_unreachable: no route joins its remote VPC to this one (no enabled allow rule of either " +
    "names the other), so no packet of that VPC's arrives to match it; it is enforced as written"
})
export type RuleStatus = typeof RuleStatus.Type

/** What the store keeps: the rule as last saved, plus its owner and creation order. */
export const SecurityRuleRecord = Schema.Struct({
  id: SecurityRuleId,
  vpc_id: VpcId,
  tenant_id: TenantId,
  /** Creation order within the VPC: the tie-break after priority and action. */
  seq: Schema.Int,
  name: RuleName,
  description: Schema.NullOr(RuleDescription),
  direction: Direction,
  action: RuleAction,
  priority: RulePriority,
  protocol: RuleProtocol,
  ports: Schema.NullOr(PortsExpression),
  remote_type: RemoteType,
  remote_cidr: Schema.NullOr(Ipv4Network),
  remote_vpc_id: Schema.NullOr(VpcId),
  remote_address_set_id: Schema.NullOr(AddressSetId),
  target_type: TargetType,
  target_subnet_id: Schema.NullOr(SubnetId),
  target_pod_ids: Schema.NullOr(TargetPodIds),
  enabled: Schema.Boolean,
  created_at: Timestamp,
  updated_at: Timestamp
})
export interface SecurityRuleRecord extends Schema.Schema.Type<typeof SecurityRuleRecord> {}

/** The rule as a user sees it: the record without its owner and creation order, with its status. */
export class SecurityRule extends Schema.Class<SecurityRule>("SecurityRule")({
  ...Struct.omit(SecurityRuleRecord.fields, "tenant_id", "seq"),
  status: RuleStatus,
  etag: Etag.Field
}) {}

/** A rule's version: what `If-Match` on a change to it names, and its view's `etag`. */
export const etagOf = oncePerRecord((record: SecurityRuleRecord): string => Etag.of(record))

/** A rule's views, one per status it has been shown with: the status follows its VPC's context. */
const views = oncePerRecord((_: SecurityRuleRecord) => new Map<RuleStatus, SecurityRule>())

/** The rule as a user sees it, with `status` (built once per record and status). */
export const viewOf = (record: SecurityRuleRecord, status: RuleStatus): SecurityRule => {
  const byStatus = views(record)
  let view = byStatus.get(status)
  if (view === undefined) {
    const { seq: _seq, tenant_id: _tenant, ...fields } = record
    view = SecurityRule.make({ ...fields, status, etag: etagOf(record) }, TRUSTED)
    byStatus.set(status, view)
  }
  return view
}

export const ImpliedRuleKey = Schema.Literal(
  "implied-allow-infrastructure",
  "implied-allow-egress",
  "implied-deny-ingress"
).annotations({ identifier: "ImpliedRuleKey" })
export type ImpliedRuleKey = typeof ImpliedRuleKey.Type

export class ImpliedRule extends Schema.Class<ImpliedRule>("ImpliedRule")({
  key: ImpliedRuleKey,
  direction: Direction,
  action: RuleAction
}) {}

/** The spec's implied rules, fixed and not editable. */
export const IMPLIED_RULES: ReadonlyArray<ImpliedRule> = [
  ImpliedRule.make({ key: "implied-allow-infrastructure", direction: "ingress", action: "allow" }),
  ImpliedRule.make({ key: "implied-allow-egress", direction: "egress", action: "allow" }),
  ImpliedRule.make({ key: "implied-deny-ingress", direction: "ingress", action: "deny" })
]

/**
 * Whether a write is in force in the cluster (`applied`), or why not yet (`apply_error`; it is
 * saved all the same, and the platform retries): the answer of every write that converges VPCs,
 * as the spec has a rule's.
 */
export const InForce = {
  applied: Schema.Boolean,
  apply_error: Schema.NullOr(Schema.String)
}

/** A rule created or changed, as it now stands, and whether its VPC is in force with it. */
export class RuleMutation extends Schema.Class<RuleMutation>("RuleMutation")({
  rule: SecurityRule,
  ...InForce
}) {}

/** A rule deleted: `rule` is null (the spec's answer), and whether its VPC is in force without it. */
export class RuleRemoval extends Schema.Class<RuleRemoval>("RuleRemoval")({
  rule: Schema.Null,
  ...InForce
}) {}

export class RuleList extends Schema.Class<RuleList>("RuleList")({
  vpc_id: VpcId,
  rules: Schema.Array(SecurityRule),
  implied: Schema.Array(ImpliedRule),
  ...InForce
}) {}

export const RuleListQuery = Schema.Struct({ vpc_id: VpcId })

/** A VPC's rules, a page at a time (`Page`): the page is in `rules`, in creation order. */
export const RulePageQuery = Schema.Struct({ vpc_id: VpcId, ...PageParams })

export const ReorderRequest = Schema.Struct({
  vpc_id: VpcId,
  rule_ids: Schema.Array(SecurityRuleId).annotations({
    description: "Every rule of the VPC exactly once, in the new evaluation order"
  })
}).annotations({
  identifier: "ReorderRequest",
  examples: wireExample({
    vpc_id: "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a",
    rule_ids: ["5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e", "9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c6b"]
  })
})

/** A flow to judge: "would this traffic be allowed, and by which rule?" */
export const FlowQuery = Schema.Struct({
  vpc_id: VpcId,
  direction: Direction,
  protocol: FlowProtocol,
  port: Schema.optional(intBetween(1, 65535)),
  remote_ip: Schema.optional(Ipv4Address),
  remote_vpc_id: Schema.optional(VpcId),
  target_subnet_id: Schema.optional(SubnetId),
  target_pod_id: Schema.optional(PodId)
}).annotations({
  identifier: "FlowQuery",
  examples: wireExample({
    vpc_id: "7d3e9b2a-1c4f-4e6a-8b5d-0f1e2d3c4b5a",
    direction: "ingress",
    protocol: "tcp",
    port: 443,
    remote_ip: "198.51.100.7"
  })
})

export const DecidedBy = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("rule"), rule_id: SecurityRuleId, name: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("implied"), key: ImpliedRuleKey })
).annotations({ identifier: "DecidedBy" })

export const FindingKind = Schema.Literal("shadowed", "redundant", "conflict").annotations({
  identifier: "FindingKind"
})

export class RuleFinding extends Schema.Class<RuleFinding>("RuleFinding")({
  kind: FindingKind,
  rule_id: SecurityRuleId,
  related_rule_ids: Schema.Array(SecurityRuleId),
  message: Schema.String
}) {}

export class RuleAnalysis extends Schema.Class<RuleAnalysis>("RuleAnalysis")({
  vpc_id: VpcId,
  findings: Schema.Array(RuleFinding)
}) {}

/**
 * `?dry_run=true` on a change: validate it, change nothing, answer its impact. No identifier:
 * a query schema with one is a reference in the OpenAPI document, which lists no parameters for it.
 */
export const DryRunQuery = Schema.Struct({
  dry_run: Schema.optional(Schema.BooleanFromString).annotations({
    description: "true: validate exactly as the real call, change nothing, and answer the change's impact"
  })
})

/** What a verdict is given by, and the action it gives. */
export const Decision = Schema.Struct({ action: RuleAction, decided_by: DecidedBy }).annotations({
  identifier: "Decision"
})

export const PathReason = Schema.Literal("no_route", "no_internet", "not_published").annotations({
  identifier: "PathReason",
  description: "no_route: the two VPCs are not peered (or overlap); no_internet: the VPC has no route to the " +
    "internet (enable_internet false, or no provider configuration); not_published: nothing is published to " +
    "the internet on that protocol and port"
})

/** What stops a flow on its path, before any rule judges it. */
export const PathBlock = Schema.Struct({
  reason: PathReason,
  detail: Schema.String
}).annotations({ identifier: "PathBlock" })
export type PathBlock = typeof PathBlock.Type

/**
 * A set of flows whose verdict a change flips: every combination of its protocol, ports,
 * remote addresses and local endpoints, decided as `before` says now and as `after` says after.
 */
export class ImpactRegion extends Schema.Class<ImpactRegion>("ImpactRegion")({
  direction: Direction,
  protocol: FlowProtocol,
  /** Destination ports, e.g. `80`, `8000-8080`; null for icmp. */
  ports: Schema.NullOr(Schema.String),
  /** The remote addresses, as the fewest blocks that hold exactly them. */
  remote_cidrs: Schema.Array(Schema.String),
  /** The same addresses as people read them: the blocks, or a block minus its exceptions when shorter. */
  remote_summary: Schema.String,
  /** The local endpoints: these pods, the other endpoints of these subnets, and (when true) addresses in no subnet. */
  local: Schema.Struct({
    pod_ids: Schema.Array(PodId),
    subnet_ids: Schema.Array(SubnetId),
    outside_subnets: Schema.Boolean
  }),
  before: Decision,
  after: Decision,
  /**
   * What stops the region's flows on their path before the change and after it (null: a path
   * carries them): an opened region that no route carries after the change opens nothing a
   * packet can use yet, a closed one that none carried before closed nothing in use.
   */
  route: Schema.Struct({ before: Schema.NullOr(PathBlock), after: Schema.NullOr(PathBlock) })
}) {}

/** The local end of a witness flow: a pod, another endpoint of a subnet, or an address in no subnet (both null). */
export const FlowLocal = Schema.Struct({
  pod_id: Schema.NullOr(PodId),
  subnet_id: Schema.NullOr(SubnetId)
}).annotations({ identifier: "FlowLocal" })

/** A concrete flow, the evidence of a violation. */
export const WitnessFlow = Schema.Struct({
  direction: Direction,
  protocol: FlowProtocol,
  port: Schema.NullOr(Schema.Int),
  remote_ip: Schema.String,
  local: FlowLocal
}).annotations({ identifier: "WitnessFlow" })

/** A guardrail a change breaks: a flow of its region that would get the other verdict, and what decides it. */
export class GuardrailViolation extends Schema.Class<GuardrailViolation>("GuardrailViolation")({
  guardrail_id: GuardrailId,
  name: Schema.String,
  vpc_id: VpcId,
  flow: WitnessFlow,
  decided_by: DecidedBy,
  /** What stops the witness on its path today (null: a path carries it). A guardrail holds whatever is routed. */
  route: Schema.NullOr(PathBlock)
}) {}

/** A dry run's answer: the traffic the change opens and closes, and the findings it brings. */
export class RuleImpact extends Schema.Class<RuleImpact>("RuleImpact")({
  dry_run: Schema.Literal(true),
  vpc_id: VpcId,
  /** Flows denied now that the change allows. */
  opened: Schema.Array(ImpactRegion),
  /** Flows allowed now that the change denies. */
  closed: Schema.Array(ImpactRegion),
  /** Shadowed, redundant and conflicting rules after the change that are not so now. */
  new_findings: Schema.Array(RuleFinding),
  /** The guardrails the change would break: the real call is refused with these (409). */
  violations: Schema.Array(GuardrailViolation)
}, {
  examples: wireExample({
    dry_run: true,
    vpc_id: "3f9a1c52-7d4e-4b8a-9c21-5e6f7a8b9c0d",
    opened: [{
      direction: "ingress",
      protocol: "tcp",
      ports: "443",
      remote_cidrs: ["10.20.0.0/16"],
      remote_summary: "10.20.0.0/16",
      local: { pod_ids: [], subnet_ids: ["8b2d4f61-0a3c-4e5b-8d7f-1a2b3c4d5e6f"], outside_subnets: false },
      before: { action: "deny", decided_by: { kind: "implied", key: "implied-deny-ingress" } },
      after: {
        action: "allow",
        decided_by: { kind: "rule", rule_id: "c4e8a2b6-1d3f-4a5c-9e7b-0f1a2b3c4d5e", name: "https from web" }
      },
      route: { before: null, after: null }
    }],
    closed: [],
    new_findings: [],
    violations: []
  })
}) {}

/** What a declaration changes: rules made, changed in place (same ids), deleted, left as they were. */
const replacementFields = {
  vpc_id: VpcId,
  created: Schema.Array(SecurityRule),
  updated: Schema.Array(SecurityRule),
  deleted: Schema.Array(SecurityRuleId),
  unchanged: Schema.Array(SecurityRule),
  /** The VPC's rules after the change, in evaluation order. */
  rules: Schema.Array(SecurityRule),
  /** Applied: the rules' ETag after the change. A plan: the ETag of the rules it was made against. */
  etag: Schema.String
}

/** A declaration applied: what it changed, and whether the VPC is in force. */
export class RulesReplaced extends Schema.Class<RulesReplaced>("RulesReplaced")({
  dry_run: Schema.Literal(false),
  ...replacementFields,
  ...InForce
}) {}

/**
 * A declaration's plan (`dry_run=true`): what it would change (created rules carry ids they
 * will not keep) and the traffic it would open and close. Nothing changed.
 */
export class RulesPlan extends Schema.Class<RulesPlan>("RulesPlan")({
  dry_run: Schema.Literal(true),
  ...replacementFields,
  impact: RuleImpact
}) {}
