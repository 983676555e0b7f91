/**
 * @tenet/core: the domain, the security-rule engine, the ports adapters implement, the
 * use-cases, and the HTTP API contract.
 */
export * as Errors from "./Errors.js"

export * as Admin from "./domain/Admin.js"
export * as Domain from "./domain/Domain.js"
export * as Ids from "./domain/Ids.js"
export * as LoginThrottle from "./domain/LoginThrottle.js"
export * as Net from "./domain/Net.js"
export * as OperationLog from "./domain/OperationLog.js"
export * as Pod from "./domain/Pod.js"
export * as ProviderConfig from "./domain/ProviderConfig.js"
export * as RegistryCredential from "./domain/RegistryCredential.js"
export * as SecurityRule from "./domain/SecurityRule.js"
export * as ServiceTunnel from "./domain/ServiceTunnel.js"
export * as Subnet from "./domain/Subnet.js"
export * as Tenant from "./domain/Tenant.js"
export * as Topology from "./domain/Topology.js"
export * as Tunnel from "./domain/Tunnel.js"
export * as Vpc from "./domain/Vpc.js"

export * as Plan from "./rules/Plan.js"
export * as Ports from "./rules/Ports.js"

export * as EdgeTunnels from "./ports/EdgeTunnels.js"
export * as OperationsLog from "./ports/OperationsLog.js"
export * as Orchestrator from "./ports/Orchestrator.js"
export * as Store from "./ports/Store.js"
export * as Vault from "./ports/Vault.js"

export * as Domains from "./platform/Domains.js"
export * as Identity from "./platform/Identity.js"
export * as Principal from "./platform/Principal.js"
export * as ProviderConfigs from "./platform/ProviderConfigs.js"
export * as ServerInfo from "./platform/ServerInfo.js"
export * as ServiceTunnels from "./platform/ServiceTunnels.js"
export * as Tenants from "./platform/Tenants.js"

export * as AdminApi from "./api/AdminApi.js"
export * as Api from "./api/Api.js"
export * as IdentityApi from "./api/IdentityApi.js"
export * as NetworkApi from "./api/NetworkApi.js"
export * as Security from "./api/Security.js"
export * as SystemApi from "./api/SystemApi.js"
export * as WorkloadApi from "./api/WorkloadApi.js"
