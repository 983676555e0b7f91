/**
 * Every request body of the API, by `group.endpoint`. The groups declare their bodies from
 * here, and the client reads here what a caller writes (each schema's encoded side) and
 * checks a body with the schema the server decodes it with: a body is declared once.
 */
import { AdminLogin } from "../domain/Admin.js"
import { DomainCreate } from "../domain/Domain.js"
import { PodConfigPatch, PodCreate } from "../domain/Pod.js"
import { ProviderConfigInput } from "../domain/ProviderConfig.js"
import { RegistryCredentialCreate } from "../domain/RegistryCredential.js"
import { FlowQuery, ReorderRequest, SecurityRuleCreate, SecurityRulePatch } from "../domain/SecurityRule.js"
import { ServiceTunnelCreate } from "../domain/ServiceTunnel.js"
import { SubnetCreate } from "../domain/Subnet.js"
import { TenantCreate, TenantLogin } from "../domain/Tenant.js"
import { TopologyRequest } from "../domain/Topology.js"
import { TunnelAutoCreate, TunnelCreate } from "../domain/Tunnel.js"
import { VpcCreate } from "../domain/Vpc.js"

export const Payloads = {
  "adminIdentity.login": AdminLogin,
  "tenantIdentity.login": TenantLogin,
  "tenants.create": TenantCreate,
  "domains.assign": DomainCreate,
  "providerConfig.put": ProviderConfigInput,
  "serviceTunnels.create": ServiceTunnelCreate,
  "vpcs.create": VpcCreate,
  "subnets.create": SubnetCreate,
  "securityRules.create": SecurityRuleCreate,
  "securityRules.update": SecurityRulePatch,
  "securityRules.reorder": ReorderRequest,
  "securityRules.evaluate": FlowQuery,
  "pods.create": PodCreate,
  "pods.configure": PodConfigPatch,
  "tunnels.createForPod": TunnelCreate,
  "tunnels.create": TunnelAutoCreate,
  "registryCredentials.create": RegistryCredentialCreate,
  "topology.deploy": TopologyRequest
} as const

export type Payloads = typeof Payloads

/** An endpoint that takes a body, as `group.endpoint`. */
export type PayloadKey = keyof Payloads
