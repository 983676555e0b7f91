/**
 * What Kube-OVN makes in OVN's northbound database of the objects Tenet renders for it
 * (`@tenet/adapters-k8s` `Manifests`, `OvnAcl`), said once, for the packet differential. Each
 * choice follows Kube-OVN v1.12's controllers (github.com/kubeovn/kube-ovn, `pkg/controller`):
 *
 * - a `Vpc` is a logical router (`vpc.go`, `handleAddOrUpdateVpc`); its `staticRoutes` are the
 *   router's static routes (`policyDst`: by destination); each `vpcPeerings` entry is a router
 *   port `<vpc>-<remote>` on the pair's link, peered with `<remote>-<vpc>`
 *   (`pkg/ovs` `CreatePeerRouterPort`); `enableExternal` with `extraExternalSubnets` gives the
 *   router a distributed gateway port on the external network's switch, bound to a gateway
 *   chassis (`handleAddVpcExternalSubnet`);
 * - a `Subnet` is a logical switch joined to its VPC's router by a port holding its gateway
 *   (`subnet.go`, `reconcileRouterPortBySubnet`), with `spec.acls` as the switch's ACLs
 *   (`UpdateLogicalSwitchAcl`);
 * - an `OvnEip` of type `nat` is an address of the external subnet the router answers for
 *   (`ovn_eip.go`); an `OvnSnatRule` is the router's SNAT of a subnet's block (`vpcSubnet`) or an
 *   address (`v4IpCidr`) to it (`ovn_snat.go`); an `OvnDnatRule` forwards one protocol's external
 *   port to an internal address and port (`ovn_dnat.go`), here as a router load balancer, port
 *   for port.
 *
 * Two stand-ins, since no kubelet runs here: a pod is one namespace (its only replica) at an
 * address of its subnet, and the DNAT's internal address (a Service's cluster IP in the cluster)
 * is that namespace's. The external network is one switch with a localnet port on the provider
 * bridge, shared by every VPC's gateway port, as Kube-OVN's `ovn-vpc-external-network` is.
 */
import type { Manifests } from "@tenet/adapters-k8s"

export const EXTERNAL_SWITCH = "ovn-vpc-external-network"
export const EXTERNAL_CIDR = "203.0.113.0/24"
export const EXTERNAL_GATEWAY = "203.0.113.1"
/** The provider bridge's network name (`ovn-bridge-mappings`). */
export const PROVIDER_NETWORK = "external"

type Spec = Record<string, any>

/** The external switch, with its localnet port onto the provider bridge: made once. */
export const externalNetwork: ReadonlyArray<ReadonlyArray<string>> = [
  ["ls-add", EXTERNAL_SWITCH],
  ["lsp-add", EXTERNAL_SWITCH, "ln-external"],
  ["lsp-set-type", "ln-external", "localnet"],
  ["lsp-set-addresses", "ln-external", "unknown"],
  ["lsp-set-options", "ln-external", `network_name=${PROVIDER_NETWORK}`]
]

/** A MAC for the n-th port the translation makes (locally administered). */
const macOf = (n: number) =>
  `0a:58:${[n >> 16, (n >> 8) & 255, n & 255, 1].map((b) => b.toString(16).padStart(2, "0")).join(":")}`

const prefixOf = (cidr: string) => cidr.split("/")[1]!

/** Where a pod runs on the data plane: its namespace (and logical switch port) and address. */
export interface Placement {
  readonly host: string
  readonly mac: string
  readonly ip: string
}

/** The commands of a translation, what they made (to take it down again) and the external addresses handed out. */
export interface Northbound {
  readonly commands: ReadonlyArray<ReadonlyArray<string>>
  readonly teardown: ReadonlyArray<ReadonlyArray<string>>
  /** Each `OvnEip`'s address, by name. */
  readonly eips: ReadonlyMap<string, string>
}

/**
 * The northbound objects Kube-OVN makes of `objects`, with `pods` placed on their subnets'
 * switches (`subnetOf`: a pod's Subnet object's name). External addresses are handed out from
 * the external subnet in the objects' order, as Kube-OVN's IPAM hands out the next free one.
 */
export const translate = (
  objects: ReadonlyArray<Manifests.Manifest>,
  pods: ReadonlyArray<Placement & { readonly subnet: string }>
): Northbound => {
  const commands: Array<Array<string>> = []
  const teardown: Array<Array<string>> = []
  const eips = new Map<string, string>()
  let macs = 0
  let nextExternal = 10
  const external = () => `203.0.113.${nextExternal++}`
  const of = (kind: string) => objects.filter((o) => o.kind === kind)

  for (const eip of of("OvnEip")) eips.set(eip.metadata.name, external())

  const vpcs = of("Vpc")
  for (const vpc of vpcs) {
    const router = vpc.metadata.name
    const spec = vpc.spec as Spec
    commands.push(["lr-add", router])
    teardown.push(["--if-exists", "lr-del", router])
    if (spec.enableExternal === true) {
      const port = `${router}-${EXTERNAL_SWITCH}`
      commands.push(
        ["lrp-add", router, port, macOf(++macs), `${external()}/${prefixOf(EXTERNAL_CIDR)}`],
        ["lrp-set-gateway-chassis", port, "chassis1"],
        ["lsp-add", EXTERNAL_SWITCH, `${EXTERNAL_SWITCH}-${router}`],
        ["lsp-set-type", `${EXTERNAL_SWITCH}-${router}`, "router"],
        ["lsp-set-addresses", `${EXTERNAL_SWITCH}-${router}`, "router"],
        ["lsp-set-options", `${EXTERNAL_SWITCH}-${router}`, `router-port=${port}`]
      )
      teardown.push(["--if-exists", "lsp-del", `${EXTERNAL_SWITCH}-${router}`])
    }
    for (const peering of spec.vpcPeerings ?? []) {
      commands.push([
        "lrp-add",
        router,
        `${router}-${peering.remoteVpc}`,
        macOf(++macs),
        peering.localConnectIP,
        `peer=${peering.remoteVpc}-${router}`
      ])
    }
  }
  for (const subnet of of("Subnet")) {
    const spec = subnet.spec as Spec
    const sw = subnet.metadata.name
    const router = spec.vpc as string
    commands.push(
      ["ls-add", sw],
      ["lrp-add", router, `${router}-${sw}`, macOf(++macs), `${spec.gateway}/${prefixOf(spec.cidrBlock)}`],
      ["lsp-add", sw, `${sw}-${router}`],
      ["lsp-set-type", `${sw}-${router}`, "router"],
      ["lsp-set-addresses", `${sw}-${router}`, "router"],
      ["lsp-set-options", `${sw}-${router}`, `router-port=${router}-${sw}`],
      ...(spec.acls as ReadonlyArray<Spec>).map((acl) => [
        "acl-add",
        sw,
        acl.direction,
        String(acl.priority),
        acl.match,
        acl.action
      ])
    )
    teardown.push(["--if-exists", "ls-del", sw])
    for (const pod of pods.filter((p) => p.subnet === sw)) {
      commands.push(["lsp-add", sw, pod.host], ["lsp-set-addresses", pod.host, `${pod.mac} ${pod.ip}`])
    }
  }
  // Routes after every port: a next hop must be on a port of the router.
  for (const vpc of vpcs) {
    for (const route of (vpc.spec as Spec).staticRoutes ?? []) {
      commands.push(["lr-route-add", vpc.metadata.name, route.cidr, route.nextHopIP])
    }
  }
  const routerOf = (vpc: string | undefined, subnet: string | undefined) =>
    vpc ?? (of("Subnet").find((s) => s.metadata.name === subnet)?.spec as Spec | undefined)?.vpc as string
  for (const rule of of("OvnSnatRule")) {
    const spec = rule.spec as Spec
    const block = spec.vpcSubnet === undefined
      ? spec.v4IpCidr as string
      : (of("Subnet").find((s) => s.metadata.name === spec.vpcSubnet)!.spec as Spec).cidrBlock as string
    commands.push(["lr-nat-add", routerOf(spec.vpc, spec.vpcSubnet), "snat", eips.get(spec.ovnEip)!, block])
  }
  for (const rule of of("OvnDnatRule")) {
    const spec = rule.spec as Spec
    const name = rule.metadata.name
    commands.push(
      [
        "lb-add",
        name,
        `${eips.get(spec.ovnEip)!}:${spec.externalPort}`,
        `${spec.v4Ip}:${spec.internalPort}`,
        spec.protocol
      ],
      ["lr-lb-add", spec.vpc, name]
    )
    teardown.push(["--if-exists", "lb-del", name])
  }
  return { commands, teardown, eips }
}
