/** Every group of the contract, handled. */
import { Layer } from "effect"
import { AddressSetsHandlers } from "./AddressSetHandlers.js"
import {
  AuditLogHandlers,
  DomainsHandlers,
  OperationsLogHandlers,
  ProviderConfigHandlers,
  QuotasHandlers,
  ServiceTunnelsHandlers,
  TenantsHandlers
} from "./AdminHandlers.js"
import { GuardrailsHandlers, TenantGuardrailsHandlers } from "./GuardrailHandlers.js"
import { AdminIdentityHandlers, TenantIdentityHandlers } from "./IdentityHandlers.js"
import { SecurityRulesHandlers, SubnetsHandlers, VpcsHandlers } from "./NetworkHandlers.js"
import { SystemHandlers } from "./SystemHandlers.js"
import { WatchHandlers } from "./WatchHandlers.js"
import { PodsHandlers, RegistryCredentialsHandlers, TopologyHandlers, TunnelsHandlers } from "./WorkloadHandlers.js"

export const HandlersLive = Layer.mergeAll(
  SystemHandlers,
  AdminIdentityHandlers,
  TenantIdentityHandlers,
  TenantsHandlers,
  QuotasHandlers,
  DomainsHandlers,
  ProviderConfigHandlers,
  ServiceTunnelsHandlers,
  OperationsLogHandlers,
  AuditLogHandlers,
  VpcsHandlers,
  SubnetsHandlers,
  SecurityRulesHandlers,
  PodsHandlers,
  TunnelsHandlers,
  RegistryCredentialsHandlers,
  TopologyHandlers,
  GuardrailsHandlers,
  TenantGuardrailsHandlers,
  AddressSetsHandlers,
  WatchHandlers
)
