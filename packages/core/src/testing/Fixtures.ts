/** Valid domain records for contract suites, unique per call. */
import { DateTime } from "effect"
import type { AddressSetRecord } from "../domain/AddressSet.js"
import type { AdminRecord } from "../domain/Admin.js"
import type { DomainRecord } from "../domain/Domain.js"
import type { GuardrailRecord } from "../domain/Guardrail.js"
import {
  AddressSetId,
  DomainId,
  GuardrailId,
  PodId,
  randomUuid,
  SecurityRuleId,
  ServiceTunnelId,
  SubnetId,
  TenantId,
  TunnelId,
  VpcId
} from "../domain/Ids.js"
import type { DnsLabel, DomainName, Ipv4Address, Ipv4Network } from "../domain/Net.js"
import type { PodRecord } from "../domain/Pod.js"
import type { ProviderConfigRecord } from "../domain/ProviderConfig.js"
import * as Quota from "../domain/Quota.js"
import type { SecurityRuleRecord } from "../domain/SecurityRule.js"
import type { ServiceTunnelRecord, ServiceUrl } from "../domain/ServiceTunnel.js"
import type { SubnetRecord } from "../domain/Subnet.js"
import type { TenantRecord } from "../domain/Tenant.js"
import type { TunnelRecord } from "../domain/Tunnel.js"
import type { VpcRecord } from "../domain/Vpc.js"
import * as Kind from "../kinds/Kind.js"
import type { PodSpec, RegistrySecretSpec, SubnetSpec, VpcSpec } from "../ports/Orchestrator.js"
import type { TenantSnapshot } from "../ports/Store.js"
import type { SecurityPlan } from "../rules/Plan.js"

let counter = 0
const next = () => `${Date.now().toString(36)}${(counter++).toString(36)}`
/** Timestamps one millisecond apart, so "oldest first" is well defined. */
let clock = Date.UTC(2026, 0, 1)
const at = () => DateTime.unsafeMake(clock++) as DateTime.Utc

export const label = (prefix: string) => `${prefix}-${next()}` as DnsLabel

export const tenant = (overrides: Partial<TenantRecord> = {}): TenantRecord => ({
  id: TenantId.make(randomUuid()),
  name: label("tenant"),
  description: null,
  created_at: at(),
  password_hash: "$scrypt$fixture",
  token_hash: `hash-${next()}`,
  token_ciphertext: `cipher-${next()}`,
  quotas: Quota.NONE,
  ...overrides
})

export const admin = (overrides: Partial<AdminRecord> = {}): AdminRecord => ({
  username: `admin-${next()}`,
  password_hash: "$scrypt$fixture",
  token_hash: `hash-${next()}`,
  token_ciphertext: `cipher-${next()}`,
  ...overrides
})

export const domain = (tenantId: TenantId, overrides: Partial<DomainRecord> = {}): DomainRecord => ({
  id: DomainId.make(randomUuid()),
  tenant_id: tenantId,
  domain: `${label("d")}.example.com` as DomainName,
  created_at: at(),
  ...overrides
})

export const providerConfig = (overrides: Partial<ProviderConfigRecord> = {}): ProviderConfigRecord => ({
  external_subnet_cidr: "203.0.113.0/24" as Ipv4Network,
  external_subnet_gateway: "203.0.113.1" as Ipv4Address,
  peering_subnet_cidr: "100.64.0.0/16" as Ipv4Network,
  pod_dns_nameservers: ["1.1.1.1" as Ipv4Address],
  pod_dns_ndots: 2,
  edge_account_id: "acct",
  edge_api_token_ciphertext: "cipher",
  edge_domain: "apps.example.com" as DomainName,
  updated_at: at(),
  ...overrides
})

export const serviceTunnel = (overrides: Partial<ServiceTunnelRecord> = {}): ServiceTunnelRecord => ({
  id: ServiceTunnelId.make(randomUuid()),
  service: label("svc"),
  hostname: `${label("h")}.example.com` as DomainName,
  target_url: "http://127.0.0.1:8080" as ServiceUrl,
  status: "active",
  error: null,
  created_at: at(),
  ...overrides
})

/** A VPC with one subnet, ready for pods. */
export const network = (tenantId: TenantId = TenantId.make(randomUuid())) => {
  const vpc: VpcSpec = {
    tenant_id: tenantId,
    vpc_id: VpcId.make(randomUuid()),
    name: label("vpc"),
    enable_internet: true,
    uplink: { external_gateway: "203.0.113.1" as Ipv4Address, peering_subnet_cidr: "100.64.0.0/16" as Ipv4Network },
    peerings: []
  }
  const subnet: SubnetSpec = {
    tenant_id: tenantId,
    vpc_id: vpc.vpc_id,
    subnet_id: SubnetId.make(randomUuid()),
    name: label("subnet"),
    cidr: "10.1.0.0/24" as Ipv4Network,
    gateway_ip: "10.1.0.1" as Ipv4Address,
    enable_internet: true
  }
  return { vpc, subnet }
}

/** A registry credential as the cluster receives it. */
export const registrySecret = (tenantId: TenantId): RegistrySecretSpec => ({
  tenant_id: tenantId,
  name: label("reg"),
  server: "registry.example.com",
  username: "u",
  password: "p"
})

/** A VPC's plan with no rules: only the implied ones apply. */
export const emptyPlan = ({ subnet, vpc }: ReturnType<typeof network>): SecurityPlan => ({
  vpc_id: vpc.vpc_id,
  entries: [],
  infrastructure: ["100.64.0.0/16", `${subnet.gateway_ip}/32`],
  subnets: [{ subnet_id: subnet.subnet_id, cidr: subnet.cidr }],
  pods: []
})

export const pod = (subnet: SubnetSpec, overrides: Partial<PodSpec> = {}): PodSpec => ({
  tenant_id: subnet.tenant_id,
  vpc_id: subnet.vpc_id,
  subnet_id: subnet.subnet_id,
  pod_id: PodId.make(randomUuid()),
  name: label("pod"),
  image: "nginx:1.27",
  replicas: 1,
  service_port: 80,
  env: {},
  registry_credentials: [],
  auto_healing: false,
  autoscaling: null,
  persistent_mount_path: null,
  gpu_count: 0,
  external_access: false,
  external_inbound: null,
  dns: { nameservers: [], ndots: null },
  vip: null,
  ...overrides
})

export const vpc = (tenantId: TenantId, overrides: Partial<VpcRecord> = {}): VpcRecord => ({
  id: VpcId.make(randomUuid()),
  tenant_id: tenantId,
  name: label("vpc"),
  enable_internet: true,
  applied: true,
  apply_error: null,
  lifecycle: "active",
  deleting_since: null,
  deleting_by: null,
  created_at: at(),
  ...overrides
})

export const rule = (vpc: VpcRecord, seq: number, overrides: Partial<SecurityRuleRecord> = {}): SecurityRuleRecord => ({
  id: SecurityRuleId.make(randomUuid()),
  vpc_id: vpc.id,
  tenant_id: vpc.tenant_id,
  seq,
  name: `rule ${seq}`,
  description: null,
  direction: "ingress",
  action: "allow",
  priority: 100,
  protocol: "tcp",
  ports: "443",
  remote_type: "cidr",
  remote_cidr: "0.0.0.0/0" as Ipv4Network,
  remote_vpc_id: null,
  remote_address_set_id: null,
  target_type: "vpc",
  target_subnet_id: null,
  target_pod_ids: null,
  enabled: true,
  created_at: at(),
  updated_at: at(),
  ...overrides
})

/** A tenant's snapshot holding what `overrides` gives it and nothing else. */
export const snapshot = (
  { revision = "0", scopeVersion = 0, vpcVersions = {}, ...rows }:
    & Partial<Kind.Rows>
    & Partial<Pick<TenantSnapshot, "revision" | "vpcVersions" | "scopeVersion">> = {}
): TenantSnapshot => ({ revision, rows: { ...Kind.emptyRows(), ...rows }, vpcVersions, scopeVersion })

/** An address set of the tenant's: two office networks. */
export const addressSet = (tenant: TenantId, overrides: Partial<AddressSetRecord> = {}): AddressSetRecord => ({
  id: AddressSetId.make(randomUuid()),
  tenant_id: tenant,
  name: `set-${randomUuid().slice(0, 8)}` as DnsLabel,
  description: null,
  entries: [
    { cidr: "198.51.100.0/24" as Ipv4Network, description: "Berlin" },
    { cidr: "203.0.113.0/25" as Ipv4Network, description: null }
  ],
  created_at: at(),
  updated_at: at(),
  ...overrides
})

/** A guardrail of `vpc` (tenant-wide with `vpc_id: null`): no SSH from anywhere. */
export const guardrail = (vpc: VpcRecord, overrides: Partial<GuardrailRecord> = {}): GuardrailRecord => ({
  id: GuardrailId.make(randomUuid()),
  tenant_id: vpc.tenant_id,
  vpc_id: vpc.id,
  name: "no ssh",
  description: null,
  require: "deny",
  direction: "ingress",
  protocol: "tcp",
  ports: "22",
  remote_cidr: "0.0.0.0/0" as Ipv4Network,
  local: null,
  created_at: at(),
  ...overrides
})

/** A subnet record of the VPC (blocks are the caller's to keep apart: the store does not judge them). */
export const subnet = (vpc: VpcRecord, overrides: Partial<SubnetRecord> = {}): SubnetRecord => ({
  id: SubnetId.make(randomUuid()),
  tenant_id: vpc.tenant_id,
  vpc_id: vpc.id,
  name: label("subnet"),
  cidr: "10.0.1.0/24" as Ipv4Network,
  gateway_ip: "10.0.1.1" as Ipv4Address,
  created_at: at(),
  ...overrides
})

/** A pod record in the subnet, as a create saves it. */
export const podRecord = (subnet: SubnetRecord, overrides: Partial<PodRecord> = {}): PodRecord => {
  const created = at()
  return {
    id: PodId.make(randomUuid()),
    tenant_id: subnet.tenant_id,
    vpc_id: subnet.vpc_id,
    subnet_id: subnet.id,
    name: label("pod"),
    container_image: "nginx:1.27",
    replica_count: 1,
    service_port: 80,
    use_registry_credentials: true,
    external_access: false,
    external_inbound: false,
    auto_healing: false,
    auto_scaling: false,
    autoscale_min_replicas: 2,
    autoscale_max_replicas: 10,
    autoscale_cpu_target_millicores: 200,
    persistent: false,
    persistent_mount_path: "/storage",
    gpu_count: 0,
    env_var_names: [],
    env_ciphertext: null,
    vip: null,
    external_ip: null,
    lifecycle: "active",
    deleting_since: null,
    applied: true,
    apply_error: null,
    created_at: created,
    updated_at: created,
    ...overrides
  }
}

/** A tunnel record of the pod, at a hostname of its own unless given one. */
export const tunnel = (pod: PodRecord, overrides: Partial<TunnelRecord> = {}): TunnelRecord => {
  const subdomain = label("web")
  return {
    id: TunnelId.make(randomUuid()),
    tenant_id: pod.tenant_id,
    pod_id: pod.id,
    vpc_id: pod.vpc_id,
    tunnel_name: label("tunnel"),
    subdomain,
    domain: "example.com" as DomainName,
    hostname: `${subdomain}.example.com` as DomainName,
    protocol_type: "http",
    service_port: 80,
    status: "pending",
    error: "not yet published",
    created_at: at(),
    ...overrides
  }
}
