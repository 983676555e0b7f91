/**
 * The names of the uniqueness rules every Store implements: a SQL store's constraint names, which
 * the memory store reports alike. A kind's own rules are named in its entry (`Kind.storage.unique`).
 */
export const Constraints = {
  tenantName: "tenants_name_key",
  domainName: "domains_domain_key",
  serviceTunnelService: "service_tunnels_service_key",
  /** One index of every hostname routed for Tenet: tenants' tunnels and service tunnels alike. */
  routedHostname: "routed_hostnames_pkey",
  vpcName: "vpcs_tenant_id_name_key",
  subnetName: "subnets_vpc_id_name_key",
  podName: "pods_vpc_id_name_key",
  tunnelName: "tunnels_tenant_id_tunnel_name_key",
  registryCredentialName: "registry_credentials_tenant_id_name_key",
  addressSetName: "address_sets_tenant_id_name_key"
} as const
