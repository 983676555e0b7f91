/**
 * Tenet's resources as Kubernetes objects: pure functions from the Orchestrator's specs to
 * the objects server-side apply sends. Every object is complete (apply owns exactly what is
 * rendered) and labelled with its owners, so deleting by label leaves nothing behind.
 */
import type { Ids, Orchestrator } from "@tenet/core"
import { Buffer } from "node:buffer"
import * as Names from "./Names.js"
import type { Acl } from "./OvnAcl.js"

export interface Metadata {
  readonly name: string
  readonly namespace?: string
  readonly labels: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
  /** A replace's precondition (`KubeApi.replace`); never applied. */
  readonly resourceVersion?: string
}

/** An object as applied: apiVersion, kind, metadata, and the kind's own fields. */
export interface Manifest {
  readonly apiVersion: string
  readonly kind: string
  readonly metadata: Metadata
  readonly [field: string]: unknown
}

/** What the cluster's operator decides once for every tenant. */
export interface Settings {
  /** The Kube-OVN subnet of the provider network that VPC routers and external IPs use. */
  readonly externalSubnet: string
  /** StorageClass for persistent pods; null uses the cluster's default class. */
  readonly storageClassName: string | null
  /** Size of a persistent pod's volume. */
  readonly storageSize: string
  /** The extended resource GPUs are requested as. */
  readonly gpuResource: string
  /**
   * The Kube-OVN subnet of the peering network (the provider configuration's peering block).
   * Tunnel connectors run there: their addresses are infrastructure, which no rule blocks.
   */
  readonly peeringSubnet: string
  readonly connectorImage: string
  readonly connectorReplicas: number
}

export const defaultSettings: Settings = {
  externalSubnet: "ovn-vpc-external-network",
  storageClassName: null,
  storageSize: "10Gi",
  gpuResource: "nvidia.com/gpu",
  peeringSubnet: "tenet-peering",
  connectorImage: "cloudflare/cloudflared:2025.11.1",
  connectorReplicas: 2
}

const KUBE_OVN = "kubeovn.io/v1"
/** The pod annotation that puts a pod on a Kube-OVN subnet. */
export const LOGICAL_SWITCH = "ovn.kubernetes.io/logical_switch"

/** The kinds Tenet writes, in the order an apply creates them (deletes go in reverse). */
/** A kind as the API serves it: its group/version, name, plural resource and scope. */
export interface Kind {
  readonly apiVersion: string
  readonly kind: string
  /** The plural in the API's paths (`deployments`), as discovery lists it. */
  readonly resource: string
  readonly namespaced: boolean
}

export const Kinds = {
  Namespace: { apiVersion: "v1", kind: "Namespace", resource: "namespaces", namespaced: false },
  Vpc: { apiVersion: KUBE_OVN, kind: "Vpc", resource: "vpcs", namespaced: false },
  OvnEip: { apiVersion: KUBE_OVN, kind: "OvnEip", resource: "ovn-eips", namespaced: false },
  Subnet: { apiVersion: KUBE_OVN, kind: "Subnet", resource: "subnets", namespaced: false },
  OvnSnatRule: { apiVersion: KUBE_OVN, kind: "OvnSnatRule", resource: "ovn-snat-rules", namespaced: false },
  OvnDnatRule: { apiVersion: KUBE_OVN, kind: "OvnDnatRule", resource: "ovn-dnat-rules", namespaced: false },
  Secret: { apiVersion: "v1", kind: "Secret", resource: "secrets", namespaced: true },
  PersistentVolumeClaim: {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    resource: "persistentvolumeclaims",
    namespaced: true
  },
  Service: { apiVersion: "v1", kind: "Service", resource: "services", namespaced: true },
  Deployment: { apiVersion: "apps/v1", kind: "Deployment", resource: "deployments", namespaced: true },
  /** `autoscaling/v2`, where the cluster serves it: see `horizontalPodAutoscaler` for the others. */
  HorizontalPodAutoscaler: {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    resource: "horizontalpodautoscalers",
    namespaced: true
  },
  /** Read only: a pod's replicas, for their addresses. */
  Pod: { apiVersion: "v1", kind: "Pod", resource: "pods", namespaced: true }
} as const satisfies Record<string, Kind>

/**
 * The HPA versions Tenet renders, best first: `autoscaling/v2` is served from Kubernetes 1.23,
 * `v2beta2` until 1.25; their `spec` is the same for the CPU target Tenet sets.
 */
export const AUTOSCALING_VERSIONS = ["v2", "v2beta2"] as const
export type AutoscalingVersion = (typeof AUTOSCALING_VERSIONS)[number]

/** The HorizontalPodAutoscaler kind at a version of the `autoscaling` group. */
export const horizontalPodAutoscaler = (version: AutoscalingVersion): Kind => ({
  ...Kinds.HorizontalPodAutoscaler,
  apiVersion: `autoscaling/${version}`
})

const object = (kind: Kind, metadata: Metadata, fields: Record<string, unknown>): Manifest => ({
  apiVersion: kind.apiVersion,
  kind: kind.kind,
  metadata,
  ...fields
})

const named = (displayName: string) => ({ [Names.DISPLAY_NAME]: displayName })

/**
 * A VPC: its namespace, its Kube-OVN Vpc, and the external IP its internet egress uses. The Vpc
 * peers each VPC the spec names as Kube-OVN peers two (its `CreatePeerRouterPort`): a router port
 * on the pair's link (`vpcPeerings`, one side's address each) and a static route to each of the
 * other's blocks through the other's address; nothing else joins two VPCs' routers.
 */
export const vpc = (spec: Orchestrator.VpcSpec, settings: Settings): ReadonlyArray<Manifest> => {
  const labels = Names.labels(spec)
  const uplink = spec.uplink
  const routes = [
    ...(uplink === null ? [] : [
      // Core services stay reachable whether or not the VPC has the internet.
      { cidr: uplink.peering_subnet_cidr, nextHopIP: uplink.external_gateway, policy: "policyDst" },
      ...(spec.enable_internet ? [{ cidr: "0.0.0.0/0", nextHopIP: uplink.external_gateway, policy: "policyDst" }] : [])
    ]),
    ...spec.peerings.flatMap((peering) =>
      peering.remote_blocks.map((cidr) => ({ cidr, nextHopIP: peering.remote_connect_ip, policy: "policyDst" }))
    )
  ]
  return [
    object(Kinds.Namespace, {
      name: Names.namespace(spec.vpc_id),
      labels: { ...labels, [Names.COMPONENT]: "namespace" },
      annotations: named(spec.name)
    }, {}),
    object(Kinds.Vpc, {
      name: Names.vpc(spec.vpc_id),
      labels: { ...labels, [Names.COMPONENT]: "vpc" },
      annotations: named(spec.name)
    }, {
      spec: {
        namespaces: [Names.namespace(spec.vpc_id)],
        enableExternal: uplink !== null,
        ...(uplink === null ? {} : { extraExternalSubnets: [settings.externalSubnet] }),
        staticRoutes: routes,
        vpcPeerings: spec.peerings.map((peering) => ({
          remoteVpc: Names.vpc(peering.remote_vpc_id),
          localConnectIP: peering.local_connect_ip
        }))
      }
    }),
    ...(spec.enable_internet && uplink !== null
      ? [
        object(Kinds.OvnEip, {
          name: Names.vpcEgress(spec.vpc_id),
          labels: { ...labels, [Names.COMPONENT]: "vpc-egress" }
        }, {
          spec: { externalSubnet: settings.externalSubnet, type: "nat" }
        })
      ]
      : [])
  ]
}

/** The fields of a subnet the cluster's Subnet object carries. */
export type SubnetShape = Omit<Orchestrator.SubnetSpec, "enable_internet">

/** A Kube-OVN Subnet with its ACLs. */
export const subnet = (spec: SubnetShape, acls: ReadonlyArray<Acl>): Manifest =>
  object(Kinds.Subnet, {
    name: Names.subnet(spec.subnet_id),
    labels: { ...Names.labels(spec), [Names.COMPONENT]: "subnet" },
    annotations: named(spec.name)
  }, {
    spec: {
      vpc: Names.vpc(spec.vpc_id),
      protocol: "IPv4",
      cidrBlock: spec.cidr,
      gateway: spec.gateway_ip,
      excludeIps: [spec.gateway_ip],
      namespaces: [Names.namespace(spec.vpc_id)],
      private: false,
      acls
    }
  })

/** What `subnet` rendered, read back from the live object (labels, annotation and spec). */
export const subnetShapeOf = (live: {
  readonly metadata?: { readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> }
  readonly spec?: { readonly cidrBlock?: string; readonly gateway?: string }
}): SubnetShape | null => {
  const labels = live.metadata?.labels ?? {}
  const tenant = labels[Names.TENANT]
  const vpcId = labels[Names.VPC]
  const subnetId = labels[Names.SUBNET]
  const name = live.metadata?.annotations?.[Names.DISPLAY_NAME]
  const cidr = live.spec?.cidrBlock
  const gateway = live.spec?.gateway
  return tenant && vpcId && subnetId && name && cidr && gateway
    ? {
      tenant_id: tenant as Ids.TenantId,
      vpc_id: vpcId as Ids.VpcId,
      subnet_id: subnetId as Ids.SubnetId,
      name: name as SubnetShape["name"],
      cidr: cidr as SubnetShape["cidr"],
      gateway_ip: gateway as SubnetShape["gateway_ip"]
    }
    : null
}

/** The subnet's internet egress through the VPC's external IP, when the VPC has the internet. */
export const subnetEgress = (spec: Orchestrator.SubnetSpec): ReadonlyArray<Manifest> =>
  spec.enable_internet
    ? [object(Kinds.OvnSnatRule, {
      name: Names.subnetEgress(spec.subnet_id),
      labels: { ...Names.labels(spec), [Names.COMPONENT]: "subnet-egress" }
    }, { spec: { ovnEip: Names.vpcEgress(spec.vpc_id), vpcSubnet: Names.subnet(spec.subnet_id) } })]
    : []

const base64 = (text: string) => Buffer.from(text, "utf8").toString("base64")

/** Where a pod is, as the cluster learned it: its VIP and its replicas' addresses. */
export interface PodAddresses {
  /** The Service's cluster IP, once the API server assigned it. */
  readonly vip: string | null
  readonly replicas: ReadonlyArray<string>
}

/**
 * A pod: the env Secret, a volume claim when persistent, the Service whose cluster IP is the
 * pod's VIP, the Deployment, an HPA when autoscaling, and its external address with the NAT
 * rules that use it.
 */
export const pod = (
  spec: Orchestrator.PodSpec,
  settings: Settings,
  addresses: PodAddresses,
  autoscaling: AutoscalingVersion = "v2"
): ReadonlyArray<Manifest> => {
  const labels = Names.labels(spec)
  const name = Names.workload(spec.pod_id)
  const namespace = Names.namespace(spec.vpc_id)
  const meta = (component: string): Metadata => ({
    name,
    namespace,
    labels: { ...labels, [Names.COMPONENT]: component },
    annotations: named(spec.name)
  })
  const selector = { [Names.POD]: spec.pod_id }
  const persistent = spec.persistent_mount_path !== null
  const dns = spec.dns
  const container = {
    name: "app",
    image: spec.image,
    ports: [
      { name: "service-tcp", containerPort: spec.service_port, protocol: "TCP" },
      { name: "service-udp", containerPort: spec.service_port, protocol: "UDP" }
    ],
    envFrom: [{ secretRef: { name } }],
    ...(spec.gpu_count > 0 ? { resources: { limits: { [settings.gpuResource]: String(spec.gpu_count) } } } : {}),
    ...(persistent ? { volumeMounts: [{ name: "storage", mountPath: spec.persistent_mount_path }] } : {}),
    // Kubernetes restarts crashed containers anyway; auto-healing also replaces hung ones.
    ...(spec.auto_healing
      ? { livenessProbe: { tcpSocket: { port: spec.service_port }, periodSeconds: 10, failureThreshold: 3 } }
      : {})
  }
  const template = {
    metadata: {
      labels: { ...labels, [Names.COMPONENT]: "workload" },
      annotations: { [LOGICAL_SWITCH]: Names.subnet(spec.subnet_id) }
    },
    spec: {
      containers: [container],
      ...(spec.registry_credentials.length > 0
        ? { imagePullSecrets: spec.registry_credentials.map((n) => ({ name: Names.registrySecret(n) })) }
        : {}),
      ...(persistent ? { volumes: [{ name: "storage", persistentVolumeClaim: { claimName: name } }] } : {}),
      ...(dns.nameservers.length > 0
        ? {
          dnsPolicy: "None",
          dnsConfig: {
            nameservers: dns.nameservers,
            searches: [`${namespace}.svc.cluster.local`, "svc.cluster.local", "cluster.local"],
            ...(dns.ndots === null ? {} : { options: [{ name: "ndots", value: String(dns.ndots) }] })
          }
        }
        : dns.ndots === null
        ? {}
        : { dnsConfig: { options: [{ name: "ndots", value: String(dns.ndots) }] } })
    }
  }
  const external = spec.external_access || spec.external_inbound !== null
  const eip = Names.podEip(spec.pod_id)
  const vpcName = Names.vpc(spec.vpc_id)
  return [
    // No `data` at all for no variables: an empty map is stored as none, so applying `{}` again
    // would look like a change to server-side apply and rewrite the Secret whenever its
    // managed-fields time (to the second) moved.
    object(Kinds.Secret, meta("env"), {
      type: "Opaque",
      ...(Object.keys(spec.env).length === 0
        ? {}
        : { data: Object.fromEntries(Object.entries(spec.env).map(([k, v]) => [k, base64(v)])) })
    }),
    ...(persistent
      ? [object(Kinds.PersistentVolumeClaim, meta("storage"), {
        spec: {
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: settings.storageSize } },
          ...(settings.storageClassName === null ? {} : { storageClassName: settings.storageClassName })
        }
      })]
      : []),
    object(Kinds.Service, meta("vip"), {
      spec: {
        type: "ClusterIP",
        // Asked for once known (the one it has, or the pod's): a Service made again keeps the pod's VIP.
        ...(addresses.vip === null ? {} : { clusterIP: addresses.vip }),
        selector,
        ports: [
          { name: "service-tcp", port: spec.service_port, targetPort: spec.service_port, protocol: "TCP" },
          { name: "service-udp", port: spec.service_port, targetPort: spec.service_port, protocol: "UDP" }
        ]
      }
    }),
    object(Kinds.Deployment, meta("workload"), {
      spec: {
        // With autoscaling the HPA owns the replica count; applying one would fight it.
        ...(spec.autoscaling === null ? { replicas: spec.replicas } : {}),
        selector: { matchLabels: selector },
        // A ReadWriteOnce volume cannot be mounted by the old and the new replica at once.
        strategy: persistent ? { type: "Recreate" } : { type: "RollingUpdate" },
        template
      }
    }),
    ...(spec.autoscaling === null ? [] : [object(horizontalPodAutoscaler(autoscaling), meta("autoscaler"), {
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
        minReplicas: spec.autoscaling.min_replicas,
        maxReplicas: spec.autoscaling.max_replicas,
        metrics: [{
          type: "Resource",
          resource: {
            name: "cpu",
            target: { type: "AverageValue", averageValue: `${spec.autoscaling.cpu_target_millicores}m` }
          }
        }]
      }
    })]),
    ...(external
      ? [object(Kinds.OvnEip, { name: eip, labels: { ...labels, [Names.COMPONENT]: "external-ip" } }, {
        spec: { externalSubnet: settings.externalSubnet, type: "nat" }
      })]
      : []),
    // Inbound: the external IP's service port, both protocols, forwarded to the pod's VIP.
    ...(spec.external_inbound !== null && addresses.vip !== null
      ? (["tcp", "udp"] as const).map((protocol) =>
        object(Kinds.OvnDnatRule, {
          name: Names.podDnat(spec.pod_id, protocol),
          labels: { ...labels, [Names.COMPONENT]: "inbound" }
        }, {
          spec: {
            ovnEip: eip,
            vpc: vpcName,
            v4Ip: addresses.vip,
            protocol,
            internalPort: String(spec.service_port),
            externalPort: String(spec.service_port)
          }
        })
      )
      : []),
    // Outbound: each replica's address leaves through the pod's external IP.
    ...(spec.external_access
      ? addresses.replicas.map((address) =>
        object(Kinds.OvnSnatRule, {
          name: Names.podSnat(spec.pod_id, address),
          labels: { ...labels, [Names.COMPONENT]: "outbound" }
        }, {
          spec: { ovnEip: eip, vpc: vpcName, v4IpCidr: `${address}/32` }
        })
      )
      : [])
  ]
}

/** A tenant's registry credential as a pull secret, in one of the tenant's namespaces. */
export const registrySecret = (
  spec: Orchestrator.RegistrySecretSpec,
  namespace: string,
  vpcId: Ids.VpcId
): Manifest =>
  object(Kinds.Secret, {
    name: Names.registrySecret(spec.name),
    namespace,
    labels: { ...Names.labels({ tenant_id: spec.tenant_id, vpc_id: vpcId }), [Names.REGISTRY]: spec.name }
  }, {
    type: "kubernetes.io/dockerconfigjson",
    data: {
      ".dockerconfigjson": base64(JSON.stringify({
        auths: {
          [spec.server]: {
            username: spec.username,
            password: spec.password,
            auth: base64(`${spec.username}:${spec.password}`)
          }
        }
      }))
    }
  })

/** The name of a tunnel's connector Deployment and token Secret in its namespace. */
export const CONNECTOR = "tunnel-connector"

/**
 * The tunnel's connector: its token in a Secret and `cloudflared` replicas on the peering
 * subnet, which dial out to the provider and carry the tunnel's traffic to the VIPs.
 */
export const connector = (
  namespace: string,
  labels: Readonly<Record<string, string>>,
  token: string,
  settings: Settings
): ReadonlyArray<Manifest> => {
  const meta = (component: string): Metadata => ({
    name: CONNECTOR,
    namespace,
    labels: { ...labels, [Names.COMPONENT]: component }
  })
  const selector = { [Names.COMPONENT]: "tunnel-connector" }
  return [
    object(Kinds.Secret, meta("tunnel-token"), { type: "Opaque", data: { TUNNEL_TOKEN: base64(token) } }),
    object(Kinds.Deployment, meta("tunnel-connector"), {
      spec: {
        replicas: settings.connectorReplicas,
        selector: { matchLabels: selector },
        template: {
          metadata: { labels: { ...labels, ...selector }, annotations: { [LOGICAL_SWITCH]: settings.peeringSubnet } },
          spec: {
            containers: [{
              name: "cloudflared",
              image: settings.connectorImage,
              args: ["tunnel", "--no-autoupdate", "--metrics", "0.0.0.0:2000", "run"],
              env: [{ name: "TUNNEL_TOKEN", valueFrom: { secretKeyRef: { name: CONNECTOR, key: "TUNNEL_TOKEN" } } }],
              readinessProbe: { httpGet: { path: "/ready", port: 2000 }, periodSeconds: 10 }
            }]
          }
        }
      }
    })
  ]
}

/** A UDP route: an external IP of its own, forwarding the port to the pod's VIP. */
export const udpRoute = (
  route: { readonly key: string; readonly tenant_id: Ids.TenantId; readonly vpc_id: Ids.VpcId },
  target: { readonly vip: string; readonly port: number },
  settings: Settings
): ReadonlyArray<Manifest> => {
  const labels = { ...Names.labels(route), [Names.ROUTE]: route.key, [Names.COMPONENT]: "udp-route" }
  const name = Names.udpRoute(route.key)
  return [
    object(Kinds.OvnEip, { name, labels }, { spec: { externalSubnet: settings.externalSubnet, type: "nat" } }),
    object(Kinds.OvnDnatRule, { name, labels }, {
      spec: {
        ovnEip: name,
        vpc: Names.vpc(route.vpc_id),
        v4Ip: target.vip,
        protocol: "udp",
        internalPort: String(target.port),
        externalPort: String(target.port)
      }
    })
  ]
}
