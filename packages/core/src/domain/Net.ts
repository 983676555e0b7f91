/**
 * IPv4 addresses, CIDR blocks, DNS labels and domain names: parsing, validation and the
 * schemas that carry them on the wire. Everything here is pure.
 *
 * IPv6 is rejected everywhere on purpose: the spec's networks are IPv4-only.
 */
import { Either, Option, Schema } from "effect"

// ---------------------------------------------------------------------------
// IPv4 addresses
// ---------------------------------------------------------------------------

const OCTET = /^(0|[1-9][0-9]{0,2})$/

/**
 * Parses dotted-quad IPv4 text into an unsigned 32-bit number. Leading zeros are refused
 * ("010.0.0.1" is octal to some parsers and decimal to others), as Go's net.ParseIP does.
 */
export const parseIpv4 = (text: string): Option.Option<number> => {
  const parts = text.split(".")
  if (parts.length !== 4) return Option.none()
  let value = 0
  for (const part of parts) {
    if (!OCTET.test(part)) return Option.none()
    const octet = Number(part)
    if (octet > 255) return Option.none()
    value = value * 256 + octet
  }
  return Option.some(value)
}

/** Formats an unsigned 32-bit number as dotted-quad text. */
export const formatIpv4 = (value: number): string =>
  [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".")

// ---------------------------------------------------------------------------
// CIDR blocks
// ---------------------------------------------------------------------------

/** A parsed IPv4 CIDR block; `address` may still carry host bits until normalized. */
export interface Cidr {
  readonly address: number
  readonly prefix: number
}

const PREFIX = /^(0|[1-9][0-9]?)$/

export const parseCidr = (text: string): Option.Option<Cidr> => {
  const slash = text.indexOf("/")
  if (slash < 0) return Option.none()
  const prefixText = text.slice(slash + 1)
  if (!PREFIX.test(prefixText)) return Option.none()
  const prefix = Number(prefixText)
  if (prefix > 32) return Option.none()
  return Option.map(parseIpv4(text.slice(0, slash)), (address) => ({ address, prefix }))
}

/** The network mask of a prefix length, as an unsigned 32-bit number. */
export const maskOf = (prefix: number): number => prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0

/** The first address of the block (host bits cleared). */
export const networkOf = (cidr: Cidr): number => (cidr.address & maskOf(cidr.prefix)) >>> 0

/** The last address of the block. */
export const broadcastOf = (cidr: Cidr): number => (networkOf(cidr) | (~maskOf(cidr.prefix) >>> 0)) >>> 0

export const hasHostBits = (cidr: Cidr): boolean => networkOf(cidr) !== cidr.address

export const normalizeCidr = (cidr: Cidr): Cidr => ({ address: networkOf(cidr), prefix: cidr.prefix })

export const formatCidr = (cidr: Cidr): string => `${formatIpv4(cidr.address)}/${cidr.prefix}`

export const contains = (cidr: Cidr, address: number): boolean =>
  ((address & maskOf(cidr.prefix)) >>> 0) === networkOf(cidr)

/** Two blocks overlap exactly when one contains the other's network address. */
export const overlaps = (a: Cidr, b: Cidr): boolean => contains(a, networkOf(b)) || contains(b, networkOf(a))

/** Number of addresses in the block. */
export const sizeOf = (cidr: Cidr): number => 2 ** (32 - cidr.prefix)

/** The fewest blocks that together hold exactly the addresses `first` to `last`, in order. */
export const cidrsOfRange = (first: number, last: number): Array<Cidr> => {
  const blocks: Array<Cidr> = []
  let at = first
  while (at <= last) {
    // The largest block that starts at `at` (aligned) and ends by `last`.
    let prefix = 32
    while (prefix > 0) {
      const size = 2 ** (32 - prefix + 1)
      if (at % size !== 0 || at + size - 1 > last) break
      prefix--
    }
    blocks.push({ address: at, prefix })
    at += 2 ** (32 - prefix)
  }
  return blocks
}

/** The smallest block holding every address of `[first, last]`. */
export const enclosingCidr = (first: number, last: number): Cidr => {
  let prefix = 32
  while (prefix > 0 && (first & maskOf(prefix)) >>> 0 !== (last & maskOf(prefix)) >>> 0) prefix--
  return { address: (first & maskOf(prefix)) >>> 0, prefix }
}

/**
 * A set of addresses (disjoint, ordered ranges) as people read it: its blocks
 * (`10.0.1.0/24, 10.0.3.0/24`), or, when that is shorter, the smallest block holding it minus
 * its exceptions (`0.0.0.0/0 except 10.0.0.0/16, 100.64.0.0/16`) rather than dozens of blocks.
 */
export const describeRanges = (ranges: ReadonlyArray<readonly [number, number]>): string => {
  if (ranges.length === 0) return "no address"
  const blocks = ranges.flatMap(([first, last]) => cidrsOfRange(first, last))
  const hull = enclosingCidr(ranges[0]![0], ranges[ranges.length - 1]![1])
  const exceptions: Array<Cidr> = []
  let at = networkOf(hull)
  for (const [first, last] of ranges) {
    if (first > at) exceptions.push(...cidrsOfRange(at, first - 1))
    at = last + 1
  }
  if (at <= broadcastOf(hull)) exceptions.push(...cidrsOfRange(at, broadcastOf(hull)))
  return exceptions.length > 0 && exceptions.length + 1 < blocks.length
    ? `${formatCidr(hull)} except ${exceptions.map(formatCidr).join(", ")}`
    : blocks.map(formatCidr).join(", ")
}

// ---------------------------------------------------------------------------
// DNS
// ---------------------------------------------------------------------------

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

/** RFC 1123 label: 1-63 characters of lower-case letters, digits and inner hyphens. */
export const isDnsLabel = (text: string): boolean => DNS_LABEL.test(text)

const DOMAIN_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i

/**
 * A fully-qualified domain name without the trailing dot: at least two RFC 1123 labels,
 * at most 253 characters, and a top-level label that is not all digits (so an IPv4
 * address is never mistaken for a domain).
 */
export const isDomainName = (text: string): boolean => {
  if (text.length > 253) return false
  const labels = text.split(".")
  if (labels.length < 2) return false
  if (!labels.every((label) => DOMAIN_LABEL.test(label))) return false
  return !/^[0-9]+$/.test(labels[labels.length - 1]!)
}

// ---------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------

export const DnsLabel = Schema.String.pipe(
  Schema.filter((s) =>
    isDnsLabel(s) ||
    "must be a DNS label: 1-63 lower-case letters, digits or '-', starting and ending with a letter or digit"
  ),
  Schema.brand("DnsLabel"),
  Schema.annotations({
    identifier: "DnsLabel",
    description: "RFC 1123 DNS label (1-63 characters: a-z, 0-9, '-'; alphanumeric at both ends)",
    examples: ["web" as never],
    arbitrary: () => (fc) => fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/).map((s) => s as never)
  })
)
export type DnsLabel = typeof DnsLabel.Type

/** A domain name; upper case is accepted and folded to lower case, as DNS is case-insensitive. */
export const DomainName = Schema.transform(
  Schema.String,
  Schema.String.pipe(
    Schema.filter((s) =>
      isDomainName(s) ||
      "must be a domain name: two or more DNS labels separated by '.', at most 253 characters"
    )
  ),
  { strict: true, decode: (s) => s.toLowerCase(), encode: (s) => s }
).pipe(Schema.brand("DomainName")).annotations({
  identifier: "DomainName",
  description: "Fully-qualified domain name without the trailing dot",
  examples: ["apps.example.com" as never],
  arbitrary: () => (fc) => fc.domain().filter(isDomainName).map((s) => s as never)
})
export type DomainName = typeof DomainName.Type

export const Ipv4Address = Schema.String.pipe(
  Schema.filter((s) =>
    Option.isSome(parseIpv4(s)) || "must be an IPv4 address in dotted-quad form (IPv6 is not supported)"
  ),
  Schema.brand("Ipv4Address"),
  Schema.annotations({
    identifier: "Ipv4Address",
    description: "IPv4 address in dotted-quad form",
    examples: ["10.0.1.1" as never],
    arbitrary: () => (fc) => fc.ipV4().map((s) => s as never)
  })
)
export type Ipv4Address = typeof Ipv4Address.Type

/** Any syntactically valid IPv4 CIDR block; host bits may be set. */
export const Ipv4CidrText = Schema.String.pipe(
  Schema.filter((s) =>
    Option.isSome(parseCidr(s)) || "must be an IPv4 CIDR block such as 10.0.0.0/16 (IPv6 is not supported)"
  )
)

/** An IPv4 CIDR block whose host bits are clear, e.g. `10.0.0.0/16` (not `10.0.0.1/16`). */
export const Ipv4Network = Ipv4CidrText.pipe(
  Schema.filter((s) => {
    const cidr = Option.getOrThrow(parseCidr(s))
    return !hasHostBits(cidr) ||
      `has host bits set: the network address is ${formatCidr(normalizeCidr(cidr))}`
  }),
  Schema.brand("Ipv4Network"),
  Schema.annotations({
    identifier: "Ipv4Network",
    description: "IPv4 CIDR block with host bits clear",
    examples: ["10.0.0.0/16" as never],
    arbitrary: () => (fc) =>
      fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 })).map(([address, prefix]) =>
        formatCidr(normalizeCidr({ address, prefix })) as never
      )
  })
)
export type Ipv4Network = typeof Ipv4Network.Type

/**
 * An IPv4 CIDR block whose host bits are cleared while decoding (`10.0.0.7/24` becomes
 * `10.0.0.0/24`), as cloud firewalls do for remote ranges.
 */
export const Ipv4NetworkNormalized = Schema.transform(
  Ipv4CidrText,
  Schema.typeSchema(Ipv4Network),
  {
    strict: true,
    decode: (s) => Ipv4Network.make(formatCidr(normalizeCidr(Option.getOrThrow(parseCidr(s))))),
    encode: (s) => s
  }
).annotations({
  identifier: "Ipv4NetworkNormalized",
  description: "IPv4 CIDR block; host bits are cleared (10.0.0.7/24 is stored as 10.0.0.0/24)",
  examples: ["0.0.0.0/0" as never]
})

/** Parses a value already known to be a valid CIDR (one that passed a schema above). */
export const cidrOf = (text: string): Cidr => Option.getOrThrow(parseCidr(text))

/** Parses a value already known to be a valid IPv4 address. */
export const ipv4Of = (text: string): number => Option.getOrThrow(parseIpv4(text))

/**
 * Checks that `gateway` is a usable host address of `network`: inside the block and neither
 * its network nor its broadcast address.
 */
export const checkGateway = (network: string, gateway: string): Either.Either<void, string> => {
  const cidr = cidrOf(network)
  const address = ipv4Of(gateway)
  if (!contains(cidr, address)) {
    return Either.left(`gateway ${gateway} is not inside ${network}`)
  }
  if (address === networkOf(cidr)) {
    return Either.left(`gateway ${gateway} is the network address of ${network}`)
  }
  if (address === broadcastOf(cidr)) {
    return Either.left(`gateway ${gateway} is the broadcast address of ${network}`)
  }
  return Either.void
}
