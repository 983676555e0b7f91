/**
 * The quick start, with nothing but Promises: log in as admin, set up the tunnel provider and
 * a tenant, then act as the tenant: a VPC, a subnet, a rule letting HTTPS in (its impact
 * previewed first), a pod, a tunnel publishing it, and what reaches the pod. Everything it makes
 * is the new tenant's, its hostname too (`shop-<tenant>`): run again under another tenant's
 * name, it makes all of it again beside the first run's.
 */
import { Errors, PromiseClient } from "@tenet/client"

export interface Server {
  readonly baseUrl: string
  readonly adminUsername: string
  readonly adminPassword: string
}

export const quickstart = async (server: Server, tenantName: string, log: (line: string) => void) => {
  const admin = await PromiseClient.loginAdmin({
    baseUrl: server.baseUrl,
    username: server.adminUsername,
    password: server.adminPassword
  })
  const acme = await (async () => {
    try {
      await admin.providerConfig.put({
        payload: {
          external_subnet_cidr: "203.0.113.0/24",
          external_subnet_gateway: "203.0.113.1",
          peering_subnet_cidr: "100.64.0.0/16",
          edge_account_id: "example-account",
          edge_api_token: "example-token",
          edge_domain: "apps.example.com"
        }
      })
      const tenant = await admin.tenants.create({ payload: { name: tenantName, password: "correct horse battery" } })
      log(`tenant ${tenant.name} (${tenant.id})`)
      return await PromiseClient.loginTenant({
        baseUrl: server.baseUrl,
        name: tenantName,
        password: "correct horse battery"
      })
    } finally {
      await admin.close()
    }
  })()
  try {
    // Bodies as the API documents them; token and tenant_id come from the session.
    const vpc = await acme.vpcs.create({ payload: { name: "prod", enable_internet: true } })
    const subnet = await acme.subnets.create({
      payload: { vpc_id: vpc.id, name: "web", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" }
    })
    const httpsIn = {
      vpc_id: vpc.id,
      name: "https in",
      direction: "ingress",
      action: "allow",
      priority: 100,
      protocol: "tcp",
      ports: "443",
      remote_type: "cidr",
      remote_cidr: "0.0.0.0/0"
    } as const
    // See before you change: the rule's exact impact, and nothing changed yet.
    const preview = await acme.securityRules.create({ payload: httpsIn, urlParams: { dry_run: true } })
    const rule = await acme.securityRules.create({ payload: httpsIn })
    const pod = await acme.pods.create({
      payload: {
        vpc_id: vpc.id,
        subnet_id: subnet.id,
        name: "storefront",
        container_image: "nginx:1.27",
        service_port: 443,
        // Published on an external address of its own: the internet reaches its service port.
        external_access: true,
        external_inbound: true
      }
    })
    const tunnel = await acme.tunnels.createForPod({
      path: { pod_id: pod.id },
      // A hostname is the server's to give once: the tenant's name makes this run's its own.
      payload: {
        tunnel_name: "storefront",
        subdomain: `shop-${tenantName}`,
        protocol_type: "https",
        service_port: 443
      }
    })
    // The internet reaches only what is published (the pod's service port); the rule lets it in.
    const verdict = await acme.securityRules.evaluate({
      payload: {
        vpc_id: vpc.id,
        direction: "ingress",
        protocol: "tcp",
        port: 443,
        remote_ip: "198.51.100.7",
        target_pod_id: pod.id
      }
    })
    // What reaches what, end to end: from the internet to the pod, only HTTPS (the pairs of one
    // endpoint, pods included; without `detail: "pods"` the answer summarizes by subnet). The
    // tunnel's traffic comes from its connector on the core network, which always gets in.
    const reachability = await acme.vpcs.reachability({
      path: { vpc_id: vpc.id },
      urlParams: { detail: "pods", endpoint: "internet" }
    })
    const fromInternet = reachability.pairs.find((p) => p.from.kind === "internet" && p.to.kind === "pod")!
    log(`VPC ${vpc.name} ${vpc.applied ? "applied" : `not applied: ${vpc.apply_error}`}`)
    const opened = preview.opened.map((r) => `${r.protocol}/${r.ports} from ${r.remote_summary}`)
    log(`preview of '${httpsIn.name}': opens ${opened.join("; ")}, closes ${preview.closed.length} regions`)
    log(`subnet ${subnet.name} ${subnet.cidr}`)
    log(`rule '${rule.rule.name}' priority ${rule.rule.priority}`)
    log(`pod ${pod.name}: ${pod.status.phase}, VIP ${pod.status.vip}`)
    log(`tunnel ${tunnel.tunnel_name}: https://${tunnel.hostname} (${tunnel.status})`)
    log(`tcp/443 from 198.51.100.7: ${verdict.reach}`)
    log(
      `internet -> pod ${pod.name}: tcp ${fromInternet.tcp.allowed || "none"}, udp ${
        fromInternet.udp.allowed || "none"
      }`
    )
    // Errors are the API's, typed: a second VPC of the same name is a Conflict.
    const again = await acme.vpcs.create({ payload: { name: "prod", enable_internet: true } }).catch((e) => e)
    if (again instanceof Errors.Conflict) log(`again: ${again.detail}`)
    return { vpc, subnet, preview, rule, pod, tunnel, verdict, reachability }
  } finally {
    await acme.close()
  }
}
