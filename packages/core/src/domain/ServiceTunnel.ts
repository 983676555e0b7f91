/**
 * Platform service tunnels: the administrator exposes the API (or a GUI the operator runs)
 * at a public hostname through the tunnel provider. The spec leaves the shape open; this is
 * Tenet's.
 */
import { Option, Schema } from "effect"
import { nullable, Timestamp, wireExample } from "./Common.js"
import { ServiceTunnelId } from "./Ids.js"
import { DnsLabel, DomainName, parseIpv4 } from "./Net.js"

/** Where the tunnel's connector sends traffic: an http(s) origin. */
export const ServiceUrl = Schema.String.pipe(
  Schema.filter((s) => {
    try {
      const url = new URL(s)
      return (url.protocol === "http:" || url.protocol === "https:") && url.username === "" &&
          url.password === "" || "must be an http:// or https:// URL without credentials"
    } catch {
      return "must be an http:// or https:// URL"
    }
  }),
  Schema.maxLength(2048),
  Schema.brand("ServiceUrl"),
  Schema.annotations({
    identifier: "ServiceUrl",
    examples: ["http://tenet-api.tenet-system:8080" as never],
    arbitrary: () => (fc) =>
      fc.tuple(fc.constantFrom("http", "https"), fc.domain(), fc.integer({ min: 1, max: 65535 }))
        .map(([scheme, host, port]) => `${scheme}://${host}:${port}` as never)
  })
)
export type ServiceUrl = typeof ServiceUrl.Type

/** Names that resolve to the instance's own metadata service on the clouds that run one, or to this host. */
const PRIVATE_NAMES = new Set(["localhost", "metadata", "metadata.google.internal", "metadata.goog", "instance-data"])

/** Why an IPv4 address is one no tunnel may publish: this host, link-local (cloud metadata), or none. */
const privateIpv4 = (address: number): string | undefined => {
  const first = address >>> 24
  if (first === 127) return "a loopback address"
  if (first === 0) return "the unspecified network"
  if (address >>> 16 === ((169 << 8) | 254)) return "a link-local address (where clouds serve instance metadata)"
  // Alibaba Cloud's metadata service.
  if (address === (((100 << 24) | (100 << 16) | (100 << 8) | 200) >>> 0)) return "a cloud metadata address"
  return undefined
}

/** An IPv6 address (as URL writes it, without brackets) as its eight groups. */
const ipv6Groups = (text: string): Array<number> | undefined => {
  const [head = "", tail, ...more] = text.split("::")
  if (more.length > 0) return undefined
  const parse = (part: string) => part === "" ? [] : part.split(":").map((g) => parseInt(g, 16))
  const front = parse(head)
  const back = tail === undefined ? [] : parse(tail)
  const groups = [...front, ...Array(8 - front.length - back.length).fill(0), ...back]
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined
}

const privateIpv6 = (text: string): string | undefined => {
  const g = ipv6Groups(text)
  if (g === undefined) return undefined
  if (g.slice(0, 7).every((x) => x === 0) && g[7]! <= 1) return "a loopback or unspecified address"
  // An IPv4 address inside an IPv6 one, which a host or a NAT64 gateway may deliver to it: the
  // IPv4-compatible form (::a.b.c.d), the IPv4-mapped one (::ffff:a.b.c.d), the well-known NAT64
  // prefix (64:ff9b::/96) and 6to4 (2002:AABB:CCDD::/48).
  const embedded = (high: number, low: number) => privateIpv4(((high << 16) | low) >>> 0)
  if (g.slice(0, 6).every((x) => x === 0)) return embedded(g[6]!, g[7]!)
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return embedded(g[6]!, g[7]!)
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return embedded(g[6]!, g[7]!)
  if (g[0] === 0x2002) return embedded(g[1]!, g[2]!)
  if ((g[0]! & 0xffc0) === 0xfe80) return "a link-local address (where clouds serve instance metadata)"
  // AWS's IPv6 metadata service, fd00:ec2::254.
  if (g[0] === 0xfd00 && g[1] === 0xec2 && g.slice(2, 7).every((x) => x === 0) && g[7] === 0x254) {
    return "a cloud metadata address"
  }
  return undefined
}

/**
 * Why a URL's host is one a tunnel must not publish at a public hostname: this host's loopback,
 * link-local addresses (where AWS, GCP, Azure and OpenStack serve instance metadata and
 * credentials), other cloud metadata addresses and names, the unspecified address, also inside
 * an IPv6 address. URL has already written every IPv4 spelling (`2852039166`,
 * `0xa9.254.169.254`) as a dotted quad. Private networks (10/8, 172.16/12, 192.168/16, fc00::/7)
 * are allowed: publishing an internal service is what a service tunnel is for.
 */
export const privateTarget = (url: string): string | undefined => {
  const host = new URL(url).hostname.toLowerCase().replace(/\.$/, "")
  if (host.startsWith("[")) return privateIpv6(host.slice(1, -1))
  const ipv4 = parseIpv4(host)
  if (Option.isSome(ipv4)) return privateIpv4(ipv4.value)
  if (PRIVATE_NAMES.has(host) || host.endsWith(".localhost")) return "a name of this host or of a metadata service"
  return undefined
}

/**
 * A target an administrator may name: a `ServiceUrl` whose host is not `privateTarget`. (The
 * default target, the server's own `TENET_PUBLIC_URL`, is the operator's to set.)
 */
export const ServiceTarget = ServiceUrl.pipe(
  Schema.filter((url) => {
    const why = privateTarget(url)
    return why === undefined || `must not name ${why}: the provider would publish it at a public hostname`
  })
).annotations({ identifier: "ServiceTarget" })

export const ServiceTunnelStatus = Schema.Literal("active", "error").annotations({
  identifier: "ServiceTunnelStatus",
  description: "active: the provider serves the hostname; error: the provider refused or failed (see `error`)"
})
export type ServiceTunnelStatus = typeof ServiceTunnelStatus.Type

export const ServiceTunnelCreate = Schema.Struct({
  /** A name for this platform service, e.g. `api` or `console`; unique. */
  service: DnsLabel,
  subdomain: DnsLabel,
  /** Defaults to the provider configuration's `edge_domain`. */
  domain: nullable(DomainName),
  /**
   * Defaults to this server's own URL (`TENET_PUBLIC_URL`), i.e. the API itself; never a
   * loopback, link-local or cloud metadata address.
   */
  target_url: nullable(ServiceTarget)
}).annotations({
  identifier: "ServiceTunnelCreate",
  examples: wireExample({ service: "api", subdomain: "api", domain: null, target_url: null })
})
export type ServiceTunnelCreate = typeof ServiceTunnelCreate.Type

/** What the store keeps of a service tunnel. */
export const ServiceTunnelRecord = Schema.Struct({
  id: ServiceTunnelId,
  service: DnsLabel,
  hostname: DomainName,
  target_url: ServiceUrl,
  status: ServiceTunnelStatus,
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp
})
export interface ServiceTunnelRecord extends Schema.Schema.Type<typeof ServiceTunnelRecord> {}

/** The record with the URL it serves at. */
export class ServiceTunnel extends Schema.Class<ServiceTunnel>("ServiceTunnel")({
  ...ServiceTunnelRecord.fields,
  url: Schema.String
}) {}

export const toServiceTunnel = (record: ServiceTunnelRecord): ServiceTunnel =>
  ServiceTunnel.make({ ...record, url: `https://${record.hostname}` })
