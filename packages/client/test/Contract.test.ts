/**
 * The client contract: every endpoint of the API, called through the client against the real
 * server in this process, over plain fetch. Which endpoints the test called is recorded, and
 * the last test checks that none of the contract's endpoints was left out.
 */
import { FetchHttpClient, HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { createTenetClient, Errors, TenetClient } from "@tenet/client"
import { AddressSet, Api } from "@tenet/core"
import { TestServer } from "@tenet/server"
import { Effect } from "effect"

const called = new Set<string>()

/** The client, recording which endpoints it was asked to call. */
const recorded = (client: TenetClient.Client): TenetClient.Client => {
  const wrapped = Object.fromEntries(
    Object.entries(client).map(([group, endpoints]) => [
      group,
      Object.fromEntries(
        Object.entries(endpoints as Record<string, (...args: Array<any>) => any>).map(([name, call]) => [
          name,
          (...args: Array<any>) => {
            called.add(`${group}.${name}`)
            return call(...args)
          }
        ])
      )
    ])
  )
  // eslint-disable-next-line no-restricted-syntax -- the client's mapped type, rebuilt by Object.fromEntries
  return wrapped as unknown as TenetClient.Client
}

const baseUrl = Effect.map(
  HttpServer.HttpServer,
  (server) => server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : ""
)

const connect = (options: TenetClient.Options) =>
  TenetClient.make(options).pipe(Effect.map(recorded), Effect.provide(FetchHttpClient.layer))

const PASSWORD = "contract-password"

layer(TestServer.layer(), { excludeTestServices: true })("the client covers the whole API", (it) => {
  it.effect("system, identity and admin endpoints", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const anonymous = yield* connect({ baseUrl: url })
      expect((yield* anonymous.system.healthz()).status).toBe("ok")
      expect((yield* anonymous.system.version()).version).toBe(TestServer.VERSION)
      const adminSession = yield* anonymous.adminIdentity.login({
        payload: { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD }
      })
      const admin = yield* connect({ baseUrl: url, adminToken: adminSession.api_token })
      const tenant = yield* admin.tenants.create({
        payload: { name: "contract-admin", password: PASSWORD, description: "for the client contract" }
      })
      expect((yield* admin.tenants.list()).map((t) => t.name)).toContain("contract-admin")
      expect((yield* admin.tenants.get({ path: { tenant_id: tenant.id } })).name).toBe("contract-admin")
      const quotas = yield* admin.quotas.set({
        path: { tenant_id: tenant.id },
        payload: { vpcs: 3, subnets: null, pods: null, watchers: null }
      })
      expect(quotas.vpcs).toEqual({ limit: 3, used: 0, default: false })
      expect((yield* admin.quotas.get({ path: { tenant_id: tenant.id } })).pods.default).toBe(true)
      yield* admin.domains.assign({
        path: { tenant_id: tenant.id },
        payload: { domain: "contract.example.com" }
      })
      expect((yield* admin.domains.list({ path: { tenant_id: tenant.id } })).map((d) => d.domain)).toEqual([
        "contract.example.com"
      ])
      yield* admin.domains.remove({ path: { tenant_id: tenant.id, domain: "contract.example.com" as never } })
      yield* admin.providerConfig.put({
        payload: {
          external_subnet_cidr: "203.0.113.0/24",
          external_subnet_gateway: "203.0.113.1",
          peering_subnet_cidr: "100.64.0.0/16",
          pod_dns_nameservers: [],
          pod_dns_ndots: null,
          edge_account_id: "acct",
          edge_api_token: "edge-token",
          edge_domain: "apps.example.com"
        }
      })
      expect((yield* admin.providerConfig.get()).edge_api_token_set).toBe(true)
      const service = yield* admin.serviceTunnels.create({
        payload: { service: "api", subdomain: "api", domain: null, target_url: null }
      })
      expect((yield* admin.serviceTunnels.list()).map((s) => s.id)).toContain(service.id)
      yield* admin.serviceTunnels.delete({ path: { service_tunnel_id: service.id } })
      expect((yield* admin.operationsLog.list({ urlParams: { limit: 10 } })).entries.length).toBeGreaterThan(0)
      const trail = yield* admin.auditLog.list({ urlParams: { resource_kind: "service_tunnel", limit: 10 } })
      expect(trail.entries.map((e) => e.action)).toEqual(["serviceTunnels.delete", "serviceTunnels.create"])
      const tenantSession = yield* anonymous.tenantIdentity.login({
        payload: { name: tenant.name, password: PASSWORD }
      })
      const asTenant = yield* connect({ baseUrl: url, tenantToken: tenantSession.api_token, tenantId: tenant.id })
      const own = yield* asTenant.auditLog.listForTenant({ path: { tenant_id: tenant.id }, urlParams: { limit: 50 } })
      expect(own.entries.every((e) => e.tenant_id === tenant.id)).toBe(true)
      const rotated = yield* asTenant.tenantIdentity.rotateToken({ path: { tenant_id: tenant.id } })
      expect(rotated.api_token).not.toBe(tenantSession.api_token)
      const fresh = yield* connect({ baseUrl: url, tenantToken: rotated.api_token })
      yield* fresh.tenantIdentity.logout()
      const rotatedAdmin = yield* admin.adminIdentity.rotateToken()
      const admin2 = yield* connect({ baseUrl: url, adminToken: rotatedAdmin.api_token })
      yield* admin2.tenants.delete({ path: { tenant_id: tenant.id } })
      yield* admin2.adminIdentity.logout()
    }))

  it.effect("network, workload, tunnel, registry and topology endpoints, with the session filled into bodies", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const admin = yield* TenetClient.loginAdmin({
        baseUrl: url,
        username: TestServer.ADMIN_USERNAME,
        password: TestServer.ADMIN_PASSWORD
      }).pipe(Effect.map(recorded), Effect.provide(FetchHttpClient.layer))
      yield* admin.tenants.create({ payload: { name: "contract-net", password: PASSWORD, description: null } })
      const tenant = yield* TenetClient.loginTenant({ baseUrl: url, name: "contract-net", password: PASSWORD }).pipe(
        Effect.map(recorded),
        Effect.provide(FetchHttpClient.layer)
      )
      // No token or tenant_id in these bodies: the client fills them from the session.
      const vpc = yield* tenant.vpcs.create({ payload: { name: "prod", enable_internet: true } })
      expect((yield* tenant.vpcs.list()).map((v) => v.id)).toEqual([vpc.id])
      const subnet = yield* tenant.subnets.create({
        payload: { vpc_id: vpc.id, name: "web", cidr: "10.0.0.0/24", gateway_ip: "10.0.0.1" }
      })
      expect((yield* tenant.subnets.list()).map((s) => s.id)).toEqual([subnet.id])
      const reach = yield* tenant.vpcs.reachability({ path: { vpc_id: vpc.id } })
      expect(reach.pairs.some((p) => p.from.kind === "subnet" && p.to.kind === "internet")).toBe(true)
      const created = yield* tenant.securityRules.create({
        payload: {
          vpc_id: vpc.id,
          name: "https",
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          ports: "443",
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0",
          target_type: "vpc"
        }
      })
      const rule = created.rule!
      expect((yield* tenant.securityRules.get({ path: { rule_id: rule.id } })).name).toBe("https")
      // A dry run is typed as its impact, and changes nothing.
      const preview = yield* tenant.securityRules.delete({ path: { rule_id: rule.id }, urlParams: { dry_run: true } })
      expect(preview.closed.map((r) => [r.protocol, r.ports, r.before.decided_by])).toContainEqual([
        "tcp",
        "443",
        { kind: "rule", rule_id: rule.id, name: "https" }
      ])
      expect((yield* tenant.securityRules.get({ path: { rule_id: rule.id } })).id).toBe(rule.id)
      yield* tenant.securityRules.update({ path: { rule_id: rule.id }, payload: { description: "web" } })
      const listed = yield* tenant.securityRules.list({ urlParams: { vpc_id: vpc.id } })
      expect(listed.rules.map((r) => r.id)).toContain(rule.id)
      yield* tenant.securityRules.analysis({ urlParams: { vpc_id: vpc.id } })
      // A declaration is planned (the plan names the rules' ETag it was made against), then
      // applied only if the rules are still what was planned.
      const declared = {
        rules: listed.rules.map(({ created_at: _c, status: _s, updated_at: _u, vpc_id: _v, ...rule }) => rule)
      }
      const plan = yield* tenant.securityRules.replace({
        path: { vpc_id: vpc.id },
        payload: declared,
        urlParams: { dry_run: true }
      })
      expect(plan.unchanged.length).toBe(listed.rules.length)
      const replaced = yield* tenant.securityRules.replace({
        path: { vpc_id: vpc.id },
        payload: declared,
        headers: { "if-match": plan.etag }
      })
      expect([replaced.applied, replaced.etag]).toEqual([true, plan.etag])
      yield* tenant.securityRules.reorder({ payload: { vpc_id: vpc.id, rule_ids: listed.rules.map((r) => r.id) } })
      const verdict = yield* tenant.securityRules.evaluate({
        payload: {
          vpc_id: vpc.id,
          direction: "ingress",
          protocol: "tcp",
          port: 443,
          // From inside the VPC: a route carries it, and the rule lets it in.
          remote_ip: "10.0.0.9"
        }
      })
      expect(verdict).toMatchObject({ reach: "allowed", allowed: true, denied_flow: null })
      const invalid = yield* Effect.flip(tenant.securityRules.create({
        payload: {
          vpc_id: vpc.id,
          name: "bad",
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "icmp",
          ports: "80",
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0",
          target_type: "vpc"
        }
      }))
      expect(invalid).toBeInstanceOf(Errors.RuleValidation)

      yield* tenant.registryCredentials.create({
        path: { tenant_id: vpc.tenant_id },
        payload: { name: "ghcr", server: "ghcr.io", username: "bot", password: "registry-secret" }
      })
      expect((yield* tenant.registryCredentials.list({ path: { tenant_id: vpc.tenant_id } })).map((c) => c.name))
        .toEqual(["ghcr"])
      const pod = yield* tenant.pods.create({
        payload: { vpc_id: vpc.id, subnet_id: subnet.id, name: "api", container_image: "nginx:1.27" }
      })
      expect((yield* tenant.pods.list()).map((p) => p.id)).toEqual([pod.id])
      yield* tenant.pods.addReplica({ path: { pod_id: pod.id } })
      yield* tenant.pods.removeReplica({ path: { pod_id: pod.id } })
      yield* tenant.pods.restart({ path: { pod_id: pod.id } })
      yield* tenant.pods.configure({ path: { pod_id: pod.id }, payload: { auto_healing: true } })
      const tunnel = yield* tenant.tunnels.createForPod({
        path: { pod_id: pod.id },
        payload: { tunnel_name: "web", subdomain: "web", protocol_type: "http" }
      })
      const derived = yield* tenant.tunnels.create({ urlParams: { pod_id: pod.id }, payload: null })
      expect((yield* tenant.tunnels.listForPod({ path: { pod_id: pod.id } })).length).toBe(2)
      expect((yield* tenant.tunnels.list()).map((t) => t.id).sort()).toEqual([tunnel.id, derived.id].sort())
      yield* tenant.tunnels.delete({ path: { tunnel_id: derived.id } })
      const planned = yield* tenant.topology.deploy({
        path: { tenant_id: vpc.tenant_id },
        payload: { vpcs: [{ name: "staging", enable_internet: false }], subnets: [] },
        urlParams: { dry_run: true }
      })
      expect(planned.created.vpcs.map((v) => v.name)).toEqual(["staging"])
      const deployed = yield* tenant.topology.deploy({
        path: { tenant_id: vpc.tenant_id },
        payload: { vpcs: [], subnets: [] }
      })
      expect(deployed.vpcs.map((v) => v.name)).not.toContain("staging")
      yield* tenant.topology.get({ path: { tenant_id: vpc.tenant_id } })
      // Guardrails: a rule that would break one is refused with the violation, typed.
      const guardrail = yield* tenant.guardrails.create({
        path: { vpc_id: vpc.id },
        payload: {
          name: "no telnet",
          require: "deny",
          direction: "ingress",
          protocol: "tcp",
          ports: "23",
          remote_cidr: "198.51.100.0/24"
        }
      })
      expect((yield* tenant.guardrails.list({ path: { vpc_id: vpc.id } })).map((g) => g.id)).toContain(guardrail.id)
      const broken = yield* Effect.flip(tenant.securityRules.create({
        payload: {
          vpc_id: vpc.id,
          name: "telnet",
          direction: "ingress",
          action: "allow",
          priority: 1,
          protocol: "tcp",
          ports: "23",
          remote_type: "cidr",
          remote_cidr: "198.51.100.0/24"
        }
      }))
      expect(broken).toBeInstanceOf(Errors.GuardrailViolated)
      expect(broken._tag === "GuardrailViolated" && broken.violations[0]?.guardrail_id).toBe(guardrail.id)
      yield* tenant.guardrails.delete({ path: { guardrail_id: guardrail.id } })
      const wide = yield* admin.tenantGuardrails.create({
        path: { tenant_id: vpc.tenant_id },
        payload: {
          name: "no telnet anywhere",
          require: "deny",
          direction: "ingress",
          protocol: "tcp",
          ports: "23",
          remote_cidr: "192.0.2.0/24"
        }
      })
      expect((yield* admin.tenantGuardrails.list({ path: { tenant_id: vpc.tenant_id } })).map((g) => g.scope)).toEqual([
        "tenant"
      ])
      yield* admin.tenantGuardrails.delete({ path: { tenant_id: vpc.tenant_id, guardrail_id: wide.id } })
      // Address sets: changed at their own version only, the stale change refused, typed.
      const offices = yield* tenant.addressSets.create({
        payload: {
          name: "offices" as never,
          description: null,
          entries: [{ cidr: "198.51.100.0/24" as never, description: "Berlin" }]
        }
      })
      expect((yield* tenant.addressSets.list({ urlParams: {} })).map((s) => s.id)).toEqual([offices.id])
      const setPlan = yield* tenant.addressSets.update({
        path: { address_set_id: offices.id },
        urlParams: { dry_run: true },
        headers: { "if-match": offices.etag },
        payload: { entries: [] }
      })
      expect(setPlan).toMatchObject({ dry_run: true, vpcs: [] })
      const moved = (yield* tenant.addressSets.update({
        path: { address_set_id: offices.id },
        urlParams: {},
        headers: { "if-match": offices.etag },
        payload: { entries: [] }
      })) as AddressSet.AddressSet
      expect((yield* tenant.addressSets.get({ path: { address_set_id: offices.id } })).etag).toBe(moved.etag)
      expect(yield* tenant.addressSets.usage({ path: { address_set_id: offices.id } })).toEqual(
        AddressSet.AddressSetUsage.make({ address_set_id: offices.id, rules: [] })
      )
      const stale = yield* Effect.flip(tenant.addressSets.delete({
        path: { address_set_id: offices.id },
        headers: { "if-match": offices.etag }
      }))
      expect(stale).toBeInstanceOf(Errors.PreconditionFailed)
      yield* tenant.addressSets.delete({ path: { address_set_id: offices.id }, headers: {} })
      const explained = yield* tenant.vpcs.explain({
        path: { vpc_id: vpc.id },
        urlParams: { from: "internet", to: pod.id, protocol: "tcp", port: 443 }
      })
      // The rule lets it in, but nothing publishes the pod: no route from the internet carries it.
      expect([explained.reach, explained.route.blocked_by?.reason]).toEqual(["denied", "not_published"])
      expect(explained.ingress.allowed_flow?.ingress?.decided_by).toEqual({
        kind: "rule",
        rule_id: rule.id,
        name: "https"
      })
      // The change stream is read with `watch()` (a Stream); the raw call is the contract's,
      // refused here before any stream starts.
      const ahead = yield* Effect.flip(tenant.changes.watch({ urlParams: { since: "999999999999" } }))
      expect(ahead).toBeInstanceOf(Errors.InvalidInput)
      yield* tenant.pods.delete({ path: { pod_id: pod.id } })
      yield* tenant.registryCredentials.delete({ path: { tenant_id: vpc.tenant_id, name: "ghcr" as never } })
      yield* tenant.securityRules.delete({ path: { rule_id: rule.id } })
      yield* tenant.vpcs.delete({ path: { vpc_id: vpc.id } })
      const missing = yield* Effect.flip(tenant.vpcs.delete({ path: { vpc_id: vpc.id } }))
      expect(missing).toBeInstanceOf(Errors.NotFound)
    }))

  it.effect("the Promise facade has the same endpoints and rejects with the contract's errors", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const tenet = createTenetClient({ baseUrl: url })
      const result = yield* Effect.promise(async () => {
        const health = await tenet.system.healthz()
        const refused = await tenet.tenants.list().then(() => null, (e: unknown) => e)
        await tenet.close()
        return { health, refused }
      })
      expect(result.health.status).toBe("ok")
      expect(result.refused).toBeInstanceOf(Errors.Unauthorized)
      expect(result.refused).toMatchObject({ _tag: "Unauthorized" })
    }))

  it("every endpoint of the contract was called", () => {
    const all = Object.values(Api.TenetApi.groups).flatMap((group) =>
      Object.values(group.endpoints).map((endpoint) => `${group.identifier}.${endpoint.name}`)
    )
    expect(all.filter((e) => !called.has(e))).toEqual([])
  })
})
