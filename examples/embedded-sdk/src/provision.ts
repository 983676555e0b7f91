/**
 * The host control plane provisions a tenant's network by calling Tenet's use-cases directly:
 * no HTTP, no server. Inputs are decoded with the same schemas the API uses, so the same
 * validation applies; failures are the same typed errors (`Conflict`, `InvalidInput`, ...).
 */
import type { Principal } from "@tenet/core"
import {
  Identity,
  Pod,
  Pods,
  SecurityRule,
  SecurityRules,
  Subnet,
  Subnets,
  Tenant,
  Tenants,
  Traffic,
  Vpc,
  Vpcs
} from "@tenet/core"
import { Effect, Schema } from "effect"

export const provision = (tenantName: string) =>
  Effect.gen(function*() {
    const tenants = yield* Tenants.Tenants
    const tenant = yield* tenants.create(
      yield* Schema.decodeUnknown(Tenant.TenantCreate)({ name: tenantName, password: "embedded-password" })
    )
    // Use-cases take the caller explicitly: the host decides who acts. Creates also check the
    // tenant's own token in the input, as the API's bodies carry it.
    const caller: Principal.TenantPrincipal = { _tag: "Tenant", tenant_id: tenant.id, name: tenant.name }
    const session = yield* (yield* Identity.Identity).tenantLogin(
      { name: tenantName, password: "embedded-password" },
      { source_address: null }
    )
    const credentials = { tenant_id: tenant.id, token: session.api_token }

    const vpc = yield* (yield* Vpcs.Vpcs).create(
      caller,
      yield* Schema.decodeUnknown(Vpc.VpcCreate)({ ...credentials, name: "core", enable_internet: false })
    )
    const subnet = yield* (yield* Subnets.Subnets).create(
      caller,
      yield* Schema.decodeUnknown(Subnet.SubnetCreate)({
        ...credentials,
        vpc_id: vpc.id,
        name: "db",
        cidr: "10.50.0.0/24",
        gateway_ip: "10.50.0.1"
      })
    )
    // The applications run in a VPC of their own; the rule naming it peers the two VPCs.
    const apps = yield* (yield* Vpcs.Vpcs).create(
      caller,
      yield* Schema.decodeUnknown(Vpc.VpcCreate)({ ...credentials, name: "apps", enable_internet: false })
    )
    yield* (yield* Subnets.Subnets).create(
      caller,
      yield* Schema.decodeUnknown(Subnet.SubnetCreate)({
        ...credentials,
        vpc_id: apps.id,
        name: "app",
        cidr: "10.60.0.0/16",
        gateway_ip: "10.60.0.1"
      })
    )
    const rules = yield* SecurityRules.SecurityRules
    const traffic = yield* Traffic.Traffic
    yield* rules.create(
      caller,
      yield* Schema.decodeUnknown(SecurityRule.SecurityRuleCreate)({
        vpc_id: vpc.id,
        name: "postgres from the app network",
        direction: "ingress",
        action: "allow",
        priority: 100,
        protocol: "tcp",
        ports: "5432",
        remote_type: "vpc",
        remote_vpc_id: apps.id,
        target_type: "subnet",
        target_subnet_id: subnet.id
      })
    )
    const pod = yield* (yield* Pods.Pods).create(
      caller,
      yield* Schema.decodeUnknown(Pod.PodCreate)({
        ...credentials,
        vpc_id: vpc.id,
        subnet_id: subnet.id,
        name: "postgres",
        container_image: "postgres:16",
        service_port: 5432
      })
    )
    const verdict = (remote_ip: string) =>
      Effect.flatMap(
        Schema.decodeUnknown(SecurityRule.FlowQuery)({
          vpc_id: vpc.id,
          direction: "ingress",
          protocol: "tcp",
          port: 5432,
          remote_ip,
          target_pod_id: pod.id
        }),
        (query) => traffic.evaluate(caller, query)
      )
    return {
      tenant,
      vpc,
      subnet,
      pod,
      fromApp: yield* verdict("10.60.3.4"),
      fromElsewhere: yield* verdict("198.51.100.7")
    }
  })
