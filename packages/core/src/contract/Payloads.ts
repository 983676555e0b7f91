/**
 * Every request body of the API, by `group.endpoint`. The groups declare their bodies from
 * here, and the client reads here what a caller writes (each schema's encoded side) and
 * checks a body with the schema the server decodes it with: a body is declared once.
 *
 * Every body is strict: a field no schema names is refused, at any depth, never dropped (a
 * misspelt `port` for `ports` would otherwise save a rule open on every port), and every
 * problem of a body is reported at once, not only the first. Before any of that, a body is
 * checked for what no endpoint takes (`JsonBody`): too deep, unstorable text, `__proto__`.
 */
import type { Schema } from "effect"
import { AddressSetCreate, AddressSetPatch } from "../domain/AddressSet.js"
import { AdminLogin } from "../domain/Admin.js"
import { DomainCreate } from "../domain/Domain.js"
import { GuardrailCreate } from "../domain/Guardrail.js"
import { PodConfigPatch, PodCreate } from "../domain/Pod.js"
import { ProviderConfigInput } from "../domain/ProviderConfig.js"
import { QuotaOverrides } from "../domain/Quota.js"
import { RegistryCredentialCreate } from "../domain/RegistryCredential.js"
import {
  FlowQuery,
  ReorderRequest,
  RuleSetDeclaration,
  SecurityRuleCreate,
  SecurityRulePatch
} from "../domain/SecurityRule.js"
import { ServiceTunnelCreate } from "../domain/ServiceTunnel.js"
import { SubnetCreate } from "../domain/Subnet.js"
import { TenantCreate, TenantLogin } from "../domain/Tenant.js"
import { TopologyRequest } from "../domain/Topology.js"
import { TunnelAutoCreate, TunnelCreate } from "../domain/Tunnel.js"
import { VpcCreate } from "../domain/Vpc.js"
import { guarded } from "./JsonBody.js"

/** `schema` as every body is read: guarded (`JsonBody`), an unknown field refused, every problem reported. */
export const strict = <A, I>(schema: Schema.Schema<A, I> & Schema.Annotable.All): Schema.Schema<A, I> =>
  guarded(schema.annotations({ parseOptions: { onExcessProperty: "error", errors: "all" } }))

export const Payloads = {
  "adminIdentity.login": strict(AdminLogin),
  "tenantIdentity.login": strict(TenantLogin),
  "tenants.create": strict(TenantCreate),
  "quotas.set": strict(QuotaOverrides),
  "domains.assign": strict(DomainCreate),
  "providerConfig.put": strict(ProviderConfigInput),
  "serviceTunnels.create": strict(ServiceTunnelCreate),
  "vpcs.create": strict(VpcCreate),
  "subnets.create": strict(SubnetCreate),
  "securityRules.create": strict(SecurityRuleCreate),
  "securityRules.update": strict(SecurityRulePatch),
  "securityRules.reorder": strict(ReorderRequest),
  "securityRules.replace": strict(RuleSetDeclaration),
  "securityRules.evaluate": strict(FlowQuery),
  "pods.create": strict(PodCreate),
  "pods.configure": strict(PodConfigPatch),
  "tunnels.createForPod": strict(TunnelCreate),
  "tunnels.create": strict(TunnelAutoCreate),
  "registryCredentials.create": strict(RegistryCredentialCreate),
  "topology.deploy": strict(TopologyRequest),
  "guardrails.create": strict(GuardrailCreate),
  "tenantGuardrails.create": strict(GuardrailCreate),
  "addressSets.create": strict(AddressSetCreate),
  "addressSets.update": strict(AddressSetPatch)
} as const

export type Payloads = typeof Payloads

/** An endpoint that takes a body, as `group.endpoint`. */
export type PayloadKey = keyof Payloads
